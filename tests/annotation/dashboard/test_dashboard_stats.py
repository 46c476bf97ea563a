"""The dashboard's grouped statistics: pure numpy, no database."""

import numpy as np
import pytest
from scipy import stats as scipy_stats

from annotation.quality import group_stats as stats
from annotation.quality.aggregation import dense_unique, group_medians, group_order

NAN = np.nan


def test_histogram_closes_the_last_bin_and_drops_nan():
    counts = stats.histogram(np.array([0.0, 0.24, 0.25, 4.99, 5.0, NAN]), stats.SCORE_EDGES)
    assert counts.shape == (20,)
    assert (counts[0], counts[1], counts[19], counts.sum()) == (2, 1, 2, 5)


def test_group_histograms_equal_one_histogram_per_group():
    rng = np.random.default_rng(3)
    groups = rng.integers(0, 4, 500)
    values = np.round(rng.uniform(0, 5, 500) * 4) / 4  # many values on bin edges, 5.0 too
    out = stats.group_histograms(groups, values, 5, stats.SCORE_EDGES)
    for group in range(5):
        np.testing.assert_array_equal(out[group], np.histogram(values[groups == group], stats.SCORE_EDGES)[0])
    assert out[4].sum() == 0


def test_daily_counts_list_every_day_and_hourly_counts_one_day():
    first = 1_772_323_200.0  # 2026-03-01 00:00 UTC
    times = np.array([first + 10, first + 2 * stats.DAY_S + 5, first - 1, first + 3 * stats.DAY_S])
    np.testing.assert_array_equal(stats.daily_counts(times, first, first + 2 * stats.DAY_S), [1, 0, 1])
    hours = stats.hourly_counts(np.array([first + 2 * stats.DAY_S + 3_599, first + 2 * stats.DAY_S + 3_600]), first)
    assert hours.sum() == 0
    hours = stats.hourly_counts(np.array([first + 3_599, first + 3_600, first + stats.DAY_S]), first)
    np.testing.assert_array_equal(hours[:3], [1, 1, 0])
    assert hours.shape == (24,) and hours.sum() == 2
    assert stats.day_start(first + 86_399.5) == first


def test_group_medians_and_shares_agree_with_numpy():
    rng = np.random.default_rng(5)
    groups = rng.integers(0, 6, 301)
    values = rng.normal(size=301)
    medians = group_medians(groups, values, 7)
    shares = stats.group_shares(groups, values > 0, 7)
    for group in range(6):
        assert medians[group] == pytest.approx(np.median(values[groups == group]))
        assert shares[group] == pytest.approx(np.mean(values[groups == group] > 0))
    assert np.isnan(medians[6]) and np.isnan(shares[6])


def test_group_latest():
    latest = stats.group_latest(np.array([0, 2, 0]), np.array([5.0, 7.0, 9.0]), 3)
    np.testing.assert_array_equal(latest, [9.0, NAN, 7.0])


def test_group_agreement_is_pearson_and_mean_bias_per_group():
    rng = np.random.default_rng(8)
    groups = np.repeat([0, 1], 40)
    scores = rng.uniform(0, 5, 80)
    others = np.clip(scores + rng.normal(0, 1, 80), 0, 5)
    others[3] = NAN  # not compared
    out = stats.group_agreement(groups, scores, others, 3)
    for group in (0, 1):
        chosen = (groups == group) & ~np.isnan(others)
        assert out.correlation[group] == pytest.approx(scipy_stats.pearsonr(scores[chosen], others[chosen])[0])
        assert out.bias[group] == pytest.approx(np.mean(scores[chosen] - others[chosen]))
        assert out.compared[group] == chosen.sum()
    assert np.isnan(out.correlation[2]) and out.compared[2] == 0


def test_largest_differences_by_size_then_input_order():
    groups = np.array([0, 0, 0, 1, 0, 1, 0])
    differences = np.array([0.5, -2.0, 2.0, NAN, 0.1, -0.3, 0.5])
    picked = stats.largest_differences(groups, differences, 3, 2)
    assert [p.tolist() for p in picked] == [[1, 2], [5], []]
    picked = stats.largest_differences(groups, differences, 3, 3)
    assert picked[0].tolist() == [1, 2, 0]  # 0.5 at 0 and 6 tie: the earlier one


def test_largest_differences_agree_with_a_full_sort():
    rng = np.random.default_rng(11)
    groups = rng.integers(0, 5, 2_000)
    differences = np.round(rng.normal(size=2_000), 1)  # many ties
    picked = stats.largest_differences(groups, differences, 5, 10)
    for group in range(5):
        members = np.flatnonzero(groups == group)
        expected = members[np.lexsort((members, -np.abs(differences[members])))][:10]
        np.testing.assert_array_equal(picked[group], expected)


def test_dense_unique_equals_numpy_unique_for_narrow_and_wide_ids():
    rng = np.random.default_rng(2)
    for values in (rng.integers(5, 300, 1_000), rng.integers(0, 2**40, 1_000), np.array([7]), np.array([], dtype=int)):
        unique, inverse = dense_unique(values)
        expected_unique, expected_inverse = np.unique(values, return_inverse=True)
        np.testing.assert_array_equal(unique, expected_unique)
        np.testing.assert_array_equal(inverse, expected_inverse)


@pytest.mark.parametrize("n_groups", [7, 70_000])
def test_group_order_is_stable_by_group(n_groups):
    rng = np.random.default_rng(4)
    groups = rng.integers(0, n_groups, 5_000)
    np.testing.assert_array_equal(group_order(groups, n_groups), np.argsort(groups, kind="stable"))
