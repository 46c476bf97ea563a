"""Bootstrap confidence intervals of means over queries. Pure numpy.

Queries are resampled with replacement, ``samples`` times; the interval is the
percentile interval of the resampled means. The resamples depend only on the seed and
the number of queries, so two models scored on the same queries are resampled alike
(a paired comparison) and the same inputs always give the same intervals.
"""

from __future__ import annotations

from collections.abc import Mapping

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
