"""Ratings -> pair scores, spread and rater agreement. Pure numpy, no Django.

Ratings of many pairs travel as a NaN-padded matrix ``scores: float (n_pairs, r)``: row
``i`` holds pair ``i``'s ratings in its first ``count[i]`` cells and NaN after them
(:func:`pad_ragged` builds it from flat arrays). Every pair has at least one rating.

- :func:`aggregate_pairs`: mean (the dataset score, as CxC), the score rounded to two
  decimals as the release writes it, median, sample standard deviation, count, a 95%
  Student-t interval of the mean, and positive or not by the task's threshold.
- :class:`IntervalAlpha`: Krippendorff's alpha at the interval level in closed form,
  fed chunk by chunk so it never needs all ratings at once.
- :class:`RaterAgreement`: per rater the leave-one-out correlation with the mean of the
  other raters on the same pairs, the mean bias against that mean, and the median time
  per item.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from annotation.core.cxc import POSITIVE_THRESHOLDS, SCORE_MAX, SCORE_MIN

CONFIDENCE = 0.95


class AggregationError(ValueError):
    """Ratings that cannot be aggregated as given (wrong shape, empty row, unknown task)."""


def pad_ragged(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Spread flat ``values: float (m,)`` over rows of ``counts: int (n,)`` cells each
    (``counts.sum() == m``, in row order) into a NaN-padded ``float64 (n, max(counts))``."""
    values = np.asarray(values, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.int64)
    if counts.ndim != 1 or values.ndim != 1 or int(counts.sum()) != values.shape[0]:
        raise AggregationError(f"counts sum to {int(counts.sum())} but there are {values.shape[0]} values")
    if counts.size and counts.min() < 1:
        raise AggregationError("every row needs at least one value")
    width = int(counts.max()) if counts.size else 0
    out = np.full((counts.shape[0], width), np.nan)
    rows, cols = ragged_positions(counts)
    out[rows, cols] = values
    return out


