"""Precision@k of a model's own top-k, as the raters judged it. Pure numpy.

A model retrieves its k best candidates for every query; each retrieved item is judged
when a rated pair (or an original image-caption pair, a positive by definition) joins
it to the query, positive when the pair is a positive of the protocol, and unrated
otherwise. An audit (sampling method model_topk) rates exactly those pairs.

Reported: the queries, the k * queries retrieved items, how many are judged and
unrated; the precision over the judged items (micro); and, over the queries whose k
items are all judged, the mean per-query precision@k (with a bootstrap interval).
"""

from __future__ import annotations

import numpy as np

from annotation.evaluation.intervals import bootstrap_intervals
from annotation.evaluation.ranks import Positives


def pair_keys(positives: Positives, n_candidates: int) -> np.ndarray:
    """Sorted int64 keys ``query * n_candidates + candidate`` of a sparse set."""
    queries = np.repeat(np.arange(positives.counts.size, dtype=np.int64), positives.counts)
    return queries * n_candidates + positives.indices


def _member(keys: np.ndarray, sorted_keys: np.ndarray) -> np.ndarray:
    if not sorted_keys.size:
        return np.zeros(keys.shape, bool)
    at = np.minimum(np.searchsorted(sorted_keys, keys), sorted_keys.size - 1)
    return sorted_keys[at] == keys


def topk_precision(
    top: np.ndarray, judged: Positives, positive: Positives, n_candidates: int, *, samples: int, seed: int
) -> dict:
    """``top`` int64 (q, k): each query's retrieved candidates; ``judged``: the rated
    (query, candidate) pairs; ``positive``: the positive ones (a subset of judged).
    Returns the JSON-ready summary described in the module docstring."""
    q, k = top.shape
    keys = np.arange(q, dtype=np.int64)[:, None] * n_candidates + top
    is_judged = _member(keys, pair_keys(judged, n_candidates))
    is_positive = _member(keys, pair_keys(positive, n_candidates)) & is_judged
    judged_count = int(is_judged.sum())
    complete = is_judged.all(axis=1)
    per_query = 100.0 * is_positive[complete].sum(axis=1) / k
    summary = {
        "k": int(k),
        "queries": int(q),
        "retrieved": int(q * k),
        "judged": judged_count,
        "unrated": int(q * k - judged_count),
        "precision_judged": float(100.0 * is_positive.sum() / judged_count) if judged_count else None,
        "queries_fully_judged": int(complete.sum()),
        f"P@{k}": float(per_query.mean()) if per_query.size else None,
    }
    if per_query.size:
        summary["ci"] = bootstrap_intervals({f"P@{k}": per_query}, samples=samples, seed=seed)
    return summary
