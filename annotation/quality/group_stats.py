"""Grouped counts, medians, shares and histograms of the campaign dashboard. Pure numpy,
no Django (the pace and finish estimate: :mod:`annotation.dashboard.pace`).

"Groups" are small non-negative ints (a rater's row, or a rater's row times the number
of days plus the day): ``groups: int (m,)`` beside ``values: (m,)``, ``n_groups`` the
number of groups. Times are seconds since the Unix epoch, UTC (``float (m,)``).
Correlations and biases come from :class:`annotation.quality.aggregation.RaterAgreement`, the
export's code, fed with group ids in place of rater ids.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from annotation.quality.aggregation import RaterAgreement, group_order

DAY_S = 86_400.0
HOUR_S = 3_600.0
# Pair means and single scores: 0-5 in bins 0.25 wide, the last one closed (5.0 counts).
SCORE_EDGES = np.linspace(0.0, 5.0, 21)
# Per-pair sample SDs: scores within 0-5 give at most 5 / sqrt(2) (two ratings 0 and 5).
SD_EDGES = np.linspace(0.0, 4.0, 17)


def histogram(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Counts of ``values: float (m,)`` in the bins of ``edges: float (b + 1,)``, the
    last bin closed as numpy's; NaN and values outside the edges are left out. int64 (b,)."""
    values = np.asarray(values, dtype=np.float64)
    return np.histogram(values[~np.isnan(values)], bins=edges)[0].astype(np.int64)


def group_histograms(groups: np.ndarray, values: np.ndarray, n_groups: int, edges: np.ndarray) -> np.ndarray:
    """One histogram per group, as :func:`histogram`: int64 (n_groups, b)."""
    values = np.asarray(values, dtype=np.float64)
    bins = edges.shape[0] - 1
    at = np.searchsorted(edges, values, side="right") - 1
    at[values == edges[-1]] = bins - 1
    keep = (at >= 0) & (at < bins) & ~np.isnan(values)
    flat = np.asarray(groups, dtype=np.int64)[keep] * bins + at[keep]
    return np.bincount(flat, minlength=n_groups * bins).reshape(n_groups, bins)


def day_start(epoch_s: float) -> float:
    """The UTC midnight at or before ``epoch_s``."""
    return math.floor(epoch_s / DAY_S) * DAY_S


def daily_counts(epoch_s: np.ndarray, first_day_s: float, last_day_s: float) -> np.ndarray:
    """Events per UTC day from midnight ``first_day_s`` to midnight ``last_day_s``
    inclusive, every day present (zeros too); events outside are left out. int64 (days,)."""
    days = round((last_day_s - first_day_s) / DAY_S) + 1
    index = np.floor((np.asarray(epoch_s, dtype=np.float64) - first_day_s) / DAY_S).astype(np.int64)
    keep = (index >= 0) & (index < days)
    return np.bincount(index[keep], minlength=days)


def hourly_counts(epoch_s: np.ndarray, day_start_s: float) -> np.ndarray:
    """Events per UTC hour 0..23 of the day starting at midnight ``day_start_s``. int64 (24,)."""
    index = np.floor((np.asarray(epoch_s, dtype=np.float64) - day_start_s) / HOUR_S).astype(np.int64)
    keep = (index >= 0) & (index < 24)
    return np.bincount(index[keep], minlength=24)


def group_shares(groups: np.ndarray, hits: np.ndarray, n_groups: int) -> np.ndarray:
    """Share of each group's entries where ``hits: bool (m,)`` is true; NaN for an empty
    group. float64 (n_groups,)."""
    groups = np.asarray(groups, dtype=np.int64)
    total = np.bincount(groups, minlength=n_groups)
    hit = np.bincount(groups, weights=np.asarray(hits, dtype=np.float64), minlength=n_groups)
    out = np.full(n_groups, np.nan)
    out[total > 0] = hit[total > 0] / total[total > 0]
    return out


def group_latest(groups: np.ndarray, epoch_s: np.ndarray, n_groups: int) -> np.ndarray:
    """Latest time of each group, NaN for an empty group. float64 (n_groups,)."""
    out = np.full(n_groups, -np.inf)
    np.maximum.at(out, np.asarray(groups, dtype=np.int64), np.asarray(epoch_s, dtype=np.float64))
    out[np.isinf(out)] = np.nan
    return out


@dataclass(frozen=True)
class GroupAgreement:
    """Per group: Pearson r of scores with the others' means, mean bias (score - others'
    mean), and the ratings compared (those with other ratings). float64/int64 (n_groups,)."""

    correlation: np.ndarray
    bias: np.ndarray
    compared: np.ndarray


