"""The FAISS wrapper, on vectors whose neighbours can be worked out by hand. No database."""

import numpy as np
import pytest

from sampling.search.index import IndexConfig, IndexConfigError, exact_neighbours, ivf_cells, recall_at_k
from sampling.search.neighbours import nearest_neighbours
from tests.support.vectors import clustered


def unit_circle(degrees):
    radians = np.deg2rad(np.asarray(degrees, dtype=np.float64))
    return np.stack([np.cos(radians), np.sin(radians)], axis=1).astype(np.float32)


def test_exact_search_finds_the_nearest_other_rows_best_first():
    # Angles 0, 10, 30, 100, 180: the nearest others of row 0 are rows 1 then 2.
    vectors = unit_circle([0, 10, 30, 100, 180])
    ids, sims = nearest_neighbours(vectors, 2, IndexConfig(kind="exact"))
    assert ids.tolist() == [[1, 2], [0, 2], [1, 0], [2, 4], [3, 2]]
    assert sims[0, 0] == pytest.approx(np.cos(np.deg2rad(10)), abs=1e-6)
    assert sims[4, 0] == pytest.approx(np.cos(np.deg2rad(80)), abs=1e-6)
    assert (sims[:, 0] >= sims[:, 1]).all()


def test_a_row_is_never_its_own_neighbour_even_with_exact_duplicates():
    vectors = unit_circle([0, 0, 0, 90])
    ids, _ = nearest_neighbours(vectors, 2, IndexConfig(kind="exact"))
    for row in range(4):
        assert row not in ids[row].tolist()
    assert sorted(ids[0].tolist()) == [1, 2]
    assert sorted(ids[1].tolist()) == [0, 2]
    assert sorted(ids[2].tolist()) == [0, 1]


def test_fewer_rows_than_k_pads_with_minus_one():
    ids, sims = nearest_neighbours(unit_circle([0, 20, 90]), 4, IndexConfig(kind="exact"))
    assert ids.tolist() == [[1, 2, -1, -1], [0, 2, -1, -1], [1, 0, -1, -1]]
    assert np.isneginf(sims[:, 2:]).all()


def test_k_below_one_is_refused():
    with pytest.raises(ValueError, match="k must be at least 1"):
        nearest_neighbours(unit_circle([0, 10]), 0)


def test_auto_switches_to_the_approximate_index_above_the_threshold():
    config = IndexConfig(kind="auto", approximate="hnsw", exact_max=100)
    assert config.kind_for(100) == "exact"
    assert config.kind_for(101) == "hnsw"
    assert IndexConfig(kind="auto", exact_max=100).kind_for(101) == "ivf"
    assert IndexConfig(kind="exact", exact_max=1).kind_for(10**6) == "exact"


@pytest.mark.parametrize("kind", ["ivf", "hnsw"])
def test_approximate_indexes_match_exact_search_on_clustered_data_and_repeat_exactly(kind):
    vectors = clustered(3000, 16, 30, seed=1)
    config = IndexConfig(kind=kind, ivf_nprobe=8)
    ids, sims = nearest_neighbours(vectors, 5, config)
    truth, _ = nearest_neighbours(vectors, 5, IndexConfig(kind="exact"))
    assert recall_at_k(ids, truth) >= 0.95
    assert not (ids == np.arange(3000)[:, None]).any()
    again, again_sims = nearest_neighbours(vectors, 5, config)
    assert np.array_equal(ids, again)
    assert np.array_equal(sims, again_sims)


def test_exact_neighbours_of_sampled_queries_equal_the_full_search_rows():
    vectors = clustered(500, 8, 5, seed=2)
    full, _ = nearest_neighbours(vectors, 5, IndexConfig(kind="exact"))
    queries = np.array([3, 77, 499])
    assert np.array_equal(exact_neighbours(vectors, queries, 5), full[queries])


def test_recall_at_k_counts_found_true_neighbours():
    truth = np.array([[1, 2], [0, 2]])
    assert recall_at_k(np.array([[2, 1], [0, 3]]), truth) == 0.75
    with pytest.raises(ValueError, match="shapes differ"):
        recall_at_k(np.array([[1]]), truth)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"kind": "annoy"}, "index kind must be one of"),
        ({"approximate": "exact"}, "approximate index must be one of"),
        ({"exact_max": 0}, "exact_max must be at least 1"),
        ({"ivf_nprobe": 0}, "ivf_nprobe must be at least 1"),
        ({"ivf_train_per_list": 5}, "ivf_train_per_list must be at least 39"),
        ({"nprobe": 3}, "unknown index setting"),
    ],
)
def test_bad_index_settings_are_named(values, message):
    with pytest.raises(IndexConfigError, match=message):
        IndexConfig.from_mapping(values)


def test_ivf_cell_count_is_capped_by_the_training_points():
    config = IndexConfig()
    assert config.nlist_for(1_000_000) == 2000
    assert config.nlist_for(10_000) == 200
    assert config.nlist_for(3900) == 100
    assert IndexConfig(ivf_nlist=50).nlist_for(39) == 1


def test_ivf_self_join_gives_what_faiss_ivf_flat_gives_with_the_same_cells():
    import faiss

    vectors = clustered(2000, 12, 20, seed=3)
    config = IndexConfig(kind="ivf", ivf_nprobe=3)
    ids, _ = nearest_neighbours(vectors, 4, config)

    centroids = ivf_cells(vectors, config)
    quantizer = faiss.IndexFlatIP(12)
    quantizer.add(centroids)
    reference = faiss.IndexIVFFlat(quantizer, 12, len(centroids), faiss.METRIC_INNER_PRODUCT)
    reference.is_trained = True
    reference.add(vectors)
    reference.nprobe = 3
    _, found = reference.search(vectors, 5)
    expected = [[v for v in row if v != own][:4] for own, row in enumerate(found.tolist())]
    assert ids.tolist() == expected
    assert recall_at_k(ids, nearest_neighbours(vectors, 4, IndexConfig(kind="exact"))[0]) < 1.0
