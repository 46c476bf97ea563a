"""IVF-PQ: the IVF self-join with each row stored as a product-quantizer code. No Django.

IVF-Flat keeps every row's full vector in the index a search scans (4 bytes a
dimension: 1 GiB for 1,000,000 rows of 256-d). IVF-PQ stores a row as ``m`` bytes
instead (FAISS ``IndexIVFPQ``, 8 bits per sub-quantizer, residuals to the row's cell),
so a worker searching 100,000,000 rows holds their codes (a few GiB), not 100 GB of
vectors. Its scores are approximate; with ``refine`` the best ``want * refine``
candidates of each query are scored again on their exact vectors (read from the mapped
file for those rows only), which brings recall back close to IVF-Flat's.

The cells are the IVF ones (``sampling.index.ivf_train``) and rows keep their IVF cell
and probes, so IVF and IVF-PQ differ only in how a probed cell is scanned. The codebook
is trained once per space from a seeded sample and stored, like the cells. The same
vectors, cells, codebook and shard rows always give the same neighbours: FAISS scans
each query on its own, and the shards' query blocks do not depend on the worker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from sampling.index import IndexConfig

# Bits per sub-quantizer code: 256 centroids each, one byte a code.
PQ_BITS = 8
PQ_CENTROIDS = 1 << PQ_BITS
# FAISS trains each sub-quantizer's 256 centroids on at most 256 points each; more are
# subsampled by FAISS anyway, so the sample is capped here, where the seed decides.
PQ_TRAIN_ROWS = 256 * PQ_CENTROIDS
# Queries per FAISS call and per block of refined candidates: (4,096 x 24 x 256) float32
# candidate vectors are 100 MB.
QUERY_BLOCK = 4_096


class PqTrainingError(ValueError):
    """Too few rows to train a codebook. The message says how many are needed."""


def pq_codebook(x: np.ndarray, cells: np.ndarray, config: IndexConfig) -> np.ndarray:
    """The codebook of x float (n, d) in ``cells``: float32 (m, 256, d // m), a function
    of ``pq_codebook_rows``, the cells and the settings alone."""
    return pq_train(pq_codebook_rows(x, config), cells, config.pq_m_for(x.shape[1]), config.seed)


def pq_codebook_rows(x: np.ndarray, config: IndexConfig) -> np.ndarray:
    """The rows the codebook trains on: part of the IVF training sample, float32 (r, d)."""
    from sampling.index import ivf_training_sample

    return pq_training_rows(ivf_training_sample(x, config), config.seed)


def pq_training_rows(sample: np.ndarray, seed: int) -> np.ndarray:
    """At most PQ_TRAIN_ROWS rows of the IVF training sample float32 (m, d), drawn with
    the seed's own stream: the codebook's training rows."""
    if len(sample) <= PQ_TRAIN_ROWS:
        return np.asarray(sample, dtype=np.float32)
    rng = np.random.default_rng([seed, 2])
    return np.asarray(sample[np.sort(rng.choice(len(sample), size=PQ_TRAIN_ROWS, replace=False))], dtype=np.float32)


def pq_train(rows: np.ndarray, cells: np.ndarray, m: int, seed: int) -> np.ndarray:
    """The codebook for residuals of ``rows`` float32 (r, d) to their nearest of
    ``cells`` float32 (nlist, d): float32 (m, 256, d // m), trained on one thread
    (FAISS's k-means, seeded) so that it is the same on every machine run."""
    from sampling.index import single_thread

    if len(rows) < PQ_CENTROIDS:
        raise PqTrainingError(
            f"an IVF-PQ codebook needs at least {PQ_CENTROIDS} training rows, this space has {len(rows)}: "
            "search it with ivf or exact"
        )
    index = _empty_index(cells, m)
    index.pq.cp.seed = seed
    with single_thread():
        index.train(np.ascontiguousarray(rows, dtype=np.float32))
    import faiss

    return faiss.vector_to_array(index.pq.centroids).reshape(m, PQ_CENTROIDS, cells.shape[1] // m)


def pq_index(cells: np.ndarray, codebook: np.ndarray):
    """An empty, trained FAISS IndexIVFPQ (inner product, residuals) of these cells and codebook."""
    import faiss

    m = codebook.shape[0]
    if codebook.shape != (m, PQ_CENTROIDS, cells.shape[1] // m) or cells.shape[1] % m:
        raise ValueError(f"a codebook of shape {codebook.shape} does not fit cells of shape {cells.shape}")
    index = _empty_index(cells, m)
    faiss.copy_array_to_vector(np.ascontiguousarray(codebook, dtype=np.float32).ravel(), index.pq.centroids)
    index.is_trained = True
    return index


def pq_encode(index, rows: np.ndarray, own_cell: np.ndarray) -> np.ndarray:
    """Codes of ``rows`` float (r, d) stored in cells ``own_cell`` int (r,): uint8 (r, m)."""
    from faiss import swig_ptr

    x = np.ascontiguousarray(rows, dtype=np.float32)
    cells = np.ascontiguousarray(own_cell, dtype=np.int64)
    codes = np.empty((len(x), index.code_size), dtype=np.uint8)
    index.encode_vectors(len(x), swig_ptr(x), swig_ptr(cells), swig_ptr(codes), False)
    return codes


def pq_fill(index, codes: np.ndarray, own_cell: np.ndarray) -> None:
    """Store row ``i``'s code ``codes[i]`` uint8 (n, m) in cell ``own_cell[i]``, with id ``i``."""
    from faiss import swig_ptr

    from sampling.index import by_cell

    starts, order = by_cell(np.asarray(own_cell, dtype=np.int64), index.nlist)
    ids = np.ascontiguousarray(order, dtype=np.int64)
    ordered = np.ascontiguousarray(codes[order])
    for cell in np.flatnonzero(starts[:-1] < starts[1:]):
        first, last = starts[cell], starts[cell + 1]
        index.invlists.add_entries(int(cell), int(last - first), swig_ptr(ids[first:]), swig_ptr(ordered[first:]))
    index.ntotal = len(codes)


def search_pq_rows(
    index, x: np.ndarray, cells: np.ndarray, probes: np.ndarray, start: int, want: int, refine: int
) -> tuple[np.ndarray, np.ndarray]:
    """The ``want`` best rows (itself included) of queries start .. start+len(probes)-1.

    index: a filled ``pq_index``; x: float32 (n, d), every row (only the queries and,
    with ``refine``, their candidates are read); probes: int (q, nprobe) of the queries.
    Returns int64 ids and float32 sims (q, want), best first, ties in id order, -1 / -inf
    where the probed cells held fewer rows. Sims are exact with ``refine`` (the best
    ``want * refine`` by code rescored on their vectors), approximate without.
    """
    from sampling.index import keep_best

    q = len(probes)
    ids = np.empty((q, want), dtype=np.int64)
    sims = np.empty((q, want), dtype=np.float32)
    candidates = want * max(refine, 1)
    index.nprobe = probes.shape[1]
    for first in range(0, q, QUERY_BLOCK):
        last = min(first + QUERY_BLOCK, q)
        queries = np.ascontiguousarray(x[start + first : start + last], dtype=np.float32)
        probed = np.ascontiguousarray(probes[first:last], dtype=np.int64)
        # Each probed cell's score, the offset FAISS adds to a residual's code score.
        offsets = np.einsum("qd,qpd->qp", queries, cells[probed]).astype(np.float32)
        found_sims, found_ids = index.search_preassigned(queries, candidates, probed, offsets)
        if refine:
            found_sims = _exact_scores(x, queries, found_ids)
        found_sims[found_ids < 0] = -np.inf
        ids[first:last], sims[first:last] = keep_best(found_ids, found_sims, want)
    return ids, sims


def _exact_scores(x: np.ndarray, queries: np.ndarray, found_ids: np.ndarray) -> np.ndarray:
    """float32 (q, c): each query's dot product with its candidates' vectors (rows read
    in file order, each once)."""
    wanted, where = np.unique(np.maximum(found_ids, 0), return_inverse=True)
    vectors = np.asarray(x[wanted], dtype=np.float32)
    return np.einsum("qd,qcd->qc", queries, vectors[where.reshape(found_ids.shape)]).astype(np.float32)


def _empty_index(cells: np.ndarray, m: int):
    import faiss

    nlist, d = cells.shape
    quantizer = faiss.IndexFlatIP(d)
    quantizer.add(np.ascontiguousarray(cells, dtype=np.float32))
    index = faiss.IndexIVFPQ(quantizer, d, nlist, m, PQ_BITS, faiss.METRIC_INNER_PRODUCT)
    # The index owns its quantizer (it would be freed with this frame's Python object).
    index.own_fields = True
    quantizer.this.disown()
    return index
