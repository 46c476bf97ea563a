"""A campaign snapshot's numbers (``CampaignSnapshot.data``, the shape in
docs/admin-guide.md, "Campaign dashboard", and in the dashboard contract) from the
columns of one dataset. Pure numpy, no Django.

Kinds are written lowercase (``sts``, ``sis``, ``sits``: cxc.FILE_PREFIX), times as ISO
8601 UTC strings, a statistic that does not exist (no shared pairs, no variation) as None.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np

from annotation.core.cxc import FILE_PREFIX, KINDS
from annotation.dashboard import pace
from annotation.dashboard.tables import ALL, CompleteAgreement, PairTable, RatingTable, complete_agreement, pair_rows
from annotation.quality import group_stats as stats
from annotation.quality.aggregation import dense_unique, group_medians

LARGEST_DIFFERENCES = 10


@dataclass(frozen=True)
class CampaignInputs:
    """What a snapshot is computed from. ``held_pairs`` / ``flagged_pairs: int64``: ids of
    pairs with a lease held now / an unresolved flag; ``leases_held``: leases held now;
    ``batch_names``: batch id -> label; ``usernames``, ``skips``, ``flags`` and
    ``last_passed`` (epoch s of the latest skip or flag) per rater id; ``speed_floors``:
    seconds per kind (cxc.KINDS); ``now_s``: epoch seconds the snapshot is taken at."""

    pairs: PairTable
    ratings: RatingTable
    held_pairs: np.ndarray
    flagged_pairs: np.ndarray
    leases_held: int
    batch_names: dict[int, str]
    usernames: dict[int, str]
    skips: dict[int, int]
    flags: dict[int, int]
    last_passed: dict[int, float]
    speed_floors: dict[str, float]
    now_s: float
    # Quality control: queue gold ratings as (rater id, score - reference);
    # per rater the count of excluded and superseded ratings, and the active pause.
    gold_rater: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    gold_difference: np.ndarray = field(default_factory=lambda: np.empty(0))
    invalid: dict[int, dict[str, int]] = field(default_factory=dict)
    paused: dict[int, dict] = field(default_factory=dict)
    # Gold pairs each rater passed on (skipped or flagged unrated), also within ``skips``
    # and ``flags``: a rater who passes on gold far more than on other pairs dodges it.
    gold_passed: dict[int, int] = field(default_factory=dict)
    # The latest rater-effects fits: rater id -> kind (cxc.KINDS) -> {"ratings", "bias",
    # "bias_low", "bias_high", "noise_sd", "noise_low", "noise_high"}.
    rater_model: dict[int, dict[str, dict]] = field(default_factory=dict)
    # Adaptive N: the closed pairs of adaptive batches and their valid ratings, against
    # what fixed N (ADAPTIVE_FIXED_N, CxC's five) would have taken.
    adaptive_closed_pairs: int = 0
    adaptive_closed_ratings: int = 0
    # Crowd participants: the largest quota of their campaign links in the dataset (the
    # speed-floor flag of a short quota judges the whole quota).
    quotas: dict[int, int] = field(default_factory=dict)


def number(value: float) -> float | None:
    """A float for JSON: None for NaN or infinity (a statistic that does not exist)."""
    value = float(value)
    return value if math.isfinite(value) else None


def iso(epoch_s: float | None) -> str | None:
    if epoch_s is None or not math.isfinite(epoch_s):
        return None
    return datetime.fromtimestamp(epoch_s, tz=UTC).isoformat()


def day_text(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, tz=UTC).date().isoformat()


def campaign_numbers(inputs: CampaignInputs) -> dict:
    """The snapshot's ``data`` dict."""
    rows = pair_rows(inputs.pairs, inputs.ratings)
    agreement = complete_agreement(inputs.pairs, inputs.ratings, rows)
    known = np.array(sorted({*inputs.usernames, *inputs.gold_rater.tolist()}), dtype=np.int64)
    raters = np.union1d(dense_unique(inputs.ratings.rater)[0], known)
    return {
        "speed_floors": {FILE_PREFIX[kind]: float(inputs.speed_floors[kind]) for kind in KINDS},
        "progress": progress(inputs, rows),
        "raters": rater_rows(inputs, rows, agreement, raters),
        "quality": quality(inputs, agreement),
        "rater_details": rater_details(inputs, agreement, raters),
    }


# --- progress ---------------------------------------------------------------------------


