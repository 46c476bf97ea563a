"""Positive sets, and the retrieval figures built on the rank of the first correct item.
Pure numpy.

The rank of the first correct item is 1 + the number of non-positive candidates scoring
at least as high as the best positive: ties count against the model, so a constant
model cannot score well. The ranks themselves come from ``ranked``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RECALL_AT = (1, 5, 10)


@dataclass(frozen=True)
class Positives:
    """Sparse positive lists: the positives of query q are
    ``indices[indptr[q]:indptr[q + 1]]`` (candidate indices, sorted, unique).
    ``indptr`` int64 (n_queries + 1,), ``indices`` int64 (n_positives,)."""

    indptr: np.ndarray
    indices: np.ndarray

    @classmethod
    def from_pairs(cls, queries: np.ndarray, targets: np.ndarray, n_queries: int, n_targets: int) -> Positives:
        """Build from parallel int arrays (query index, candidate index); repeats are merged."""
        queries = np.asarray(queries, np.int64)
        targets = np.asarray(targets, np.int64)
        keys = np.unique(queries * n_targets + targets)
        counts = np.bincount(keys // n_targets, minlength=n_queries)
        indptr = np.zeros(n_queries + 1, np.int64)
        np.cumsum(counts, out=indptr[1:])
        return cls(indptr=indptr, indices=keys % n_targets)

    @property
    def counts(self) -> np.ndarray:
        return np.diff(self.indptr)


def retrieval_summary(ranks: np.ndarray, n_candidates: int, n_positives: int) -> dict:
    """Recall@K (percent of queries whose first correct item is within the top K) and the
    median first-correct rank over the queries (ranks > 0)."""
    ranks = ranks[ranks > 0]
    summary = {"queries": int(ranks.size), "candidates": int(n_candidates), "positives": int(n_positives)}
    for k in RECALL_AT:
        summary[f"R@{k}"] = float(100.0 * np.mean(ranks <= k)) if ranks.size else None
    summary["median_rank"] = float(np.median(ranks)) if ranks.size else None
    return summary
