"""Optimal one-to-one matchings of a complete bipartite graph, by scipy's
``linear_sum_assignment``. Every matching is full on the smaller side: with n rows and m
columns it pairs min(n, m) of them, each row and column at most once. Pure numpy/scipy.
"""

from __future__ import annotations

import numpy as np


def _checked(matrix: np.ndarray, what: str) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float64)
    if matrix.ndim != 2:
        raise ValueError(f"{what}: expected a 2-d matrix, got shape {matrix.shape}")
    if not np.isfinite(matrix).all():
        raise ValueError(f"{what}: every entry must be a finite number")
    return matrix


def max_weight_matching(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``weights`` float (n, m) -> (rows, columns), int (min(n, m),) each: the pairs of a
    matching of min(n, m) pairs whose total weight is the largest. With weights >= 0 (path
    similarities) no larger matching weighs more, so it is the maximum-weight matching."""
    # scipy.optimize is read when a matching is first asked for, not when the web server
    # loads its URLs: it adds about 25 MiB to every process, and most never match.
    from scipy.optimize import linear_sum_assignment

    rows, columns = linear_sum_assignment(_checked(weights, "weights"), maximize=True)
    return rows, columns


def min_cost_matching(costs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``costs`` float (n, m) -> (rows, columns), int (min(n, m),) each: the pairs of a
    matching of min(n, m) pairs whose total cost is the smallest (the minimum-weight full
    matching of the smaller side)."""
    from scipy.optimize import linear_sum_assignment  # read when first needed: see above

    rows, columns = linear_sum_assignment(_checked(costs, "costs"))
    return rows, columns
