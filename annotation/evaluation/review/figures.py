"""The crowd's review of retrieval failures in figures. Pure numpy and scipy.

Per failure: the mean review score, the raters, and per mark the share of its raters who
ticked it; a mark *holds* for a failure when a strict majority of its raters ticked it.
Per mark: the share of reviewed failures for which it holds. Per concept metric: the
Spearman correlation (``scipy.stats.spearmanr``) of the mean human score with the metric
across the reviewed failures where the metric is defined, with n and the p-value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from annotation.evaluation.review.marks import MARK_BITS, MARKS

# Fewer pairs than this give no correlation (a rank correlation of two points is +-1).
MIN_CORRELATION_PAIRS = 3


@dataclass(frozen=True)
class FailureReviews:
    """Per failure (n_failures,): ``raters`` int how many reviewed it, ``mean`` float (NaN
    when none did); per mark (n_failures, len(MARKS)): ``shares`` float, the share of its
    raters who ticked the mark (NaN when none reviewed it), ``holds`` bool, a strict
    majority ticked it."""

    raters: np.ndarray
    mean: np.ndarray
    shares: np.ndarray
    holds: np.ndarray


def failure_reviews(failure: np.ndarray, score: np.ndarray, bits: np.ndarray, n_failures: int) -> FailureReviews:
    """From one row per review: ``failure`` int (n,) in [0, n_failures), ``score`` float
    (n,) 0-5, ``bits`` int (n,) the stored marks (``marks.MARK_BITS``)."""
    failure = np.asarray(failure, dtype=np.int64)
    score = np.asarray(score, dtype=np.float64)
    bits = np.asarray(bits, dtype=np.int64)
    if not (failure.shape == score.shape == bits.shape and failure.ndim == 1):
        raise ValueError("failure, score and bits need one entry per review")
    if failure.size and (failure.min() < 0 or failure.max() >= n_failures):
        raise ValueError(f"a review names a failure outside 0..{n_failures - 1}")
    raters = np.bincount(failure, minlength=n_failures)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(failure, weights=score, minlength=n_failures) / raters
        ticked = np.stack(
            [
                np.bincount(failure, weights=((bits & MARK_BITS[m]) > 0).astype(np.float64), minlength=n_failures)
                for m in MARKS
            ],
            axis=1,
        )
        shares = ticked / raters[:, None]
    holds = ticked * 2 > raters[:, None]
    return FailureReviews(raters=raters, mean=mean, shares=shares, holds=holds)


def mark_shares(reviews: FailureReviews) -> dict[str, dict]:
    """Per mark: the reviewed failures it holds for and their share of all reviewed ones
    (None when none was reviewed)."""
    reviewed = reviews.raters > 0
    n = int(reviewed.sum())
    out = {}
    for column, mark in enumerate(MARKS):
        held = int(reviews.holds[reviewed, column].sum())
        out[mark] = {"failures": held, "share": held / n if n else None, "reviewed": n}
    return out


def spearman_with(human: np.ndarray, metric: np.ndarray) -> dict:
    """Spearman's rho of ``human`` against ``metric`` (float, NaN where undefined) over
    the entries where both are defined: {"rho", "p", "n"}; rho and p None below
    MIN_CORRELATION_PAIRS or when either side is constant there."""
    human = np.asarray(human, dtype=np.float64)
    metric = np.asarray(metric, dtype=np.float64)
    both = np.isfinite(human) & np.isfinite(metric)
    n = int(both.sum())
    if n < MIN_CORRELATION_PAIRS or np.ptp(human[both]) == 0 or np.ptp(metric[both]) == 0:
        return {"rho": None, "p": None, "n": n}
    # scipy.stats is read when first asked for: loaded with the URLs, it would put every
    # web process ~30 MiB higher (the upload checks' memory bounds count it).
    from scipy import stats

    result = stats.spearmanr(human[both], metric[both])
    rho, p = float(result.statistic), float(result.pvalue)
    return {"rho": rho if math.isfinite(rho) else None, "p": p if math.isfinite(p) else None, "n": n}


def metric_correlations(human: np.ndarray, metrics: Mapping[str, np.ndarray]) -> dict[str, dict]:
    """``spearman_with`` of the human means against each named metric column."""
    return {name: spearman_with(human, values) for name, values in metrics.items()}
