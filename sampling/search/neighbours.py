"""The nearest neighbours of every vector among the others (cosine, vectors L2-normalised),
by the index kind the configuration picks: exact or cell-sharded (``sampling.search.shards``),
or HNSW. The search package's entry; pure numpy and faiss, no Django."""

from __future__ import annotations

import numpy as np

from sampling.search.index import CELL_KINDS, IndexConfig, drop_self, hnsw_index, ivf_cells, pad
from sampling.search.pq import pq_codebook
from sampling.search.shards import SHARDED_KINDS, SearchPlan, self_join


def nearest_neighbours(
    vectors: np.ndarray,
    k: int,
    config: IndexConfig | None = None,
    cells: np.ndarray | None = None,
    codebook: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` most similar other rows of every row.

    vectors: float (n, d), rows L2-normalized. Returns ``(ids, sims)``: int64 (n, k) row
    numbers, best first, and float32 (n, k) cosine similarities (IVF-PQ without refine:
    estimates from the codes). A row is never its own
    neighbour (also when another row is an exact duplicate of it). Where fewer than
    ``k`` others are found (``n - 1 < k``, or an approximate index came up short) the
    row is padded with id -1 and similarity -inf. ``cells`` and ``codebook`` (IVF,
    IVF-PQ) are trained here when not given.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    if x.ndim != 2 or x.shape[0] == 0:
        raise ValueError(f"expected a non-empty 2-D array (n, d), got shape {x.shape}")
    config = config or IndexConfig()
    n = x.shape[0]
    kind = config.kind_for(n)
    if kind in SHARDED_KINDS:
        if kind in CELL_KINDS and cells is None:
            cells = ivf_cells(x, config)
        if kind == "ivfpq" and codebook is None:
            codebook = pq_codebook(x, cells, config)
        return self_join(x, search_plan(n, x.shape[1], k, config, cells), cells, codebook)
    # HNSW: one graph over every row, searched a chunk of queries at a time.
    want = min(k + 1, n)
    index = hnsw_index(x, config)
    ids = np.empty((n, want - 1), dtype=np.int64)
    sims = np.empty((n, want - 1), dtype=np.float32)
    for start in range(0, n, config.query_chunk):
        stop = min(start + config.query_chunk, n)
        found_sims, found_ids = index.search(x[start:stop], want)
        ids[start:stop], sims[start:stop] = drop_self(found_ids, found_sims, np.arange(start, stop), k)
    return pad(ids, sims, k)


def search_plan(n: int, d: int, k: int, config: IndexConfig, cells: np.ndarray | None = None) -> SearchPlan:
    """The sharded self-join of ``n`` rows under ``config`` (exact, or IVF or IVF-PQ with ``cells``)."""
    kind = config.kind_for(n)
    nprobe = min(config.ivf_nprobe, len(cells)) if kind in CELL_KINDS else 0
    return SearchPlan(
        rows=n,
        dim=d,
        k=k,
        kind=kind,
        shard_rows=config.shard_rows,
        nprobe=nprobe,
        query_chunk=config.query_chunk,
        refine=config.ivfpq_refine if kind == "ivfpq" else 0,
    )
