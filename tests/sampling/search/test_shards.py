"""The sharded self-join: shards in one process, and shards as files run in any order. No database."""

import numpy as np
import pytest

from sampling.search import shards
from sampling.search.index import IndexConfig, exact_neighbours, ivf_cells, recall_at_k
from sampling.search.neighbours import nearest_neighbours, search_plan
from sampling.search.pq import pq_codebook
from sampling.search.shards import (
    ASSIGN,
    SEARCH,
    SearchPlan,
    codes_file,
    folder_neighbours,
    folder_prepare,
    self_join,
    shard_file,
    shard_ranges,
    shard_run,
)
from tests.support.vectors import clustered

IVF = IndexConfig(kind="ivf", ivf_nlist=24, ivf_nprobe=3, seed=5)


def test_shard_ranges_cover_every_row_once():
    assert shard_ranges(10, 4) == [(0, 4), (4, 8), (8, 10)]
    assert shard_ranges(8, 4) == [(0, 4), (4, 8)]
    assert shard_ranges(3, 10) == [(0, 3)]


@pytest.mark.parametrize("kind", ["exact", "ivf", "ivfpq"])
@pytest.mark.parametrize("shard_rows", [1, 37, 250, 5_000])
def test_any_shard_size_gives_the_neighbours_of_one_shard(kind, shard_rows):
    x = clustered(1_200, 16, 12, seed=3)
    config = IndexConfig(**{**IVF.as_dict(), "kind": kind, "shard_rows": 100_000})
    whole, whole_sims = nearest_neighbours(x, 5, config)
    cut = IndexConfig(**{**config.as_dict(), "shard_rows": shard_rows})
    ids, sims = nearest_neighbours(x, 5, cut)
    np.testing.assert_array_equal(ids, whole)
    np.testing.assert_allclose(sims, whole_sims, atol=1e-6)
    assert not (ids == np.arange(len(x))[:, None]).any()


def test_sharded_ivf_keeps_its_recall():
    x = clustered(3_000, 16, 20, seed=4)
    config = IndexConfig(**{**IVF.as_dict(), "shard_rows": 256})
    ids, _ = nearest_neighbours(x, 5, config)
    queries = np.arange(0, 3_000, 7)
    assert recall_at_k(ids[queries], exact_neighbours(x, queries, 5)) >= 0.9


def prepared(tmp_path, kind, shard_rows=90, refine=4):
    x = clustered(700, 12, 9, seed=8)
    config = IndexConfig(**{**IVF.as_dict(), "kind": kind, "shard_rows": shard_rows, "ivfpq_refine": refine})
    cells = ivf_cells(x, config) if kind != "exact" else None
    codebook = pq_codebook(x, cells, config) if kind == "ivfpq" else None
    plan = search_plan(len(x), x.shape[1], 4, config, cells)
    folder = tmp_path / kind
    folder_prepare(folder, x, plan, cells, codebook)
    return folder, plan, x, (cells, codebook)


@pytest.mark.parametrize("kind", ["exact", "ivf", "ivfpq"])
def test_shards_run_from_files_in_any_order_give_what_one_process_gives(tmp_path, kind):
    folder, plan, x, trained = prepared(tmp_path, kind)
    shards = len(plan.ranges())
    assert shards == 8
    rng = np.random.default_rng(0)
    for stage in plan.stages():
        for number in rng.permutation(shards):
            assert shard_run(folder, stage, int(number)) is True
    expected, _ = self_join(x, plan, *trained)
    np.testing.assert_array_equal(folder_neighbours(folder), expected)
    # The in-process search of the same space and settings (training its own cells
    # and codebook): the same neighbours.
    config = IndexConfig(**{**IVF.as_dict(), "kind": kind, "shard_rows": 90, "ivfpq_refine": plan.refine or 4})
    np.testing.assert_array_equal(folder_neighbours(folder), nearest_neighbours(x, 4, config)[0])


