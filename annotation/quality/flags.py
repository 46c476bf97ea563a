"""Which raters to look at: a rater's figures against a dataset's flag thresholds. Pure
Python, no Django: the rater table, the dashboard and the participants CSV all call
:func:`flag_reasons` with the figures the campaign snapshot computed (or, for the CSV,
the same figures of a link's participants).

A figure counts only once it rests on enough: a LOO r needs MIN_SHARED_PAIRS complete
pairs shared with other raters, a share under the speed floor MIN_FAST_RATINGS ratings
(or a crowd participant's whole quota when that is smaller), a gold error MIN_GOLD_ITEMS
gold ratings, and a gold-skip share MIN_GOLD_MET gold pairs met (rated or passed on).
Below that a rater is not flagged on the figure, however bad it looks.

The speed floor is judged on a share from few ratings because one rating under the floor
is already implausible work (CxC's raters took 17-37 s per item; the floors are 1.5-3 s):
a careful rater under the floor now and then on 1 in 5 items stays at or under a 50 %
limit over five ratings with probability 0.94, while a participant of a short study (a
quota of 5 items, say) who clicks through every item must be flagged by the end of it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MIN_SHARED_PAIRS = 10
MIN_RATINGS = 10
MIN_FAST_RATINGS = 5
MIN_GOLD_ITEMS = 5
MIN_GOLD_MET = 5


FAST_MINIMUM_TEXT = f"from {MIN_FAST_RATINGS} ratings, or a participant's whole quota when smaller"


@dataclass(frozen=True)
class FlagThresholds:
    """A dataset's thresholds; None turns that check off. ``loo_below``: flag a LOO r
    strictly below it; the others flag a figure strictly above them."""

    loo_below: float | None = None
    gold_error_above: float | None = None
    fast_share_above: float | None = None
    gold_skip_share_above: float | None = None
    noise_above: float | None = None

    def describe(self) -> list[str]:
        """One line per check, as the pages show them (off checks say so)."""
        checks = (
            ("LOO r", self.loo_below, "below", _fixed, f"from {MIN_SHARED_PAIRS} shared pairs"),
            ("gold error", self.gold_error_above, "above", _fixed, f"from {MIN_GOLD_ITEMS} gold items"),
            ("share under the speed floor", self.fast_share_above, "above", _percent, FAST_MINIMUM_TEXT),
            ("gold-skip share", self.gold_skip_share_above, "above", _percent, f"from {MIN_GOLD_MET} gold pairs met"),
            ("model noise sd", self.noise_above, "above", _fixed, f"from {MIN_RATINGS} ratings of a kind"),
        )
        return [
            f"{name}: off" if value is None else f"{name} {word} {shown(value)} ({minimum})"
            for name, value, word, shown, minimum in checks
        ]


@dataclass(frozen=True)
class RaterFigures:
    """What the checks read. ``loo_correlation`` over ``shared_pairs``; ``fast_share``
    (0-1) over ``ratings``; ``gold_error`` (mean absolute, 0-5 scale) over
    ``gold_items``; ``gold_passed``: gold pairs skipped or flagged unrated; ``quota``:
    the items a crowd participant's link asks of them (None for other raters). A missing
    statistic is None."""

    loo_correlation: float | None = None
    shared_pairs: int = 0
    fast_share: float | None = None
    ratings: int = 0
    gold_error: float | None = None
    gold_items: int = 0
    gold_passed: int = 0
    # The rater-effects model's largest noise sd over the kinds the rater gave at least
    # MIN_RATINGS ratings of (None: no such kind in the latest fit).
    noise_sd: float | None = None
    quota: int | None = None

    @property
    def fast_minimum(self) -> int:
        """Ratings from which the share under the speed floor counts: MIN_FAST_RATINGS,
        or the whole quota of a participant asked for fewer items than that."""
        return min(MIN_FAST_RATINGS, self.quota) if self.quota else MIN_FAST_RATINGS

    @property
    def gold_skip_share(self) -> float | None:
        met = self.gold_items + self.gold_passed
        return self.gold_passed / met if met else None

    @classmethod
    def from_rater_row(cls, row: dict) -> RaterFigures:
        """From a rater row of the campaign snapshot (``data["raters"]``)."""
        return cls(
            loo_correlation=row.get("loo_correlation"),
            shared_pairs=row.get("shared_pairs", 0),
            fast_share=row.get("fast_share"),
            ratings=row.get("ratings_total_all", 0),
            gold_error=row.get("gold_error"),
            gold_items=row.get("gold_items", 0),
            gold_passed=row.get("gold_passed", 0),
            noise_sd=max(
                (kind["noise_sd"] for kind in row.get("model", {}).values() if kind["ratings"] >= MIN_RATINGS),
                default=None,
            ),
            quota=row.get("quota"),
        )


def _known(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def _fixed(value: float | None) -> str:
    return f"{value:.2f}"


def _percent(value: float | None) -> str:
    # Whole percents where exact, else one decimal: 50.4% over a 50% limit must not read "50% > 50%".
    percent = 100 * value
    return f"{percent:.0f}%" if abs(percent - round(percent)) < 0.05 else f"{percent:.1f}%"


def flag_reasons(figures: RaterFigures, thresholds: FlagThresholds) -> list[str]:
    """Why the rater is flagged, one text per check failed (empty: not flagged), in the
    order LOO r, gold error, speed floor, gold skips, model noise, e.g. ``["LOO r 0.05 < 0.30",
    "gold error 1.81 > 1.00"]``."""
    reasons = []
    loo, gold, fast, skips = (
        thresholds.loo_below,
        thresholds.gold_error_above,
        thresholds.fast_share_above,
        thresholds.gold_skip_share_above,
    )
    r = figures.loo_correlation
    if loo is not None and _known(r) and figures.shared_pairs >= MIN_SHARED_PAIRS and r < loo:
        reasons.append(f"LOO r {_fixed(r)} < {_fixed(loo)}")
    error = figures.gold_error
    if gold is not None and _known(error) and figures.gold_items >= MIN_GOLD_ITEMS and error > gold:
        reasons.append(f"gold error {_fixed(error)} > {_fixed(gold)}")
    share = figures.fast_share
    if fast is not None and _known(share) and figures.ratings >= figures.fast_minimum and share > fast:
        reasons.append(f"{_percent(share)} under the speed floor > {_percent(fast)}")
    skipped = figures.gold_skip_share
    met = figures.gold_items + figures.gold_passed
    if skips is not None and skipped is not None and met >= MIN_GOLD_MET and skipped > skips:
        reasons.append(f"{_percent(skipped)} of gold pairs skipped > {_percent(skips)}")
    noise = figures.noise_sd
    if thresholds.noise_above is not None and _known(noise) and noise > thresholds.noise_above:
        reasons.append(f"model noise sd {_fixed(noise)} > {_fixed(thresholds.noise_above)}")
    return reasons


def flagged_first(rows: list[dict], thresholds: FlagThresholds) -> list[dict]:
    """A campaign snapshot's rater rows, each with ``flag_reasons`` (empty: not flagged):
    flagged raters first, then most ratings first, then by username. The rater table
    page and its API list them in this order."""
    raters = [{**row, "flag_reasons": flag_reasons(RaterFigures.from_rater_row(row), thresholds)} for row in rows]
    return sorted(raters, key=lambda r: (not r["flag_reasons"], -r["ratings_total_all"], r["username"]))
