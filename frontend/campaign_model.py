"""The campaign page's view of the rater-effects model and of adaptive N: what each extra
rating buys per task (the reliability curve of the snapshot) and the ratings adaptive N
saved so far. Pure Python over the snapshot's data."""

from __future__ import annotations

# Columns of the reliability table: the mean of this many ratings.
RELIABILITY_COLUMNS = (1, 2, 3, 4, 5, 6, 8, 10)


def reliability_table(curves: list[dict], label) -> dict:
    """The numbers of the reliability chart: per task the measured half-against-half
    correlations and the predicted reliability of the mean of n ratings for each of
    RELIABILITY_COLUMNS (text, two decimals)."""
    rows = []
    for curve in curves:
        predicted = {point["raters"]: point["reliability"] for point in curve["predicted"]}
        measured = "; ".join(
            f"{m['raters']} vs {m['raters']}: {m['correlation']:.2f} ({m['pairs']:,} pairs)" for m in curve["measured"]
        )
        rows.append(
            [
                label(curve["kind"]),
                measured or "too few complete pairs",
                *(f"{predicted[n]:.2f}" if n in predicted else "" for n in RELIABILITY_COLUMNS),
            ]
        )
    return {"headers": ["task", "halves measured", *(f"N = {n}" for n in RELIABILITY_COLUMNS)], "rows": rows}


def savings_text(adaptive: dict | None) -> str | None:
    """One sentence on adaptive N's ratings against fixed N; None without adaptive pairs."""
    if not adaptive:
        return None
    saved, share = adaptive["saved"], adaptive["saved_share"]
    verb = "saved" if saved >= 0 else "spent beyond it"
    return (
        f"{adaptive['pairs_closed']:,} adaptive pairs closed with {adaptive['ratings']:,} ratings; "
        f"N = {adaptive['fixed_n']} for each would have taken {adaptive['fixed_ratings']:,}: "
        f"{abs(saved):,} ratings {verb} ({abs(share):.1%})."
    )