def ragged_positions(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row and column of each flat value laid out by ``counts: int (n,)``: two int64 (m,)."""
    counts = np.asarray(counts, dtype=np.int64)
    rows = np.repeat(np.arange(counts.shape[0]), counts)
    starts = np.cumsum(counts) - counts
    cols = np.arange(rows.shape[0]) - np.repeat(starts, counts)
    return rows, cols


@dataclass(frozen=True)
class PairAggregates:
    """Per-pair statistics, every array of length n_pairs.

    ``std`` is the sample standard deviation (ddof=1); it and the interval are NaN for a
    pair with a single rating. ``agg_score`` is ``mean`` rounded to two decimals the way
    Python's ``round`` does (the release's notation); ``positive`` compares it with the
    task threshold.
    """

    mean: np.ndarray
    agg_score: np.ndarray
    median: np.ndarray
    std: np.ndarray
    count: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    positive: np.ndarray


def aggregate_pairs(scores: np.ndarray, *, task: str) -> PairAggregates:
    """Aggregate ``scores: float (n, r)`` NaN-padded, one row per pair, for a task kind
    (``STS``, ``SIS`` or ``SITS``)."""
    if task not in POSITIVE_THRESHOLDS:
        raise AggregationError(f"unknown task {task!r}; expected one of {', '.join(POSITIVE_THRESHOLDS)}")
    scores = _check_matrix(scores)
    present = ~np.isnan(scores)
    count = present.sum(axis=1)
    total = np.where(present, scores, 0.0).sum(axis=1)
    mean = total / count
    centred = np.where(present, scores - mean[:, None], 0.0)
    ss = (centred**2).sum(axis=1)
    several = count > 1
    std = np.full(mean.shape, np.nan)
    std[several] = np.sqrt(ss[several] / (count[several] - 1))
    half = np.full(mean.shape, np.nan)
    for n in np.unique(count[several]):
        rows = count == n
        half[rows] = t_critical(int(n) - 1) * std[rows] / math.sqrt(int(n))
    # Sorting puts NaN last, so the median of a row's first ``count`` cells is direct.
    ordered = np.sort(scores, axis=1)
    rows = np.arange(scores.shape[0])
    lower = ordered[rows, (count - 1) // 2]
    upper = ordered[rows, count // 2]
    median = (lower + upper) / 2.0
    agg_score = round_scores(mean)
    return PairAggregates(
        mean=mean,
        agg_score=agg_score,
        median=median,
        std=std,
        count=count.astype(np.int64),
        ci_low=mean - half,
        ci_high=mean + half,
        # Positive when the rounded score, as the release writes it, reaches the task's threshold.
        positive=agg_score >= POSITIVE_THRESHOLDS[task],
    )


def round_scores(values: np.ndarray) -> np.ndarray:
    """Round to two decimals with Python's ``round`` (correct decimal rounding of the
    binary value), so the number and its text ``repr`` agree with the release's files:
    ``2.4``, ``5.0``, ``4.99``. float64 (n,) -> float64 (n,)."""
    return np.array([round(value, 2) for value in np.asarray(values, dtype=np.float64).tolist()], dtype=np.float64)


def leave_one_out_means(scores: np.ndarray) -> np.ndarray:
    """For each rating the mean of the other ratings of its pair.

    ``scores: float (n, r)`` NaN-padded -> ``float64 (n, r)``; NaN where the cell is
    empty or the pair has no other rating.
    """
    scores = _check_matrix(scores)
    present = ~np.isnan(scores)
    count = present.sum(axis=1, keepdims=True)
    total = np.where(present, scores, 0.0).sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        others = (total - scores) / (count - 1)
    others[~present | (count < 2).repeat(scores.shape[1], axis=1)] = np.nan
    return others


def _check_matrix(scores: np.ndarray) -> np.ndarray:
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 2:
        raise AggregationError(f"expected a 2-D (pairs, ratings) matrix, got shape {scores.shape}")
    if scores.shape[0] and (scores.shape[1] == 0 or np.isnan(scores).all(axis=1).any()):
        raise AggregationError("every pair needs at least one rating")
    return scores


# --- Student t quantile ----------------------------------------------------------------


@lru_cache(maxsize=256)
def t_critical(df: int, confidence: float = CONFIDENCE) -> float:
    """Two-sided critical value of Student's t with ``df`` degrees of freedom: the ``t``
    with P(|T| <= t) = ``confidence``. Exact to float precision (bisection on the closed
    form of the distribution for integer df, Abramowitz & Stegun 26.7.3-4)."""
    if df < 1:
        raise AggregationError(f"degrees of freedom must be at least 1, got {df}")
    if not 0.0 < confidence < 1.0:
        raise AggregationError(f"confidence must be between 0 and 1, got {confidence}")
    low, high = 0.0, 1.0
    while _t_central_probability(high, df) < confidence:
        high *= 2.0
    for _ in range(200):
        middle = (low + high) / 2.0
        if middle in (low, high):
            break
        if _t_central_probability(middle, df) < confidence:
            low = middle
        else:
            high = middle
    return (low + high) / 2.0


def _t_central_probability(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with integer ``df``."""
    theta = math.atan(t / math.sqrt(df))
    sin, cos2 = math.sin(theta), math.cos(theta) ** 2
    if df % 2 == 0:
        term, total = 1.0, 1.0
        for k in range(1, df // 2):
            term *= (2 * k - 1) / (2 * k) * cos2
            total += term
        return sin * total
    if df == 1:
        return 2.0 * theta / math.pi
    term, total = 1.0, 1.0
    for k in range(1, (df - 1) // 2):
        term *= (2 * k) / (2 * k + 1) * cos2
        total += term
    return 2.0 / math.pi * (theta + sin * math.cos(theta) * total)


# --- Krippendorff's alpha, interval level ----------------------------------------------


@dataclass
class IntervalAlpha:
    """Krippendorff's alpha for interval data, accumulated over chunks of pairs.

    Closed form: with ``n`` pairable values (those in units holding at least two),
    ``m_u`` values and sum of squared deviations ``SS_u`` in unit ``u`` and ``SS`` over
    all pairable values,

        alpha = 1 - (n - 1) * sum_u(m_u * SS_u / (m_u - 1)) / (n * SS)

    which is ``1 - D_o / D_e`` with the squared-difference metric, because the sum of
    squared differences over ordered pairs of a set of m values is ``2 m SS``. The
    global ``SS`` is merged chunk by chunk (Chan et al.) so no chunk's size limits
    precision. NaN when fewer than two values are pairable or they all agree.
    """

    units: int = 0
    values: int = 0
    _mean: float = 0.0
    _ss: float = 0.0
    _within: float = 0.0

    def add(self, scores: np.ndarray) -> None:
        """Add units given as ``scores: float (n_units, r)`` NaN-padded."""
        scores = np.asarray(scores, dtype=np.float64)
        if scores.ndim != 2:
            raise AggregationError(f"expected a 2-D (units, values) matrix, got shape {scores.shape}")
        present = ~np.isnan(scores)
        count = present.sum(axis=1)
        keep = count >= 2
        if not keep.any():
            return
        scores, present, count = scores[keep], present[keep], count[keep]
        unit_mean = np.where(present, scores, 0.0).sum(axis=1) / count
        unit_ss = (np.where(present, scores - unit_mean[:, None], 0.0) ** 2).sum(axis=1)
        values = scores[present]
        n_b = values.shape[0]
        mean_b = float(values.mean())
        ss_b = float(((values - mean_b) ** 2).sum())
        n_a = self.values
        delta = mean_b - self._mean
        self.values = n_a + n_b
        self._mean += delta * n_b / self.values
        self._ss += ss_b + delta * delta * n_a * n_b / self.values
        self._within += float((count * unit_ss / (count - 1)).sum())
        self.units += int(keep.sum())

    def merge(self, other: IntervalAlpha) -> None:
        """Fold another accumulator's units into this one."""
        if other.values == 0:
            return
        n_a, n_b = self.values, other.values
        delta = other._mean - self._mean
        self.values = n_a + n_b
        self._mean += delta * n_b / self.values
        self._ss += other._ss + delta * delta * n_a * n_b / self.values
        self._within += other._within
        self.units += other.units

    @property
    def alpha(self) -> float:
        if self.values < 2 or self._ss <= 0.0:
            return math.nan
        return 1.0 - (self.values - 1) * self._within / (self.values * self._ss)


def krippendorff_alpha_interval(scores: np.ndarray) -> float:
    """Krippendorff's interval alpha of ``scores: float (n_units, r)`` NaN-padded (the
    raters' identities do not enter the interval alpha, only which values share a unit)."""
    accumulator = IntervalAlpha()
    accumulator.add(scores)
    return accumulator.alpha


# --- per-rater agreement ---------------------------------------------------------------


@dataclass(frozen=True)
class RaterSummary:
    """One rater's agreement: ``loo_correlation`` is Pearson's r between the rater's
    scores and the mean of the other raters on the same pairs (NaN with fewer than two
    such pairs or no variation), ``mean_bias`` the mean of (own - others' mean)."""

    rater: int
    ratings: int
    compared: int
    loo_correlation: float
    mean_bias: float
    median_time_ms: float


# Sums are taken around the middle of the 0-5 scale to keep their cancellation small.
_CENTRE = (SCORE_MIN + SCORE_MAX) / 2


@dataclass
class RaterAgreement:
    """Per-rater agreement accumulated over chunks of ratings (see :class:`RaterSummary`).

    Memory: a few running sums per rater, plus 8 bytes per rating (rater slot and time
    on item, int32 each) that the exact median time needs: about 10 MiB at CxC scale.
    """

    _index: dict[int, int] = field(default_factory=dict)
    _sums: np.ndarray = field(default_factory=lambda: np.zeros((0, 7)))
    _times: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)

    def add(self, raters: np.ndarray, scores: np.ndarray, others_mean: np.ndarray, times_ms: np.ndarray) -> None:
        """Add ratings: ``raters: int (m,)`` ids, ``scores: float (m,)``, ``others_mean:
        float (m,)`` from :func:`leave_one_out_means` (NaN: no other rating, counted
        but not compared), ``times_ms: int (m,)``."""
        raters = np.asarray(raters, dtype=np.int64)
        scores = np.asarray(scores, dtype=np.float64)
        others_mean = np.asarray(others_mean, dtype=np.float64)
        times_ms = np.asarray(times_ms, dtype=np.int64)
        if not raters.shape == scores.shape == others_mean.shape == times_ms.shape or raters.ndim != 1:
            raise AggregationError("raters, scores, others' means and times must be 1-D arrays of one length")
        unique, inverse = dense_unique(raters)
        slots = np.empty(unique.shape[0], dtype=np.int64)
        for position, rater in enumerate(unique.tolist()):
            if rater not in self._index:
                self._index[rater] = len(self._index)
            slots[position] = self._index[rater]
        if len(self._index) > self._sums.shape[0]:
            grown = np.zeros((len(self._index), self._sums.shape[1]))
            grown[: self._sums.shape[0]] = self._sums
            self._sums = grown
        where = slots[inverse]
        compared = ~np.isnan(others_mean)
        x = scores[compared] - _CENTRE
        y = others_mean[compared] - _CENTRE
        at = where[compared]
        size = self._sums.shape[0]
        self._sums[:, 0] += np.bincount(where, minlength=size)
        for column, weights in enumerate((np.ones_like(x), x, y, x * x, y * y, x * y), start=1):
            self._sums[:, column] += np.bincount(at, weights=weights, minlength=size)
        self._times.append((where.astype(np.int32), times_ms.astype(np.int32)))

    def summaries(self) -> list[RaterSummary]:
        """One summary per rater seen, ordered by rater id."""
        if not self._index:
            return []
        where = np.concatenate([w for w, _ in self._times])
        times = np.concatenate([t for _, t in self._times])
        medians = group_medians(where, times, self._sums.shape[0])
        out = []
        for rater, slot in sorted(self._index.items()):
            ratings, n, sx, sy, sxx, syy, sxy = self._sums[slot].tolist()
            correlation = math.nan
            bias = math.nan
            if n >= 1:
                bias = (sx - sy) / n
            if n >= 2:
                cov = sxy - sx * sy / n
                var_x = sxx - sx * sx / n
                var_y = syy - sy * sy / n
                if var_x > 1e-12 and var_y > 1e-12:
                    correlation = max(-1.0, min(1.0, cov / math.sqrt(var_x * var_y)))
            median = float(medians[slot])
            out.append(
                RaterSummary(
                    rater=rater,
                    ratings=int(ratings),
                    compared=int(n),
                    loo_correlation=correlation,
                    mean_bias=bias,
                    median_time_ms=median,
                )
            )
        return out


# --- grouping without sorting a million values ----------------------------------------

# A lookup table replaces sorting when the values span at most this many per value.
_DENSE_SPAN = 8


def dense_unique(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` of ``values: int (m,)``: the sorted
    distinct values and each value's position among them. Ids (users, pairs) span a
    small range, so a table of that range does it in linear time; a wide spread sorts."""
    values = np.asarray(values, dtype=np.int64)
    if not values.size:
        return values.copy(), np.zeros(0, dtype=np.int64)
    low = int(values.min())
    span = int(values.max()) - low + 1
    if span > _DENSE_SPAN * values.size + 1024:
        return np.unique(values, return_inverse=True)
    present = np.zeros(span, dtype=bool)
    present[values - low] = True
    rank = np.cumsum(present) - 1
    return np.flatnonzero(present) + low, rank[values - low]


def group_order(groups: np.ndarray, n_groups: int) -> np.ndarray:
    """Positions that order ``groups: int (m,)`` (each in 0..n_groups-1) by group, input
    order kept within a group: int64 (m,). Up to 65,536 groups numpy sorts them by radix
    (linear time), many times faster than a comparison sort of a million."""
    groups = np.asarray(groups)
    narrow = groups.astype(np.uint16) if n_groups <= 1 << 16 else groups.astype(np.int64)
    return np.argsort(narrow, kind="stable")


def group_medians(groups: np.ndarray, values: np.ndarray, n_groups: int) -> np.ndarray:
    """Median of each group's ``values: (m,)`` (the mean of the two middle ones for an
    even count), NaN for a group without values: float64 (n_groups,). Each group is
    partitioned, not sorted."""
    order = group_order(groups, n_groups)
    ordered = np.asarray(values)[order]
    bounds = np.concatenate(([0], np.cumsum(np.bincount(np.asarray(groups)[order], minlength=n_groups))))
    out = np.full(n_groups, np.nan)
    for group in np.flatnonzero(np.diff(bounds)).tolist():
        out[group] = np.median(ordered[bounds[group] : bounds[group + 1]])
    return out
