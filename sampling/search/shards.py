"""A self-join cut into row shards that any process can run, in any order. No Django.

Every row is a query (see ``sampling.search.index``). Rows are cut into shards of
``shard_rows`` consecutive rows; a shard's answer depends only on the vectors, the
IVF cells and its own rows, so running the shards one after the other in one process
(``self_join``) and on many workers (files in a run folder, merged at the end) gives
the same neighbours, whatever the number of workers or the order shards finish in.

IVF runs in two stages: ``assign`` (each row's ``nprobe`` nearest cells, per shard)
and ``search`` (each query's probed cells scanned cell by cell, per shard; the scan
needs every row's own cell, which the assign stage wrote). IVF-PQ has the same stages;
its assign shards also encode their rows (``sampling.search.pq``) and its search shards hold
every row's code instead of every row's vector. Exact search has the search stage only.

A run folder holds ``plan.json``, ``vectors.npy`` (float32 (n, d), L2-normalized, read
memory mapped by every shard), ``cells.npy`` (IVF centroids), ``codebook.npy``
(IVF-PQ), ``probes-NNNNN.npy``, ``codes-NNNNN.npy`` (IVF-PQ) and ``found-NNNNN.npy``.
Each file appears under its final name only when complete, so a shard whose worker
died is simply run again.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from sampling.search.index import by_cell, drop_self, keep_best, pad, top_cells
from sampling.search.pq import pq_encode, pq_fill, pq_index, search_pq_rows

ASSIGN = "assign"
SEARCH = "search"
SHARDED_KINDS = ("exact", "ivf", "ivfpq")


@dataclass(frozen=True)
class SearchPlan:
    """One space's sharded self-join: ``rows`` vectors of ``dim``, ``k`` neighbours each."""

    rows: int
    dim: int
    k: int
    kind: str
    shard_rows: int
    nprobe: int = 0
    query_chunk: int = 65_536
    # A stored .npy every worker maps as it is (a space's own file); "": the folder's vectors.npy.
    vectors_file: str = ""
    # IVF-PQ: candidates rescored on exact vectors, as a multiple of ``want`` (0: none).
    refine: int = 0

    def __post_init__(self) -> None:
        if self.kind not in SHARDED_KINDS:
            raise ValueError(f"only {', '.join(SHARDED_KINDS)} search run in shards, not {self.kind!r}")
        if self.shard_rows < 1:
            raise ValueError(f"shard_rows must be at least 1, got {self.shard_rows}")

    @property
    def want(self) -> int:
        """Results kept per query before dropping the query itself."""
        return min(self.k + 1, self.rows)

    def ranges(self) -> list[tuple[int, int]]:
        return shard_ranges(self.rows, self.shard_rows)

    def stages(self) -> tuple[str, ...]:
        return (SEARCH,) if self.kind == "exact" else (ASSIGN, SEARCH)


def shard_ranges(n: int, shard_rows: int) -> list[tuple[int, int]]:
    """[(start, stop)] covering rows 0 .. n-1 in shards of ``shard_rows`` (the last may be shorter)."""
    return [(start, min(start + shard_rows, n)) for start in range(0, n, shard_rows)]


# --- one shard's work on arrays --------------------------------------------------------


def assign_rows(x: np.ndarray, start: int, stop: int, cells: np.ndarray, nprobe: int) -> np.ndarray:
    """Rows start..stop-1's ``nprobe`` nearest cells, best first: int32 (stop - start, nprobe)."""
    return top_cells(np.asarray(x[start:stop], dtype=np.float32), cells, nprobe).astype(np.int32)