def _progress_counts(pairs: PairTable, held: np.ndarray, flagged: np.ndarray, chosen: np.ndarray) -> dict:
    active = chosen & ~pairs.retired
    complete = active & (pairs.done >= pairs.required)
    return {
        "pairs_queued": int(active.sum()),
        "pairs_complete": int(complete.sum()),
        "pairs_in_progress": int((active & ~complete & ((pairs.done > 0) | held)).sum()),
        "pairs_flagged": int((chosen & flagged).sum()),
        "ratings_done": int(pairs.done[active].sum()),
        "ratings_required": int(pairs.required[active].sum()),
    }


def progress(inputs: CampaignInputs, rows: np.ndarray) -> dict:
    """Pairs per kind and per (batch, kind), ratings over time, the recent pace and the
    finish estimate (:mod:`annotation.dashboard.pace`)."""
    pairs, at, now = inputs.pairs, inputs.ratings.at, inputs.now_s
    held = np.isin(pairs.id, inputs.held_pairs)
    flagged = np.isin(pairs.id, inputs.flagged_pairs)
    by_kind = [
        {"kind": FILE_PREFIX[kind], **_progress_counts(pairs, held, flagged, pairs.kind == code)}
        for code, kind in enumerate(KINDS)
    ]
    by_batch = []
    combos = np.unique(np.stack([pairs.batch, pairs.kind], axis=1), axis=0).tolist()
    for batch_id, code in combos:
        chosen = (pairs.batch == batch_id) & (pairs.kind == code)
        counts = _progress_counts(pairs, held, flagged, chosen)
        by_batch.append(
            {
                "batch_id": batch_id,
                "batch_name": inputs.batch_names.get(batch_id, f"batch #{batch_id}"),
                "kind": FILE_PREFIX[KINDS[code]],
                **counts,
            }
        )
    today = stats.day_start(now)
    per_day = []
    if at.size:
        first = stats.day_start(float(at.min()))
        counts = stats.daily_counts(at, first, max(today, first))
        per_day = [{"date": day_text(first + i * stats.DAY_S), "ratings": int(n)} for i, n in enumerate(counts)]
    active = ~pairs.retired
    remaining = int(np.maximum(pairs.required[active] - pairs.done[active], 0).sum())
    recent_pace = pace.pace_and_finish(at, now_s=now, remaining=remaining)
    recent = inputs.ratings.rater[(at > now - stats.HOUR_S) & (at <= now)]
    return {
        "by_kind": by_kind,
        "by_batch": by_batch,
        "ratings_per_day": per_day,
        "ratings_per_hour_today": [
            {"hour": hour, "ratings": int(n)} for hour, n in enumerate(stats.hourly_counts(at, today))
        ],
        "ratings_last_24h": int(np.count_nonzero((at > now - stats.DAY_S) & (at <= now))),
        "ratings_remaining": remaining,
        "pace": {
            "state": recent_pace.state,
            "window": recent_pace.window,
            "window_seconds": recent_pace.window_s,
            "ratings": recent_pace.ratings,
            "per_hour": recent_pace.per_hour,
        },
        "finish_estimate": iso(recent_pace.finish_s),
        "raters_active_last_hour": int(np.unique(recent).shape[0]),
        "leases_held": int(inputs.leases_held),
        "adaptive": adaptive_savings(inputs),
    }


ADAPTIVE_FIXED_N = 5


def adaptive_savings(inputs: CampaignInputs) -> dict | None:
    """Ratings adaptive N saved so far on closed pairs against fixed N (None: no adaptive
    pair closed yet); negative when noisy raters made pairs ask for more."""
    pairs, ratings = inputs.adaptive_closed_pairs, inputs.adaptive_closed_ratings
    if not pairs:
        return None
    fixed = ADAPTIVE_FIXED_N * pairs
    return {
        "pairs_closed": pairs,
        "ratings": ratings,
        "fixed_n": ADAPTIVE_FIXED_N,
        "fixed_ratings": fixed,
        "saved": fixed - ratings,
        "saved_share": (fixed - ratings) / fixed,
    }


# --- raters -----------------------------------------------------------------------------


