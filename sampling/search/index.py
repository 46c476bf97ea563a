"""Nearest-neighbour search over L2-normalized vectors: FAISS, and an IVF self-join. No Django.

Cosine similarity is the inner product of L2-normalized rows. Every search here is a
self-join (each row's nearest other rows), which is what pair sampling needs. Small
sets are searched exactly (FAISS ``IndexFlatIP``); above ``exact_max`` rows an
approximate index is used:

- ``ivf``: an inverted file, searched the way FAISS ``IndexIVFFlat`` searches: seeded
  spherical k-means makes ``nlist`` cells, each row is stored in its nearest cell and
  looks for its neighbours in its ``nprobe`` nearest cells. Because every row is also a
  query, the scan runs cell by cell: one matrix product compares a cell's rows with all
  rows that probe it, instead of one scattered scan per query. Training, assignment and
  scan are such products (numpy BLAS), which keeps 1,000,000 rows within minutes.
- ``ivfpq``: the same cells and probes, each row stored as a product-quantizer code
  (``sampling.search.pq``): for spaces whose vectors outgrow a worker's memory; with
  ``ivfpq_refine`` the best candidates are rescored on their exact vectors.
- ``hnsw``: FAISS ``IndexHNSWFlat``. Its graph depends on insertion order, so it is built
  on one thread to stay reproducible (slow to build, fast per query).

Exact, IVF and IVF-PQ search run in row shards (``sampling.search.shards``): in this process one after
the other, or on many Celery workers for a large space, with the same result. The same
vectors, ``k`` and configuration always give the same neighbours."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields

import numpy as np

INDEX_KINDS = ("auto", "exact", "ivf", "ivfpq", "hnsw")
APPROXIMATE_KINDS = ("ivf", "ivfpq", "hnsw")
# Kinds searched in IVF cells (trained by ivf_train).
CELL_KINDS = ("ivf", "ivfpq")

# k-means places cells badly with fewer training points per cell than this.
MIN_TRAIN_PER_LIST = 39
# Rows per matrix product block: a (block, nlist) float32 product stays small (4,096 rows
# assigned 131,072 rows to 2,828 cells in 4.2 s, 16,384 in 6.7 s: the product's
# selection then reads memory that is still in cache).
BLOCK_ROWS = 4_096


class IndexConfigError(ValueError):
    """An index setting out of range. The message names the setting."""


@dataclass(frozen=True)
class IndexConfig:
    """How to search. ``kind="auto"`` is exact up to ``exact_max`` rows, else ``approximate``."""

    kind: str = "auto"
    approximate: str = "ivf"
    exact_max: int = 20_000
    ivf_nlist: int = 0  # 0: about 2 * sqrt(n) cells
    ivf_nprobe: int = 6
    # k-means on 100 rows per cell for 20 rounds: at 2,000,000 rows 40 for 10 left
    # cells that split clusters (recall@5 .91 at nprobe 6, .97 with these).
    ivf_train_per_list: int = 100
    ivf_niter: int = 20
    # IVF-PQ: bytes per row (sub-quantizers of 8 bits; 0: about one per 8 dimensions,
    # a divisor of the dimension) and how many times ``k + 1`` candidates per query are
    # rescored on their exact vectors (0: none, scores from the codes alone). Recall@5 at
    # 2,000,000 clustered 256-d rows (bench-sampling-distributed): .563 without, .933 at
    # 4, .969 at 8, .974 at 16 (IVF-Flat's .974 is the ceiling the probes set).
    ivfpq_m: int = 0
    ivfpq_refine: int = 8
    hnsw_m: int = 32
    hnsw_ef_construction: int = 80
    hnsw_ef_search: int = 96
    seed: int = 1234
    query_chunk: int = 65_536
    # Rows per shard of a sharded (exact, IVF, IVF-PQ) self-join, in one process or on many
    # workers; a multiple of BLOCK_ROWS keeps the assignment's products whole.
    shard_rows: int = 64 * BLOCK_ROWS
    # A batch searches in a Celery chord of shards from this many rows of a space on
    # (services mode); below it, and in the embedded mode, in its own task.
    chord_min_rows: int = 200_000
    # Deliveries of one shard before the batch fails (a worker that died counts).
    shard_max_attempts: int = 3

    def __post_init__(self) -> None:
        if self.kind not in INDEX_KINDS:
            raise IndexConfigError(f"index kind must be one of {', '.join(INDEX_KINDS)}, got {self.kind!r}")
        if self.approximate not in APPROXIMATE_KINDS:
            raise IndexConfigError(
                f"approximate index must be one of {', '.join(APPROXIMATE_KINDS)}, got {self.approximate!r}"
            )
        for name in (
            "exact_max",
            "ivf_nprobe",
            "ivf_niter",
            "hnsw_m",
            "hnsw_ef_construction",
            "hnsw_ef_search",
            "query_chunk",
            "shard_rows",
            "chord_min_rows",
            "shard_max_attempts",
        ):
            if getattr(self, name) < 1:
                raise IndexConfigError(f"index setting {name} must be at least 1, got {getattr(self, name)}")
        for name in ("ivfpq_m", "ivfpq_refine"):
            if getattr(self, name) < 0:
                raise IndexConfigError(f"index setting {name} must be 0 or positive, got {getattr(self, name)}")
        if self.ivf_nlist < 0:
            raise IndexConfigError(f"index setting ivf_nlist must be 0 (automatic) or positive, got {self.ivf_nlist}")
        if self.ivf_train_per_list < MIN_TRAIN_PER_LIST:
            raise IndexConfigError(
                f"index setting ivf_train_per_list must be at least {MIN_TRAIN_PER_LIST}, got {self.ivf_train_per_list}"
            )

    @classmethod
    def from_mapping(cls, values: Mapping[str, object]) -> IndexConfig:
        """Build from a settings dict; unknown keys are an error, not ignored."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise IndexConfigError(f"unknown index setting(s): {', '.join(unknown)}")
        return cls(**values)  # type: ignore[arg-type]

    def as_dict(self) -> dict:
        return asdict(self)

    def kind_for(self, n: int) -> str:
        """The index actually used for ``n`` rows: exact, ivf, ivfpq or hnsw."""
        if self.kind == "auto":
            return "exact" if n <= self.exact_max else self.approximate
        return self.kind

    def nlist_for(self, n: int) -> int:
        """IVF cell count for ``n`` rows, capped so every cell gets enough training points."""
        wanted = self.ivf_nlist or max(1, int(2 * math.sqrt(n)))
        return max(1, min(wanted, n // MIN_TRAIN_PER_LIST))

    def pq_m_for(self, d: int) -> int:
        """IVF-PQ sub-quantizers (bytes per row) for ``d`` dimensions: ``ivfpq_m``, which
        must divide ``d``, or by default the divisor of ``d`` nearest ``d / 8`` (the larger
        of two as near) among those from ``d / 16`` to ``d / 4`` (at least 1); a dimension
        with none there (a prime one from 17 on, say) needs ``ivfpq_m`` set."""
        if self.ivfpq_m:
            if d % self.ivfpq_m:
                raise IndexConfigError(f"index setting ivfpq_m={self.ivfpq_m} must divide the dimension {d}")
            return self.ivfpq_m
        low, high = max(1.0, d / 16), max(1.0, d / 4)
        near = [m for m in range(1, d + 1) if d % m == 0 and low <= m <= high]
        if not near:
            raise IndexConfigError(
                f"the dimension {d} has no divisor from {low:g} to {high:g} (about a byte per 8 dimensions): "
                "set ivfpq_m to a divisor"
            )
        return min(near, key=lambda m: (abs(m - d / 8), -m))


def exact_neighbours(vectors: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    """Exact ``k`` nearest other rows for the given query rows: int64 (len(queries), k).

    vectors: float (n, d) L2-normalized; queries: int row numbers into ``vectors``. The
    ground truth that approximate results are measured against; compares each query
    with every row, a block of queries at a time.
    """
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    queries = np.asarray(queries, dtype=np.int64)
    want = min(k + 1, x.shape[0])
    block = max(1, (1 << 26) // x.shape[0])  # about 256 MB of similarities per block
    ids = np.empty((len(queries), want - 1), dtype=np.int64)
    for start in range(0, len(queries), block):
        rows = queries[start : start + block]
        sims = x[rows] @ x.T
        found_ids, found_sims = keep_best(np.broadcast_to(np.arange(x.shape[0]), sims.shape), sims, want)
        ids[start : start + block] = drop_self(found_ids, found_sims, rows, k)[0]
    return pad(ids, np.zeros(ids.shape, dtype=np.float32), k)[0]


def recall_at_k(found: np.ndarray, truth: np.ndarray) -> float:
    """Mean share of each row's true neighbours that were found. Both int (q, k); -1 is no id."""
    if found.shape != truth.shape:
        raise ValueError(f"shapes differ: found {found.shape}, truth {truth.shape}")
    hits = 0
    total = 0
    for got, want in zip(found, truth, strict=True):
        want_set = set(want[want >= 0].tolist())
        hits += len(want_set.intersection(got[got >= 0].tolist()))
        total += len(want_set)
    return hits / total if total else 1.0


def hnsw_index(x: np.ndarray, config: IndexConfig):
    """A filled HNSW FAISS index over x: float32 (n, d), C-contiguous."""
    import faiss

    index = faiss.IndexHNSWFlat(x.shape[1], config.hnsw_m, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = config.hnsw_ef_construction
    with single_thread():
        index.add(x)
    index.hnsw.efSearch = config.hnsw_ef_search
    return index


def ivf_cells(x: np.ndarray, config: IndexConfig) -> np.ndarray:
    """Seeded spherical k-means centroids for x: float32 (nlist, d), rows L2-normalized
    (``ivf_train`` on ``ivf_training_sample``)."""
    return ivf_train(ivf_training_sample(x, config), config.nlist_for(x.shape[0]), config)


def ivf_training_sample(x: np.ndarray, config: IndexConfig) -> np.ndarray:
    """The ``nlist * ivf_train_per_list`` rows of x (all, if fewer) that k-means trains
    on, drawn with the seed: float32 (m, d). The cells are a function of this sample,
    ``nlist`` and the config alone, so the sample keys a store of trained cells."""
    n = x.shape[0]
    rng = np.random.default_rng(config.seed)
    size = min(n, config.nlist_for(n) * config.ivf_train_per_list)
    return np.asarray(x[np.sort(rng.choice(n, size=size, replace=False))], dtype=np.float32)


def ivf_train(train: np.ndarray, nlist: int, config: IndexConfig) -> np.ndarray:
    """Spherical k-means on ``train`` float32 (m, d): centroids float32 (nlist, d).

    Starts from ``nlist`` training rows drawn with a stream of the seed's own (not
    the sample's, so trained cells can be stored and found again by the sample); a cell
    that loses all its points keeps its previous centroid.
    """
    rng = np.random.default_rng([config.seed, 1])
    centroids = train[np.sort(rng.choice(len(train), size=nlist, replace=False))].copy()
    for _ in range(config.ivf_niter):
        nearest = top_cells(train, centroids, 1)[:, 0]
        order = np.argsort(nearest, kind="stable")
        starts = np.searchsorted(nearest[order], np.arange(nlist + 1))
        filled = starts[:-1] < starts[1:]
        sums = np.add.reduceat(train[order], starts[:-1][filled], axis=0)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        moved = norms[:, 0] > 0
        updated = centroids[filled]
        updated[moved] = sums[moved] / norms[moved]
        centroids[filled] = updated
    return centroids


def top_cells(x: np.ndarray, centroids: np.ndarray, nprobe: int) -> np.ndarray:
    """int64 (n, nprobe): each row's most similar centroids, best first (ties by cell number)."""
    out = np.empty((x.shape[0], nprobe), dtype=np.int64)
    last = centroids.shape[0] - nprobe
    for start in range(0, x.shape[0], BLOCK_ROWS):
        sims = x[start : start + BLOCK_ROWS] @ centroids.T
        if nprobe == 1:
            out[start : start + BLOCK_ROWS, 0] = np.argmax(sims, axis=1)
            continue
        top = np.argpartition(sims, last, axis=1)[:, last:]
        out[start : start + BLOCK_ROWS] = np.take_along_axis(top, _best_first(top, np.take_along_axis(sims, top, 1)), 1)
    return out


def keep_best(ids: np.ndarray, sims: np.ndarray, want: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``want`` best columns of each row, best first (ties by id, -1 ids last)."""
    if ids.shape[1] > want:
        top = np.argpartition(sims, ids.shape[1] - want, axis=1)[:, ids.shape[1] - want :]
        ids, sims = np.take_along_axis(ids, top, axis=1), np.take_along_axis(sims, top, axis=1)
    order = _best_first(ids, sims)
    return np.take_along_axis(ids, order, axis=1), np.take_along_axis(sims, order, axis=1)


def by_cell(cells: np.ndarray, nlist: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR grouping: (starts (nlist + 1,), positions of ``cells`` sorted by cell)."""
    order = np.argsort(cells, kind="stable")
    return np.searchsorted(cells[order], np.arange(nlist + 1)), order


def _best_first(ids: np.ndarray, sims: np.ndarray) -> np.ndarray:
    """Per-row column order: highest similarity first, equal ones by id, -1 ids last."""
    missing = ids < 0
    return np.lexsort((np.where(missing, np.iinfo(np.int64).max, ids), -sims, missing), axis=-1)


def pad(ids: np.ndarray, sims: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    if ids.shape[1] == k:
        return ids, sims
    pad = k - ids.shape[1]
    return (
        np.concatenate([ids, np.full((len(ids), pad), -1, dtype=np.int64)], axis=1),
        np.concatenate([sims, np.full((len(sims), pad), -np.inf, dtype=np.float32)], axis=1),
    )


@contextmanager
def single_thread() -> Iterator[None]:
    """FAISS on one thread (its results then do not depend on the machine's cores)."""
    import faiss

    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


def drop_self(
    found_ids: np.ndarray, found_sims: np.ndarray, query_rows: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Remove each query's own row from its results and keep at most ``k`` columns.

    found_*: (q, m) search results; query_rows: int (q,). When the query is not among
    its results (exact duplicates can push it out) the last column is dropped instead.
    """
    is_self = found_ids == query_rows[:, None]
    # A stable sort on the boolean mask moves the query's own column to the end and keeps
    # the order of the others.
    order = np.argsort(is_self, axis=1, kind="stable")
    keep = min(k, found_ids.shape[1] - 1)
    ids = np.take_along_axis(found_ids, order, axis=1)[:, :keep].astype(np.int64, copy=False)
    sims = np.take_along_axis(found_sims, order, axis=1)[:, :keep].astype(np.float32, copy=False)
    # faiss marks a missing result with id -1 and a huge negative score; make it -inf.
    sims[ids < 0] = -np.inf
    return ids, sims