def test_an_ivfpq_search_shard_without_refine_reads_no_vector_but_its_queries(tmp_path):
    folder, plan, _, _ = prepared(tmp_path, "ivfpq", refine=0)
    for number in range(len(plan.ranges())):
        shard_run(folder, ASSIGN, number)
    assert np.load(codes_file(folder, 0)).shape == (90, 2) and np.load(codes_file(folder, 0)).dtype == np.uint8
    shard_run(folder, SEARCH, 2)
    expected = np.load(shard_file(folder, SEARCH, 2))
    shard_file(folder, SEARCH, 2).unlink()
    # Every other row's vector spoiled: the shard scans codes, so it finds the same rows
    # (an IVF-Flat shard would score NaN; a refining one rescores its candidates).
    start, stop = plan.ranges()[2]
    vectors = np.load(folder / "vectors.npy", mmap_mode="r+")
    vectors[:start] = np.nan
    vectors[stop:] = np.nan
    vectors.flush()
    shard_run(folder, SEARCH, 2)
    np.testing.assert_array_equal(np.load(shard_file(folder, SEARCH, 2)), expected)


@pytest.mark.parametrize("kind", ["ivf", "ivfpq"])
def test_a_repeated_delivery_leaves_the_shard_file_as_it_is(tmp_path, kind):
    folder, plan, _, _ = prepared(tmp_path, kind)
    for number in range(len(plan.ranges())):
        shard_run(folder, ASSIGN, number)
    assert shard_run(folder, SEARCH, 2) is True
    written = shard_file(folder, SEARCH, 2)
    before = written.stat().st_mtime_ns
    assert shard_run(folder, SEARCH, 2) is False
    assert written.stat().st_mtime_ns == before
    assert not list(folder.glob("*.tmp"))


def test_an_ivfpq_assign_shard_marks_itself_done_only_after_its_codes(tmp_path, monkeypatch):
    folder, _, _, _ = prepared(tmp_path, "ivfpq")
    real_save = shards.atomic_save

    def save_but_not_codes(path, array):
        if path.name.startswith("codes-"):
            raise OSError("disk full")
        real_save(path, array)

    monkeypatch.setattr(shards, "atomic_save", save_but_not_codes)
    with pytest.raises(OSError, match="disk full"):
        shard_run(folder, ASSIGN, 3)
    # Without its codes the shard is not done: its probes are not there, so it runs again.
    assert not shard_file(folder, ASSIGN, 3).exists()
    monkeypatch.setattr(shards, "atomic_save", real_save)
    assert shard_run(folder, ASSIGN, 3) is True
    assert codes_file(folder, 3).exists() and shard_file(folder, ASSIGN, 3).exists()


def test_an_ivfpq_assign_shard_that_died_after_its_codes_runs_again_whole(tmp_path):
    folder, _, _, _ = prepared(tmp_path, "ivfpq")
    assert shard_run(folder, ASSIGN, 3) is True
    codes = np.load(codes_file(folder, 3))
    # Died between its two files: the codes are there, the probes that mark it done are not.
    shard_file(folder, ASSIGN, 3).unlink()
    codes_file(folder, 3).write_bytes(b"half")
    assert shard_run(folder, ASSIGN, 3) is True
    np.testing.assert_array_equal(np.load(codes_file(folder, 3)), codes)
    assert shard_file(folder, ASSIGN, 3).exists()


def test_the_merge_names_the_shards_without_a_result(tmp_path):
    folder, _, _, _ = prepared(tmp_path, "exact")
    for number in (0, 1, 2, 4, 5, 6):
        shard_run(folder, SEARCH, number)
    with pytest.raises(FileNotFoundError, match=r"search shard\(s\) \[3, 7\] have no result"):
        folder_neighbours(folder)


def test_only_exact_ivf_and_ivfpq_run_in_shards():
    with pytest.raises(ValueError, match="only exact, ivf, ivfpq search run in shards, not 'hnsw'"):
        SearchPlan(rows=10, dim=2, k=2, kind="hnsw", shard_rows=5)
    with pytest.raises(ValueError, match="shard_rows must be at least 1"):
        SearchPlan(rows=10, dim=2, k=2, kind="exact", shard_rows=0)