def rater_rows(inputs: CampaignInputs, rows: np.ndarray, agreement: CompleteAgreement, raters: np.ndarray) -> list:
    """One row per rater (``raters: int64 (R,)`` sorted user ids), in that order."""
    ratings, n = inputs.ratings, raters.shape[0]
    who = np.searchsorted(raters, ratings.rater)
    kind = inputs.pairs.kind[rows]
    today = ratings.at >= stats.day_start(inputs.now_s)
    total = np.bincount(who * len(KINDS) + kind, minlength=n * len(KINDS)).reshape(n, len(KINDS))
    today_counts = np.bincount(who[today] * len(KINDS) + kind[today], minlength=n * len(KINDS)).reshape(n, len(KINDS))
    medians = group_medians(who, ratings.time_ms, n) / 1000.0
    floors_ms = np.array([inputs.speed_floors[k] * 1000.0 for k in KINDS])
    fast = stats.group_shares(who, ratings.time_ms < floors_ms[kind], n)
    latest = stats.group_latest(who, ratings.at, n)
    pooled = {summary.rater: summary for summary in agreement.pooled.summaries()}
    per_kind = agreement.export.raters(KINDS)
    by_kind = {kind: {summary.rater: summary for summary in summaries} for kind, summaries in per_kind.items()}
    gold_n, gold_mae, gold_bias = stats.gold_errors(
        np.searchsorted(raters, inputs.gold_rater), inputs.gold_difference, n
    )
    out = []
    for row, rater in enumerate(raters.tolist()):
        summary = pooled.get(rater)
        passed = inputs.last_passed.get(rater)
        last = max((t for t in (latest[row], passed) if t is not None and math.isfinite(t)), default=None)
        out.append(
            {
                "rater_id": rater,
                "username": inputs.usernames.get(rater, ""),
                "ratings_today": {FILE_PREFIX[k]: int(today_counts[row, c]) for c, k in enumerate(KINDS)},
                "ratings_total": {FILE_PREFIX[k]: int(total[row, c]) for c, k in enumerate(KINDS)},
                "ratings_today_all": int(today_counts[row].sum()),
                "ratings_total_all": int(total[row].sum()),
                "median_seconds": number(medians[row]),
                "fast_share": number(fast[row]),
                "loo_correlation": number(summary.loo_correlation) if summary else None,
                "bias": number(summary.mean_bias) if summary else None,
                "shared_pairs": summary.compared if summary else 0,
                "skips": int(inputs.skips.get(rater, 0)),
                "flags": int(inputs.flags.get(rater, 0)),
                "last_active": iso(last),
                "gold_items": int(gold_n[row]),
                "gold_error": number(gold_mae[row]),
                "gold_bias": number(gold_bias[row]),
                "gold_passed": int(inputs.gold_passed.get(rater, 0)),
                "excluded": inputs.invalid.get(rater, {}).get("excluded", 0),
                "superseded": inputs.invalid.get(rater, {}).get("superseded", 0),
                "paused": inputs.paused.get(rater),
                "quota": inputs.quotas.get(rater),
                "model": {FILE_PREFIX[kind]: effects for kind, effects in inputs.rater_model.get(rater, {}).items()},
                "by_kind": {
                    FILE_PREFIX[kind]: {
                        "loo_correlation": number(found[rater].loo_correlation),
                        "bias": number(found[rater].mean_bias),
                        "shared_pairs": found[rater].compared,
                    }
                    for kind, found in by_kind.items()
                    if rater in found
                },
            }
        )
    return out


# --- quality ----------------------------------------------------------------------------


