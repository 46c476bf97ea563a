"""The rank of the first correct item and the retrieval figures built on it. Pure numpy.

The rank of the first correct item is 1 + the number of non-positive candidates scoring
at least as high as the best positive: ties count against the model, so a constant
model cannot score well. Ranks are counted from blocked matrix products, never by
sorting whole rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

RECALL_AT = (1, 5, 10)
# Bytes of one block of similarity scores: bounds memory for any split size (a full
# 25k x 25k float32 matrix would be 2.5 GB).
BLOCK_BYTES = 64 * 1024 * 1024


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


def block_rows_for(n_candidates: int) -> int:
    return max(1, BLOCK_BYTES // (4 * max(n_candidates, 1)))


def score_blocks(
    queries: np.ndarray, candidates: np.ndarray, *, exclude: np.ndarray | None = None, block_rows: int | None = None
) -> Iterator[tuple[int, int, np.ndarray]]:
    """(start, stop, scores float32 (stop - start, n)) for consecutive blocks of queries:
    dot products with every candidate, ``exclude[i]`` (a candidate per query, -1 for
    none) set to -inf."""
    q, n = queries.shape[0], candidates.shape[0]
    block_rows = block_rows or block_rows_for(n)
    for start in range(0, q, block_rows):
        stop = min(start + block_rows, q)
        scores = queries[start:stop] @ candidates.T
        if exclude is not None:
            own = np.asarray(exclude[start:stop])
            keep = own >= 0
            scores[np.arange(stop - start)[keep], own[keep]] = -np.inf
        yield start, stop, scores


def first_correct_ranks(
    queries: np.ndarray,
    candidates: np.ndarray,
    positive_sets: Sequence[Positives],
    *,
    exclude: np.ndarray | None = None,
    block_rows: int | None = None,
) -> list[np.ndarray]:
    """Rank (1-based) of the first correct candidate of every query, per positive set.

    ``queries`` float32 (q, d) and ``candidates`` float32 (n, d): scores are their dot
    products (cosines when rows are L2-normalized). ``exclude`` int (q,): a candidate
    index to leave out per query (the query itself in intramodal retrieval), -1 for none.
    Returns one int64 array (q,) per positive set; 0 marks a query without positives.
    A candidate that ties the best positive counts as ranked ahead of it.
    """
    ranks = [np.zeros(queries.shape[0], np.int64) for _ in positive_sets]
    for start, stop, scores in score_blocks(queries, candidates, exclude=exclude, block_rows=block_rows):
        for positives, out in zip(positive_sets, ranks, strict=True):
            block = _block_ranks(scores, positives, start)
            if block is not None:
                out[start:stop] = block
    return ranks


def _block_ranks(scores: np.ndarray, positives: Positives, start: int) -> np.ndarray | None:
    """Ranks of queries ``start .. start + b - 1`` from their scores float32 (b, n);
    None when none of them has a positive."""
    size = scores.shape[0]
    ptr = positives.indptr[start : start + size + 1]
    counts = np.diff(ptr)
    has = counts > 0
    if not has.any():
        return None
    rows = np.repeat(np.arange(size), counts)
    values = scores[rows, positives.indices[ptr[0] : ptr[-1]]]
    best = np.full(size, np.inf, dtype=scores.dtype)
    best[has] = np.maximum.reduceat(values, (ptr[:-1] - ptr[0])[has])
    ahead = np.count_nonzero(scores >= best[:, None], axis=1)
    positives_ahead = np.bincount(rows, weights=values >= best[rows], minlength=size)
    return np.where(has, ahead - positives_ahead.astype(np.int64) + 1, 0)


def retrieval_summary(ranks: np.ndarray, n_candidates: int, n_positives: int) -> dict:
    """Recall@K (percent of queries whose first correct item is within the top K) and the
    median first-correct rank over the queries (ranks > 0)."""
    ranks = ranks[ranks > 0]
    summary = {"queries": int(ranks.size), "candidates": int(n_candidates), "positives": int(n_positives)}
    for k in RECALL_AT:
        summary[f"R@{k}"] = float(100.0 * np.mean(ranks <= k)) if ranks.size else None
    summary["median_rank"] = float(np.median(ranks)) if ranks.size else None
    return summary