def search_ivf_rows(
    x: np.ndarray, own_cell: np.ndarray, probes: np.ndarray, start: int, want: int, nlist: int
) -> tuple[np.ndarray, np.ndarray]:
    """The ``want`` best rows (itself included) of queries start .. start+len(probes)-1,
    found in their probed cells.

    x: float32 (n, d); own_cell: int (n,), the cell every row is stored in (its first
    probe, as IndexIVFFlat.add stores it); probes: int (q, nprobe) of the queries.
    Returns int64 ids and float32 sims (q, want), best first, ties in id order; -1 / -inf
    where the probed cells held fewer rows.
    """
    q, nprobe = probes.shape
    stored_in = by_cell(np.asarray(own_cell), nlist)
    visited_by = by_cell(np.asarray(probes, dtype=np.int64).ravel(), nlist)
    # Every (query, probe) visit keeps the best rows it found in that cell; a query's
    # visits are merged once, at the end, instead of after every cell.
    found_ids = np.full((q * nprobe, want), -1, dtype=np.int64)
    found_sims = np.full((q * nprobe, want), -np.inf, dtype=np.float32)
    for cell in range(nlist):
        visits = visited_by[1][visited_by[0][cell] : visited_by[0][cell + 1]]
        if not len(visits):
            continue
        stored = stored_in[1][stored_in[0][cell] : stored_in[0][cell + 1]]
        if not len(stored):
            continue
        # Entries of the flattened probe table; query number = entry // nprobe.
        sims = np.asarray(x[start + visits // nprobe], dtype=np.float32) @ np.asarray(x[stored], dtype=np.float32).T
        take = min(want, len(stored))
        top = np.argpartition(sims, len(stored) - take, axis=1)[:, len(stored) - take :]
        found_ids[visits, :take] = stored[top]
        found_sims[visits, :take] = np.take_along_axis(sims, top, axis=1)
    return keep_best(found_ids.reshape(q, nprobe * want), found_sims.reshape(q, nprobe * want), want)


def search_exact_rows(index, x: np.ndarray, start: int, stop: int, want: int, query_chunk: int):
    """Rows start..stop-1 searched in a filled FAISS flat index: (ids int64, sims float32)
    (stop - start, want), best first (FAISS's order)."""
    ids = np.empty((stop - start, want), dtype=np.int64)
    sims = np.empty((stop - start, want), dtype=np.float32)
    for first in range(start, stop, query_chunk):
        last = min(first + query_chunk, stop)
        found_sims, found_ids = index.search(np.ascontiguousarray(x[first:last], dtype=np.float32), want)
        ids[first - start : last - start], sims[first - start : last - start] = found_ids, found_sims
    return ids, sims


def flat_index(x: np.ndarray):
    import faiss

    index = faiss.IndexFlatIP(x.shape[1])
    index.add(np.ascontiguousarray(x, dtype=np.float32))
    return index


def final_rows(found_ids: np.ndarray, found_sims: np.ndarray, start: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """A shard's results without each query itself, padded to ``k`` columns."""
    rows = np.arange(start, start + len(found_ids))
    return pad(*drop_self(found_ids, found_sims, rows, k), k)


def self_join(
    x: np.ndarray, plan: SearchPlan, cells: np.ndarray | None, codebook: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Every shard of ``plan`` in order in this process: ids int64 and sims float32 (n, k)."""
    ranges = plan.ranges()
    parts = []
    if plan.kind != "exact":
        probes = np.concatenate([assign_rows(x, start, stop, cells, plan.nprobe) for start, stop in ranges])
    if plan.kind == "ivfpq":
        index = pq_index(cells, codebook)
        for start, stop in ranges:
            pq_fill(index, pq_encode(index, x, start, stop, probes[start:stop, 0]), probes[start:stop, 0], start)
        for start, stop in ranges:
            found = search_pq_rows(index, x, probes[start:stop], start, plan.want, plan.refine)
            parts.append(final_rows(*found, start, plan.k))
    elif plan.kind == "ivf":
        for start, stop in ranges:
            found = search_ivf_rows(x, probes[:, 0], probes[start:stop], start, plan.want, len(cells))
            parts.append(final_rows(*found, start, plan.k))
    else:
        index = flat_index(x)
        for start, stop in ranges:
            found = search_exact_rows(index, x, start, stop, plan.want, plan.query_chunk)
            parts.append(final_rows(*found, start, plan.k))
    return np.concatenate([ids for ids, _ in parts]), np.concatenate([sims for _, sims in parts])


# --- a run folder: the same work as files, one shard per call ---------------------------


def folder_prepare(
    folder: Path, vectors: np.ndarray, plan: SearchPlan, cells: np.ndarray | None, codebook: np.ndarray | None = None
) -> None:
    """Write the plan, the vectors (unless the plan names a stored file), the cells and
    the codebook every shard reads."""
    folder.mkdir(parents=True, exist_ok=True)
    if not plan.vectors_file:
        atomic_save(folder / "vectors.npy", np.asarray(vectors, dtype=np.float32))
    if plan.kind != "exact":
        atomic_save(folder / "cells.npy", np.asarray(cells, dtype=np.float32))
    if plan.kind == "ivfpq":
        atomic_save(folder / "codebook.npy", np.asarray(codebook, dtype=np.float32))
    text = json.dumps(asdict(plan), sort_keys=True)
    _atomic_write(folder / "plan.json", text.encode())


def folder_vectors(folder: Path, plan: SearchPlan) -> np.ndarray:
    """The vectors a folder's shards search, memory mapped: float32 (rows, dim)."""
    x = np.load(plan.vectors_file or folder / "vectors.npy", mmap_mode="r")
    if x.shape != (plan.rows, plan.dim) or x.dtype != np.float32:
        raise ValueError(
            f"{folder}: the vectors are {x.dtype} {x.shape}, the plan wants float32 {(plan.rows, plan.dim)}"
        )
    return x


def folder_plan(folder: Path) -> SearchPlan:
    return SearchPlan(**json.loads((folder / "plan.json").read_text()))


def shard_file(folder: Path, stage: str, number: int) -> Path:
    return folder / f"{'probes' if stage == ASSIGN else 'found'}-{number:05d}.npy"


def codes_file(folder: Path, number: int) -> Path:
    """An IVF-PQ assign shard's codes (written before its probes, which mark it done)."""
    return folder / f"codes-{number:05d}.npy"


def shard_run(folder: Path, stage: str, number: int) -> bool:
    """Run one shard of one stage from the folder's files; False when its file was
    already there (a repeated delivery does nothing)."""
    out = shard_file(folder, stage, number)
    if out.exists():
        return False
    plan = folder_plan(folder)
    start, stop = plan.ranges()[number]
    x = folder_vectors(folder, plan)
    if stage == ASSIGN:
        _assign_shard(folder, plan, x, number)
        return True
    if plan.kind != "exact":
        cells = np.load(folder / "cells.npy")
        probes = np.load(shard_file(folder, ASSIGN, number))
    if plan.kind == "ivfpq":
        found = _search_pq_shard(folder, plan, x, cells, probes, start)
    elif plan.kind == "ivf":
        own_cell = np.concatenate(
            [np.load(shard_file(folder, ASSIGN, i), mmap_mode="r")[:, 0] for i in range(len(plan.ranges()))]
        )
        found = search_ivf_rows(x, own_cell, probes, start, plan.want, len(cells))
    else:
        found = search_exact_rows(flat_index(x), x, start, stop, plan.want, plan.query_chunk)
    ids, _ = final_rows(*found, start, plan.k)
    atomic_save(out, ids)
    return True


def _assign_shard(folder: Path, plan: SearchPlan, x: np.ndarray, number: int) -> None:
    """An assign shard: its rows' probes (and for IVF-PQ their codes, written first: the
    probes file marks the shard done)."""
    start, stop = plan.ranges()[number]
    cells = np.load(folder / "cells.npy")
    probes = assign_rows(x, start, stop, cells, plan.nprobe)
    if plan.kind == "ivfpq":
        index = pq_index(cells, np.load(folder / "codebook.npy"))
        atomic_save(codes_file(folder, number), pq_encode(index, x, start, stop, probes[:, 0]))
    atomic_save(shard_file(folder, ASSIGN, number), probes)


def _search_pq_shard(
    folder: Path, plan: SearchPlan, x: np.ndarray, cells: np.ndarray, probes: np.ndarray, start: int
) -> tuple[np.ndarray, np.ndarray]:
    """An IVF-PQ search shard: every row's code in its cell (one assign shard's file at
    a time, so only the index and one file are held), then this shard's queries."""
    index = pq_index(cells, np.load(folder / "codebook.npy"))
    for number, (first, _) in enumerate(plan.ranges()):
        own_cell = np.load(shard_file(folder, ASSIGN, number), mmap_mode="r")[:, 0]
        pq_fill(index, np.load(codes_file(folder, number)), own_cell, first)
    return search_pq_rows(index, x, probes, start, plan.want, plan.refine)


def folder_neighbours(folder: Path) -> np.ndarray:
    """The merged result of a folder whose search shards all ran: int64 (n, k)."""
    plan = folder_plan(folder)
    missing = [i for i in range(len(plan.ranges())) if not shard_file(folder, SEARCH, i).exists()]
    if missing:
        raise FileNotFoundError(f"{folder}: search shard(s) {missing[:5]} have no result")
    return np.concatenate([np.load(shard_file(folder, SEARCH, i)) for i in range(len(plan.ranges()))])


def atomic_save(path: Path, array: np.ndarray) -> None:
    """np.save to a temporary file beside ``path``, then rename it into place."""
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as stream:
            np.save(stream, array, allow_pickle=False)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