def quality(inputs: CampaignInputs, agreement: CompleteAgreement) -> dict:
    """Alpha per kind and batch, histograms of pair means and SDs, positives per method."""
    pairs = inputs.pairs
    alpha_kind = agreement.export.by_task(KINDS)
    kind_of = pairs.kind[agreement.pair_row]
    method_of = pairs.method[agreement.pair_row]
    mean_histograms, positive_share = [], []
    for code, kind in enumerate(KINDS):
        tallies = agreement.counts.by_method(split=ALL, task=kind)
        for method_code, method in enumerate(pairs.methods):
            chosen = (kind_of == code) & (method_of == method_code)
            if not chosen.any():
                continue
            counts = stats.histogram(agreement.mean[chosen], stats.SCORE_EDGES)
            mean_histograms.append(
                {
                    "kind": FILE_PREFIX[kind],
                    "method": method,
                    "bin_edges": stats.SCORE_EDGES.tolist(),
                    "counts": counts.tolist(),
                }
            )
            tally = tallies[method]
            share = tally["positive"] / tally["pairs"] if tally["pairs"] else None
            positive_share.append(
                {
                    "kind": FILE_PREFIX[kind],
                    "method": method,
                    "pairs": tally["pairs"],
                    "positives": tally["positive"],
                    "share": share,
                }
            )
    return {
        "alpha_by_kind": [
            {
                "kind": FILE_PREFIX[kind],
                "alpha": number(alpha_kind[kind]["alpha_interval"]) if kind in alpha_kind else None,
                "pairs": alpha_kind[kind]["units"] if kind in alpha_kind else 0,
            }
            for kind in KINDS
        ],
        "alpha_by_batch": [
            {
                "batch_id": entry["batch_id"],
                "batch_name": inputs.batch_names.get(entry["batch_id"], f"batch #{entry['batch_id']}"),
                "kind": FILE_PREFIX[entry["task"]],
                "alpha": number(entry["alpha_interval"]),
                "pairs": entry["units"],
            }
            for entry in agreement.export.by_batch()
        ],
        "pair_mean_histograms": mean_histograms,
        "pair_sd_histograms": [
            {
                "kind": FILE_PREFIX[kind],
                "bin_edges": stats.SD_EDGES.tolist(),
                "counts": stats.histogram(agreement.std[kind_of == code], stats.SD_EDGES).tolist(),
            }
            for code, kind in enumerate(KINDS)
        ],
        "positive_share": positive_share,
        "reliability_by_kind": [
            {"kind": FILE_PREFIX[kind], **agreement.reliability[kind]}
            for kind in KINDS
            if kind in agreement.reliability
        ],
    }


# --- one rater's page -------------------------------------------------------------------


def rater_details(inputs: CampaignInputs, agreement: CompleteAgreement, raters: np.ndarray) -> dict:
    """Per rater (key: the user id as text): score histogram beside everyone's, median
    time and LOO correlation per day, and the complete pairs where they differ most."""
    ratings, pairs, n = inputs.ratings, inputs.pairs, raters.shape[0]
    who = np.searchsorted(raters, ratings.rater)
    histograms = stats.group_histograms(who, ratings.score, n, stats.SCORE_EDGES)
    everyone = stats.histogram(ratings.score, stats.SCORE_EDGES).tolist()
    first = stats.day_start(float(ratings.at.min())) if ratings.at.size else 0.0
    day = np.floor((ratings.at - first) / stats.DAY_S).astype(np.int64)
    days = int(day.max()) + 1 if day.size else 1
    key = who * days + day
    seconds = (group_medians(key, ratings.time_ms, n * days) / 1000.0).reshape(n, days)
    count = np.bincount(key, minlength=n * days).reshape(n, days)
    del key
    own = who[agreement.rating]
    loo = stats.group_agreement(
        own * days + day[agreement.rating], ratings.score[agreement.rating], agreement.others, n * days
    )
    loo_r, loo_n = loo.correlation.reshape(n, days), loo.compared.reshape(n, days)
    difference = ratings.score[agreement.rating] - agreement.others
    largest = stats.largest_differences(own, difference, n, LARGEST_DIFFERENCES)
    out = {}
    for row, rater in enumerate(raters.tolist()):
        dates = [day_text(first + d * stats.DAY_S) for d in range(days)]
        picked = agreement.rating[largest[row]]
        out[str(rater)] = {
            "score_histogram": {
                "bin_edges": stats.SCORE_EDGES.tolist(),
                "counts": histograms[row].tolist(),
                "everyone_counts": everyone,
            },
            "seconds_over_time": [
                {"date": dates[d], "median_seconds": number(seconds[row, d]), "ratings": int(count[row, d])}
                for d in np.flatnonzero(count[row]).tolist()
            ],
            "loo_over_time": [
                {"date": dates[d], "loo_correlation": number(loo_r[row, d]), "pairs": int(loo_n[row, d])}
                for d in np.flatnonzero(loo_n[row]).tolist()
            ],
            "largest_differences": [
                {
                    "pair_id": int(ratings.pair[i]),
                    "kind": FILE_PREFIX[KINDS[int(pairs.kind[np.searchsorted(pairs.id, ratings.pair[i])])]],
                    "score": float(ratings.score[i]),
                    "others_mean": float(agreement.others[j]),
                    "difference": float(difference[j]),
                }
                for i, j in zip(picked.tolist(), largest[row].tolist(), strict=True)
            ],
        }
    return out
