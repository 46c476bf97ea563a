"""The rank of every positive, and the per-query figures built on them. Pure numpy.

For a query with R positives, sorted by the model's score (best first), positive j
(0-based) has rank ``j + 1 + the non-positive candidates scoring at least as high``:
a candidate tied with a positive ranks ahead of it, so ties count against the model.
From these ranks, per query:

- first correct rank (Recall@K is the share of queries where it is <= K);
- R-Precision: the share of positives among the top R;
- mAP@R (Musgrave et al., used by ECCV Caption): (1/R) * sum over the top R positions
  holding a positive of the precision at that position.

Scores come from blocked matrix products; the ranks from comparisons, never by sorting
whole rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from annotation.evaluation.ranks import RECALL_AT, Positives
from sampling.search.topk import heap_top, score_blocks, ties_by_column

# Bytes of candidate scores compared against positives at a time.
COMPARE_BYTES = 64 * 1024 * 1024
# Each query's highest scores kept (from a heap) to rank the positives among them: a
# positive scoring above the last of them is ranked from them alone, without a pass
# over every candidate.
HEAD = 16


def positive_ranks(
    queries: np.ndarray,
    candidates: np.ndarray,
    positive_sets: Sequence[Positives],
    *,
    exclude: np.ndarray | None = None,
    block_rows: int | None = None,
    top: np.ndarray | None = None,
) -> list[np.ndarray]:
    """The rank (1-based) of every positive of every query, per positive set.

    ``queries`` float32 (q, d), ``candidates`` float32 (n, d): scores are dot products.
    ``exclude`` int (q,): a candidate to leave out per query (the query itself in
    intramodal retrieval), -1 for none. Returns one int64 array per set, aligned with
    ``positives.indptr``: the segment of query q holds its positives' ranks, ascending.
    ``top`` int64 (q, k), when given, is filled with each query's k best candidates, best
    first, from the same scores (a model's own top-k at no second pass).
    """
    n = candidates.shape[0]
    if top is not None and top.shape[1] > n:
        raise ValueError(f"top-{top.shape[1]} asked for, but there are only {n} candidates")
    out = [np.zeros(p.indices.size, np.int64) for p in positive_sets]
    for start, stop, scores in score_blocks(queries, candidates, exclude=exclude, block_rows=block_rows):
        if np.isnan(scores).any():
            raise ValueError(f"scores of queries {start}..{stop - 1} hold NaN: vectors must be finite")
        head = min(n, max(HEAD, top.shape[1] if top is not None else 0))
        head_ids, head_values = heap_top(scores, head)
        if top is not None:
            # Ordered as exact_top_k orders them: equal scores, lower column first.
            top[start:stop] = ties_by_column(head_ids, head_values)[:, : top.shape[1]]
        for positives, ranks in zip(positive_sets, out, strict=True):
            lo, hi = positives.indptr[start], positives.indptr[stop]
            if hi > lo:
                ptr = positives.indptr[start : stop + 1]
                ranks[lo:hi] = _block_positive_ranks(scores, ptr, positives.indices, head_values)
    return out


def first_correct_ranks(
    queries: np.ndarray,
    candidates: np.ndarray,
    positive_sets: Sequence[Positives],
    *,
    exclude: np.ndarray | None = None,
    block_rows: int | None = None,
) -> list[np.ndarray]:
    """Rank (1-based) of the first correct candidate of every query, per positive set: the
    best positive's rank from ``positive_ranks``. One int64 array (q,) per set; 0 marks a
    query without positives."""
    ranks = positive_ranks(queries, candidates, positive_sets, exclude=exclude, block_rows=block_rows)
    out = []
    for positives, set_ranks in zip(positive_sets, ranks, strict=True):
        first = np.zeros(positives.counts.size, np.int64)
        has = positives.counts > 0
        first[has] = set_ranks[positives.indptr[:-1][has]]
        out.append(first)
    return out


def _block_positive_ranks(scores: np.ndarray, ptr: np.ndarray, indices: np.ndarray, head: np.ndarray) -> np.ndarray:
    """Ranks of the positives of queries of one block, float32 scores (b, n); ``ptr``
    (b + 1,) the block's slice of indptr; ``head`` float32 (b, h) each query's h highest
    scores, highest first."""
    counts = np.diff(ptr)
    rows = np.repeat(np.arange(counts.size), counts)
    values = scores[rows, indices[ptr[0] : ptr[-1]]]
    # Best first within each query; j is a positive's place among its query's positives.
    order = np.lexsort((-values, rows))
    rows, values = rows[order], values[order]
    segment_start = np.repeat(ptr[:-1] - ptr[0], counts)
    place = np.arange(rows.size) - segment_start
    ahead = _scores_at_least(scores, rows, values, head)
    # Positives scoring at least as high: up to the end of this value's run of ties.
    new_run = np.ones(rows.size, bool)
    new_run[1:] = (rows[1:] != rows[:-1]) | (values[1:] != values[:-1])
    run_id = np.cumsum(new_run) - 1
    run_end = np.append(np.flatnonzero(new_run)[1:], rows.size)[run_id]
    positives_at_least = run_end - segment_start
    return place + 1 + (ahead - positives_at_least)


def _scores_at_least(scores: np.ndarray, rows: np.ndarray, values: np.ndarray, head: np.ndarray) -> np.ndarray:
    """How many of row ``rows[i]``'s scores are >= ``values[i]``: counted in the row's
    head when the value beats the head's last score (or the head is the whole row),
    else over the whole row."""
    ahead = np.empty(rows.size, np.int64)
    in_head = (values > head[rows, -1]) if head.shape[1] < scores.shape[1] else np.ones(rows.size, bool)
    ahead[in_head] = np.count_nonzero(head[rows[in_head]] >= values[in_head, None], axis=1)
    far = np.flatnonzero(~in_head)
    step = max(1, COMPARE_BYTES // (4 * max(scores.shape[1], 1)))
    for begin in range(0, far.size, step):
        part = far[begin : begin + step]
        ahead[part] = np.count_nonzero(scores[rows[part]] >= values[part, None], axis=1)
    return ahead


@dataclass(frozen=True)
class QueryFigures:
    """Per-query figures of the queries that have positives: ``first_rank`` int64 (m,),
    ``r_precision`` and ``map_at_r`` float64 (m,) in 0-1; ``queries`` int64 (m,) their
    indices."""

    queries: np.ndarray
    first_rank: np.ndarray
    r_precision: np.ndarray
    map_at_r: np.ndarray

    def columns(self) -> dict[str, np.ndarray]:
        """Each figure as a 0-100 per-query column (the mean over queries is the figure)."""
        cols = {f"R@{k}": 100.0 * (self.first_rank <= k) for k in RECALL_AT}
        cols["R-Precision"] = 100.0 * self.r_precision
        cols["mAP@R"] = 100.0 * self.map_at_r
        return cols


def query_figures(ranks: np.ndarray, positives: Positives) -> QueryFigures:
    """First rank, R-Precision and mAP@R of every query with positives, from the ranks
    ``positive_ranks`` gives for ``positives``."""
    counts = positives.counts
    has = np.flatnonzero(counts > 0)
    r_of = np.repeat(counts, counts)
    place = np.arange(ranks.size) - np.repeat(positives.indptr[:-1], counts)
    within = ranks <= r_of
    precision_here = np.where(within, (place + 1) / ranks, 0.0)
    starts = positives.indptr[:-1][has]
    hits = np.add.reduceat(within.astype(np.float64), starts) if ranks.size else np.zeros(0)
    precision_sum = np.add.reduceat(precision_here, starts) if ranks.size else np.zeros(0)
    r = counts[has].astype(np.float64)
    return QueryFigures(
        queries=has.astype(np.int64),
        first_rank=ranks[starts] if ranks.size else np.zeros(0, np.int64),
        r_precision=hits / r,
        map_at_r=precision_sum / r,
    )
