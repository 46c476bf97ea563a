"""Spearman and the CxC bootstrap (annotation/evaluation/correlation.py): pure numpy, no database."""

import math

import numpy as np
import pytest
from scipy import stats

from annotation.evaluation.correlation import (
    average_ranks,
    bootstrap_rows,
    bootstrap_spearman,
    query_memberships,
    spearman,
)
from annotation.evaluation.inputs import EvaluationError

# --- Spearman and the bootstrap ------------------------------------------------------------


def test_average_ranks_match_scipy_with_ties():
    rng = np.random.default_rng(0)
    values = rng.integers(0, 6, size=(4, 40)).astype(float)
    assert np.array_equal(average_ranks(values), stats.rankdata(values, axis=1))
    assert average_ranks(np.array([3.0, 1.0, 3.0, 2.0])).tolist() == [3.5, 1.0, 3.5, 2.0]


def test_spearman_matches_scipy_with_ties():
    rng = np.random.default_rng(1)
    x = np.round(rng.random((5, 60)) * 5, 1)
    y = x + rng.normal(scale=1.5, size=x.shape)
    y[:, ::3] = np.round(y[:, ::3])
    expected = [stats.spearmanr(a, b).statistic for a, b in zip(x, y, strict=True)]
    assert spearman(x, y) == pytest.approx(expected, abs=1e-12)
    assert spearman(x[0], y[0]) == pytest.approx(expected[0], abs=1e-12)


def test_spearman_of_a_constant_side_is_undefined():
    assert math.isnan(spearman(np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 2.0])))


def _rated_rows(n_rows=3000, n_queries=1200, seed=5):
    rng = np.random.default_rng(seed)
    human = np.round(rng.random(n_rows) * 5, 2)  # two decimals: many ties, as in the release
    queries = rng.integers(0, n_queries, n_rows)
    return rng, human, queries


def test_model_equal_to_human_scores_gets_100():
    _, human, queries = _rated_rows()
    result = bootstrap_spearman(human, human.copy(), queries, samples=200, seed=1)
    assert result["mean"] == pytest.approx(100.0)
    assert result["std"] == pytest.approx(0.0, abs=1e-9)
    assert result["undefined_samples"] == 0


def test_a_monotone_model_gets_100_and_a_reversed_one_minus_100():
    _, human, queries = _rated_rows()
    assert bootstrap_spearman(human, np.exp(human), queries, samples=100)["mean"] == pytest.approx(100.0)
    assert bootstrap_spearman(human, -human, queries, samples=100)["mean"] == pytest.approx(-100.0)


def test_shuffled_model_scores_correlate_about_zero():
    rng, human, queries = _rated_rows()
    result = bootstrap_spearman(human, rng.permutation(human), queries, samples=300, seed=2)
    # One sample holds ~600 rows: its rho has a standard error of about 4 (x 100).
    assert abs(result["mean"]) < 8
    assert 1 < result["std"] < 10


def test_bootstrap_mean_tracks_the_full_data_correlation():
    rng, human, queries = _rated_rows(seed=9)
    model = human + rng.normal(scale=1.5, size=human.size)
    full = 100 * stats.spearmanr(human, model).statistic
    result = bootstrap_spearman(human, model, queries, samples=300, seed=0)
    assert 40 < full < 90
    assert result["mean"] == pytest.approx(full, abs=3)


def test_same_seed_same_figures_other_seed_other_samples():
    rng, human, queries = _rated_rows()
    model = human + rng.normal(size=human.size)
    first = bootstrap_spearman(human, model, queries, samples=100, seed=7)
    again = bootstrap_spearman(human, model, queries, samples=100, seed=7)
    other = bootstrap_spearman(human, model, queries, samples=100, seed=8)
    assert first == again
    assert (first["mean"], first["std"]) != (other["mean"], other["std"])


def test_each_sample_takes_half_of_the_queries_and_one_row_of_each():
    rng = np.random.default_rng(4)
    queries = rng.integers(0, 41, 300)  # 41 queries (some rows each): 20 per sample
    n_queries = np.unique(queries).size
    drawn = np.concatenate(list(bootstrap_rows(queries, samples=400, seed=3)))
    assert drawn.shape == (400, n_queries // 2)
    for rows in drawn:
        assert np.unique(queries[rows]).size == rows.size  # one row per query, no repeats
    # Over many samples every query and every row turns up, each query about half the time.
    assert np.unique(drawn).size == queries.size
    per_query = np.bincount(queries[drawn].ravel(), minlength=41) / 400
    assert np.all(np.abs(per_query - 20 / 41) < 0.1)


def test_bootstrap_spearman_reports_its_counts():
    _, human, queries = _rated_rows()
    result = bootstrap_spearman(human, human + 1, queries, samples=10, seed=4)
    n_queries = np.unique(queries).size
    assert result["samples"] == 10
    assert result["seed"] == 4
    assert result["queries"] == n_queries
    assert result["rows"] == human.size
    assert result["rows_per_sample"] == n_queries // 2


def test_bootstrap_needs_four_queries():
    with pytest.raises(EvaluationError, match="3 rated queries; the bootstrap needs at least 4"):
        bootstrap_spearman(np.arange(6.0), np.arange(6.0), np.array([0, 0, 1, 1, 2, 2]))


def test_query_memberships_make_each_row_a_candidate_of_both_its_items():
    first, second = np.array([0, 2, 1]), np.array([1, 0, 3])
    rows, queries = query_memberships(first, second, rule="both", same_modality=True)
    assert list(zip(queries.tolist(), rows.tolist(), strict=True)) == [(0, 0), (0, 1), (1, 0), (1, 2), (2, 1), (3, 2)]
    # Items of two modalities (SITS: caption, image) never share a query id.
    rows, queries = query_memberships(first, second, rule="both", same_modality=False)
    assert list(zip(queries.tolist(), rows.tolist(), strict=True)) == [(0, 0), (1, 2), (2, 1), (3, 1), (4, 0), (6, 2)]
    rows, queries = query_memberships(first, second, rule="first", same_modality=True)
    assert (rows.tolist(), queries.tolist()) == ([0, 1, 2], [0, 2, 1])
    with pytest.raises(EvaluationError, match="both or first, got 'second'"):
        query_memberships(first, second, rule="second", same_modality=True)


def test_a_pair_rated_in_both_orders_counts_the_same_under_the_both_rule():
    # Swapping the columns of a row changes the first-column bootstrap but not "both".
    rng = np.random.default_rng(3)
    first, second = rng.integers(0, 40, 300), rng.integers(40, 80, 300)
    human, model = rng.random(300), rng.random(300)
    swap = rng.random(300) < 0.5
    a, b = np.where(swap, second, first), np.where(swap, first, second)

    def figures(x, y, rule):
        rows, queries = query_memberships(x, y, rule=rule, same_modality=True)
        return bootstrap_spearman(human, model, queries, rows=rows, samples=50, seed=1)

    assert figures(first, second, "both") == figures(a, b, "both")
    assert figures(first, second, "first") != figures(a, b, "first")
