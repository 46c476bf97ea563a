"""Confidence intervals of the evaluation's figures. Pure numpy.

- ``bootstrap_intervals``: of means over queries (recall, R-Precision, mAP@R, P@k);
- ``percentile_interval``: the central share of a set of resampled values (the CxC
  correlation's samples, see ``correlation``);
- ``fisher_z_interval``: of a Spearman rho over n pairs, closed form (Fisher's z with
  the Bonett-Wright standard error sqrt((1 + rho^2 / 2) / (n - 3)), Psychometrika 2000);
- ``logit_interval``: of an average precision over n positives, closed form (the logit
  interval of Boyd, Eng and Page, ECML 2013, which covered best in their comparison; a
  bootstrap over the pairs costs seconds per kind at CxC scale).

For the means over queries, queries are resampled with replacement, ``samples`` times; the interval is the
percentile interval of the resampled means. The resamples depend only on the seed and
the number of queries, so two models scored on the same queries are resampled alike
(a paired comparison) and the same inputs always give the same intervals.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from statistics import NormalDist

import numpy as np

INTERVAL_SAMPLES = 1000
INTERVAL_LEVEL = 0.95
# Resample weights built at a time: (chunk, n_queries) float64.
CHUNK_VALUES = 4 * 1024 * 1024


def bootstrap_intervals(
    columns: Mapping[str, np.ndarray], *, samples: int = INTERVAL_SAMPLES, seed: int = 0, level: float = INTERVAL_LEVEL
) -> dict[str, list[float] | None]:
    """{name: [low, high]} of the mean of each column, float (n,) all of one length n;
    None for a column with no values."""
    names = list(columns)
    if not names:
        return {}
    values = np.column_stack([np.asarray(columns[name], np.float64) for name in names])
    n = values.shape[0]
    if n == 0:
        return dict.fromkeys(names)
    rng = np.random.default_rng([seed, n])
    chunk = max(1, min(samples, CHUNK_VALUES // n))
    means = np.empty((samples, len(names)))
    for begin in range(0, samples, chunk):
        size = min(chunk, samples - begin)
        drawn = rng.integers(0, n, size=(size, n))
        weights = np.bincount((drawn + n * np.arange(size)[:, None]).ravel(), minlength=size * n).reshape(size, n)
        means[begin : begin + size] = weights @ values / n
    tail = 100.0 * (1.0 - level) / 2.0
    low, high = np.percentile(means, [tail, 100.0 - tail], axis=0)
    return {name: [float(a), float(b)] for name, a, b in zip(names, low, high, strict=True)}


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"an interval's level lies strictly between 0 and 1, got {level!r}")


def percentile_interval(values: np.ndarray, level: float = INTERVAL_LEVEL) -> list[float] | None:
    """[low, high]: the central ``level`` share of ``values`` float (n,) (percentiles
    (1 - level) / 2 and (1 + level) / 2, linear interpolation); None for no values."""
    _check_level(level)
    values = np.asarray(values, np.float64)
    if not values.size:
        return None
    tail = 100.0 * (1.0 - level) / 2.0
    low, high = np.percentile(values, [tail, 100.0 - tail])
    return [float(low), float(high)]


MIN_FISHER_PAIRS = 4


def fisher_z_interval(rho: float, n: int, level: float = INTERVAL_LEVEL) -> list[float] | None:
    """[low, high] of a Spearman ``rho`` (in [-1, 1]) over ``n`` pairs; None below
    MIN_FISHER_PAIRS pairs or for an undefined rho (NaN). A rho of +-1 gives [rho, rho]."""
    _check_level(level)
    if n < MIN_FISHER_PAIRS or math.isnan(rho):
        return None
    if abs(rho) >= 1.0:
        return [float(rho), float(rho)]
    z = math.atanh(rho)
    half = NormalDist().inv_cdf((1.0 + level) / 2.0) * math.sqrt((1.0 + rho * rho / 2.0) / (n - 3))
    return [math.tanh(z - half), math.tanh(z + half)]


def logit_interval(value: float, n: int, level: float = INTERVAL_LEVEL) -> list[float] | None:
    """[low, high] of a proportion-like ``value`` in (0, 1) (an average precision) over
    ``n`` positives: logit(value) +- z / sqrt(n value (1 - value)), mapped back. None
    for no positives or a value at 0 or 1, where the logit is undefined."""
    _check_level(level)
    # A value a rounding error from 0 or 1 (an average precision summed to 0.9999999999999999)
    # is at the edge: its logit would be +-37 and the interval all of (0, 1) or overflow.
    if n < 1 or not _EDGE < value < 1.0 - _EDGE:
        return None
    eta = math.log(value / (1.0 - value))
    half = NormalDist().inv_cdf((1.0 + level) / 2.0) / math.sqrt(n * value * (1.0 - value))
    return [_logistic(eta - half), _logistic(eta + half)]


_EDGE = 1e-12


def _logistic(x: float) -> float:
    """1 / (1 + e^-x) without overflow for a large negative ``x``."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    ex = math.exp(x)
    return ex / (1.0 + ex)
