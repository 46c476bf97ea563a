"""Top k over score matrices: exact scoring in bounded blocks, FAISS's heap to select. No Django.

Used where every candidate is scored (evaluation's ranked retrieval, model top-k
sampling); ``sampling.search.index`` searches a space's nearest neighbours.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

# Bytes of column ids handed to the FAISS heap at a time (heap_top).
HEAP_IDS_BYTES = 8 * 1024 * 1024
# Bytes of one block of scores: bounds memory for any size (a full 25k x 25k float32
# matrix would be 2.5 GB).
SCORE_BLOCK_BYTES = 64 * 1024 * 1024


def score_blocks(
    queries: np.ndarray, candidates: np.ndarray, *, exclude: np.ndarray | None = None, block_rows: int | None = None
) -> Iterator[tuple[int, int, np.ndarray]]:
    """(start, stop, scores float32 (stop - start, n)) for consecutive blocks of queries:
    dot products with every candidate, ``exclude[i]`` (a candidate per query, -1 for
    none) set to -inf. Blocks of ``block_rows`` queries, by default as many as fit in
    SCORE_BLOCK_BYTES."""
    q, n = queries.shape[0], candidates.shape[0]
    block_rows = block_rows or max(1, SCORE_BLOCK_BYTES // (4 * max(n, 1)))
    for start in range(0, q, block_rows):
        stop = min(start + block_rows, q)
        scores = queries[start:stop] @ candidates.T
        if exclude is not None:
            own = np.asarray(exclude[start:stop])
            keep = own >= 0
            scores[np.arange(stop - start)[keep], own[keep]] = -np.inf
        yield start, stop, scores


def exact_top_k(queries: np.ndarray, candidates: np.ndarray, k: int, exclude: np.ndarray | None = None) -> np.ndarray:
    """The ``k`` best-scoring candidates of every query, best first: int64 (q, k).

    queries: float (q, d), candidates: float (n, d), scores are dot products (cosines for
    L2-normalized rows); exclude: int (q,), a candidate to leave out per query (the query
    itself when both are one space), -1 for none. Within the top k, equal scores keep the
    lower index first. A block of queries at a time, so memory stays bounded for any size.
    """
    x = np.ascontiguousarray(candidates, dtype=np.float32)
    n = x.shape[0]
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if k > n - (exclude is not None):
        raise ValueError(f"k={k} but only {n - (exclude is not None)} candidates")
    out = np.empty((queries.shape[0], k), dtype=np.int64)
    for start, stop, sims in score_blocks(np.asarray(queries, dtype=np.float32), x, exclude=exclude):
        out[start:stop] = top_k_of_scores(sims, k)
    return out


def heap_top(sims: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` highest scores of every row of ``sims`` float (b, n), k <= n: (columns
    int64 (b, k), scores float32 (b, k)), highest first (the order of equal scores is
    FAISS's).

    FAISS's heap picks them (a select over every row with numpy's argpartition costs
    tens of times more), a few rows at a time so the column ids it needs stay small.
    """
    import faiss

    b, n = sims.shape
    if k > n:
        raise ValueError(f"the top {k} of {n} columns asked for")
    if b == 0 or k == 0:
        return np.empty((b, k), np.int64), np.empty((b, k), np.float32)
    scores = np.ascontiguousarray(sims, dtype=np.float32)
    rows = max(1, min(b, HEAP_IDS_BYTES // (8 * n)))
    ids = np.ascontiguousarray(np.broadcast_to(np.arange(n, dtype=np.int64), (rows, n)))
    top = np.empty((b, k), np.int64)
    values = np.empty((b, k), np.float32)
    for start in range(0, b, rows):
        stop = min(start + rows, b)
        heap = faiss.ResultHeap(stop - start, k, keep_max=True)
        heap.add_result(scores[start:stop], ids[: stop - start])
        heap.finalize()
        top[start:stop], values[start:stop] = heap.I, heap.D
    return top, values


def ties_by_column(top: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``top`` int64 (b, k) reordered best first, equal scores lower column first."""
    order = np.lexsort((top, -values), axis=1)
    return np.take_along_axis(top, order, axis=1)


def top_k_of_scores(sims: np.ndarray, k: int) -> np.ndarray:
    """The columns of the ``k`` highest scores of every row of ``sims`` float (b, n), best
    first (equal scores within the top k: lower column first): int64 (b, k), k <= n."""
    return ties_by_column(*heap_top(sims, k))
