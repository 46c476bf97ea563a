"""IVF-PQ: the IVF self-join with each row stored as a product-quantizer code. No Django.

IVF-Flat's search shards scan every row's full vector (4 bytes a dimension: 1 GiB for
1,000,000 rows of 256-d, all of it read by every search shard). IVF-PQ stores a row as
``m`` bytes instead (FAISS ``IndexIVFPQ``, 8 bits per sub-quantizer, residuals to the
row's cell) plus its 8-byte id, so a search shard over 100,000,000 rows of 256-d holds
about 4 GB of codes and ids instead of scanning 102 GB of vectors; it reads its own queries' vectors
and, with ``refine``, the best ``want * refine`` candidates of each query, rescored on
their exact vectors (random reads of the mapped file), which brings recall back close
to IVF-Flat's. Without refine the scores (and neighbours) come from the codes alone.
An assign shard reads its own rows' vectors only.

The cells are the IVF ones (``sampling.search.index.ivf_train``) and rows keep their IVF cell
and probes, so IVF and IVF-PQ differ only in how a probed cell is scanned. The codebook
is trained once per space from a seeded sample and stored, like the cells. The same
vectors, cells, codebook and shard rows always give the same neighbours: FAISS scans
each query on its own, and the shards' query blocks do not depend on the worker.
"""

from __future__ import annotations

import numpy as np

from sampling.search.index import IndexConfig, by_cell, ivf_training_sample, keep_best, single_thread

# Bits per sub-quantizer code: 256 centroids each, one byte a code.
PQ_BITS = 8
PQ_CENTROIDS = 1 << PQ_BITS
# FAISS trains each sub-quantizer's 256 centroids on at most 256 points each; more are
# subsampled by FAISS anyway, so the sample is capped here, where the seed decides.
PQ_TRAIN_ROWS = 256 * PQ_CENTROIDS
# Bytes of candidate vectors rescored at a time (a block of queries' refine candidates):
# bounds memory for any k and dimension.
REFINE_BLOCK_BYTES = 64 * 1024 * 1024
# FAISS's k-means takes a 31-bit seed.
SEED_MASK = (1 << 31) - 1


class PqTrainingError(ValueError):
    """Too few rows to train a codebook. The message says how many are needed."""


def pq_codebook(x: np.ndarray, cells: np.ndarray, config: IndexConfig) -> np.ndarray:
    """The codebook of x float (n, d) in ``cells``: float32 (m, 256, d // m), a function
    of ``pq_codebook_rows``, the cells and the settings alone."""
    return pq_train(pq_codebook_rows(x, config), cells, config.pq_m_for(x.shape[1]), config.seed)


def pq_codebook_rows(x: np.ndarray, config: IndexConfig) -> np.ndarray:
    """The rows the codebook trains on: part of the IVF training sample, float32 (r, d)."""
    rows = pq_training_rows(ivf_training_sample(x, config), config.seed)
    if len(rows) < PQ_CENTROIDS:
        raise PqTrainingError(
            f"an IVF-PQ codebook trains on at least {PQ_CENTROIDS} rows; this space's {x.shape[0]} rows give "
            f"{len(rows)} (the IVF training sample, ivf_nlist x ivf_train_per_list): raise ivf_nlist or "
            "ivf_train_per_list, or search it with ivf or exact"
        )
    return rows


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
    import faiss

    if len(rows) < PQ_CENTROIDS:
        raise PqTrainingError(f"an IVF-PQ codebook trains on at least {PQ_CENTROIDS} rows, got {len(rows)}")
    index = _empty_index(cells, m)
    index.pq.cp.seed = seed & SEED_MASK
    with single_thread():
        index.train(np.ascontiguousarray(rows, dtype=np.float32))
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


def pq_encode(index, x: np.ndarray, start: int, stop: int, own_cell: np.ndarray) -> np.ndarray:
    """Codes of rows start..stop-1 of x float (n, d), stored in cells ``own_cell`` int
    (stop - start,): uint8 (stop - start, m). FAISS encodes a row on its own below
    16-d sub-vectors (the default m) and through BLAS from 16-d on, where the codes
    measured the same for calls of 1 to 5,000 rows on this machine's OpenBLAS."""
    from faiss import swig_ptr

    rows = np.ascontiguousarray(x[start:stop], dtype=np.float32)
    cells = np.ascontiguousarray(own_cell, dtype=np.int64)
    codes = np.empty((stop - start, index.code_size), dtype=np.uint8)
    index.encode_vectors(stop - start, swig_ptr(rows), swig_ptr(cells), swig_ptr(codes), False)
    return codes


def pq_fill(index, codes: np.ndarray, own_cell: np.ndarray, first_id: int = 0) -> None:
    """Append rows first_id .. first_id + len(codes) - 1 to their cells: row
    ``first_id + i``'s code ``codes[i]`` uint8 (r, m) to cell ``own_cell[i]``. Called
    shard by shard in row order, every cell's list holds its rows in id order."""
    from faiss import swig_ptr

    starts, order = by_cell(np.asarray(own_cell, dtype=np.int64), index.nlist)
    ids = np.ascontiguousarray(order + first_id, dtype=np.int64)
    ordered = np.ascontiguousarray(codes[order])
    for cell in np.flatnonzero(starts[:-1] < starts[1:]):
        first, last = starts[cell], starts[cell + 1]
        index.invlists.add_entries(int(cell), int(last - first), swig_ptr(ids[first:]), swig_ptr(ordered[first:]))
    index.ntotal += len(codes)


def search_pq_rows(
    index, x: np.ndarray, probes: np.ndarray, start: int, want: int, refine: int
) -> tuple[np.ndarray, np.ndarray]:
    """The ``want`` best rows (itself included) of queries start .. start+len(probes)-1.

    index: a filled ``pq_index``; x: float32 (n, d), every row (only the queries and,
    with ``refine``, their candidates are read); probes: int (q, nprobe) of the queries,
    the cells searched (FAISS's own assignment is not used). Returns int64 ids and
    float32 sims (q, want), best first, ties in id order, -1 / -inf where the probed
    cells held fewer rows. Sims are exact with ``refine`` (the best ``want * refine`` by
    code rescored on their vectors), estimates from the codes without.
    """
    q, d = len(probes), x.shape[1]
    ids = np.empty((q, want), dtype=np.int64)
    sims = np.empty((q, want), dtype=np.float32)
    candidates = want * max(refine, 1)
    block = max(1, REFINE_BLOCK_BYTES // (4 * candidates * d))
    index.nprobe = probes.shape[1]
    for first in range(0, q, block):
        last = min(first + block, q)
        queries = np.ascontiguousarray(x[start + first : start + last], dtype=np.float32)
        probed = np.ascontiguousarray(probes[first:last], dtype=np.int64)
        # No cell scores: for inner product FAISS scores the probed cells itself.
        found_sims, found_ids = index.search_preassigned(queries, candidates, probed, None)
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
    """An untrained IndexIVFPQ whose coarse quantizer holds ``cells`` (so FAISS's train
    trains the codebook only)."""
    import faiss

    nlist, d = cells.shape
    quantizer = faiss.IndexFlatIP(d)
    quantizer.add(np.ascontiguousarray(cells, dtype=np.float32))
    # FAISS's Python constructor keeps a reference to the quantizer.
    return faiss.IndexIVFPQ(quantizer, d, nlist, m, PQ_BITS, faiss.METRIC_INNER_PRODUCT)