def group_agreement(groups: np.ndarray, scores: np.ndarray, others: np.ndarray, n_groups: int) -> GroupAgreement:
    """Leave-one-out agreement per group, by the export's :class:`RaterAgreement` (one
    implementation): ``others: float (m,)`` the mean of the pair's other ratings, NaN
    where there is none."""
    accumulator = RaterAgreement()
    groups = np.asarray(groups, dtype=np.int64)
    accumulator.add(groups, scores, others, np.zeros(groups.shape[0], dtype=np.int64))
    correlation = np.full(n_groups, np.nan)
    bias = np.full(n_groups, np.nan)
    compared = np.zeros(n_groups, dtype=np.int64)
    for summary in accumulator.summaries():
        correlation[summary.rater] = summary.loo_correlation
        bias[summary.rater] = summary.mean_bias
        compared[summary.rater] = summary.compared
    return GroupAgreement(correlation=correlation, bias=bias, compared=compared)


def largest_differences(groups: np.ndarray, differences: np.ndarray, n_groups: int, k: int) -> list[np.ndarray]:
    """Per group the positions (into the input) of its ``k`` entries with the largest
    ``|differences|``, largest first, ties in input order; NaN differences never count.
    A list of n_groups int64 arrays of at most k positions."""
    size = np.abs(np.asarray(differences, dtype=np.float64))
    valid = np.flatnonzero(~np.isnan(size))
    groups = np.asarray(groups, dtype=np.int64)[valid]
    order = valid[group_order(groups, n_groups)]
    bounds = np.concatenate(([0], np.cumsum(np.bincount(groups, minlength=n_groups))))
    out = []
    for group in range(n_groups):
        members = order[bounds[group] : bounds[group + 1]]
        if members.shape[0] > k:
            # Keep every entry as large as the k-th, so ties are settled by input order below.
            kth = -np.partition(-size[members], k - 1)[k - 1]
            members = members[size[members] >= kth]
        ranked = members[np.lexsort((members, -size[members]))]
        out.append(ranked[:k])
    return out


def gold_errors(groups: np.ndarray, differences: np.ndarray, n_groups: int) -> tuple[np.ndarray, ...]:
    """Per group of gold ratings, ``differences: float (m,)`` = score - reference: how
    many (int64), the mean absolute error and the signed bias (mean difference; positive
    rates higher than the reference), NaN for a group without gold ratings. Each (n_groups,)."""
    groups = np.asarray(groups, dtype=np.int64)
    differences = np.asarray(differences, dtype=np.float64)
    count = np.bincount(groups, minlength=n_groups)
    absolute = np.bincount(groups, weights=np.abs(differences), minlength=n_groups)
    signed = np.bincount(groups, weights=differences, minlength=n_groups)
    mae, bias = np.full(n_groups, np.nan), np.full(n_groups, np.nan)
    seen = count > 0
    mae[seen], bias[seen] = absolute[seen] / count[seen], signed[seen] / count[seen]
    return count.astype(np.int64), mae, bias


# How far the reliability curve predicts: past CxC's five, to a lab's usual largest N.
RELIABILITY_UP_TO = 10
# Fewer complete pairs than this with two ratings give no correlation worth showing.
MIN_RELIABILITY_PAIRS = 10


def split_half_reliability(padded: np.ndarray, counts: np.ndarray, rng: np.random.Generator) -> dict:
    """What each extra rating buys, from complete pairs' ratings ``padded: float (p, r)``
    in the order they were given (NaN after each row's ``counts[i]`` ratings). Measured:
    for k = 1, 2, ... the correlation across pairs between the means of two disjoint groups
    of k of a pair's ratings (pairs with at least 2k ratings): for k = 1 its first two
    ratings, for larger k random groups (``rng``; a seeded one gives the same curve).
    Predicted by Spearman-Brown from k = 1: the reliability of the mean of n ratings,
    n = 1 .. RELIABILITY_UP_TO. Why k = 1 and the first two: with adaptive N the pairs
    that got more ratings are those whose ratings disagreed, and the pairs that closed
    early those whose ratings agreed; a pair's first two ratings come before any decision
    (the minimum is at least 2), so every pair gives them alike."""
    order = np.argsort(rng.random(padded.shape) + np.isnan(padded), axis=1)  # shuffled, NaN last
    shuffled = np.take_along_axis(padded, order, axis=1)
    measured = []
    for k in range(1, int(counts.max(initial=0)) // 2 + 1):
        rows = counts >= 2 * k
        if rows.sum() < MIN_RELIABILITY_PAIRS:
            break
        halves = padded if k == 1 else shuffled
        first, second = halves[rows, :k].mean(axis=1), halves[rows, k : 2 * k].mean(axis=1)
        if first.std() == 0 or second.std() == 0:
            break
        measured.append({"raters": k, "correlation": float(np.corrcoef(first, second)[0, 1]), "pairs": int(rows.sum())})
    if not measured or measured[0]["raters"] != 1:
        return {"measured": [], "single_rating": None, "predicted": []}
    r = measured[0]["correlation"]
    single = max(r, 0.0)
    predicted = [
        {"raters": n, "reliability": n * single / (1 + (n - 1) * single) if single > 0 else 0.0}
        for n in range(1, RELIABILITY_UP_TO + 1)
    ]
    return {"measured": measured, "single_rating": single, "predicted": predicted}
