"""Pair aggregation and rater agreement: pure numpy, no database."""

import math

import krippendorff
import numpy as np
import pytest
from scipy import stats

from annotation.quality.aggregation import (
    AggregationError,
    IntervalAlpha,
    RaterAgreement,
    aggregate_pairs,
    krippendorff_alpha_interval,
    leave_one_out_means,
    pad_ragged,
    round_scores,
    t_critical,
)

NAN = np.nan


def test_pad_ragged_lays_rows_out_in_order():
    padded = pad_ragged(np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), np.array([2, 1, 3]))
    expected = np.array([[1.0, 2.0, NAN], [3.0, NAN, NAN], [4.0, 5.0, 6.0]])
    np.testing.assert_array_equal(padded, expected)


@pytest.mark.parametrize(
    ("values", "counts", "message"),
    [
        ([1.0, 2.0], [3], "counts sum to 3 but there are 2 values"),
        ([1.0], [1, 0], "at least one value"),
    ],
)
def test_pad_ragged_rejects_mismatched_counts(values, counts, message):
    with pytest.raises(AggregationError, match=message):
        pad_ragged(np.array(values), np.array(counts))


def test_aggregate_matches_numpy_and_scipy_per_row():
    rng = np.random.default_rng(3)
    counts = rng.integers(1, 7, size=200)
    values = rng.uniform(0, 5, size=int(counts.sum()))
    result = aggregate_pairs(pad_ragged(values, counts), task="STS")
    start = 0
    for row, count in enumerate(counts.tolist()):
        own = values[start : start + count]
        start += count
        assert result.count[row] == count
        assert result.mean[row] == pytest.approx(own.mean(), abs=1e-12)
        assert result.median[row] == pytest.approx(np.median(own), abs=1e-12)
        if count == 1:
            assert math.isnan(result.std[row])
            assert math.isnan(result.ci_low[row]) and math.isnan(result.ci_high[row])
        else:
            assert result.std[row] == pytest.approx(own.std(ddof=1), abs=1e-12)
            low, high = stats.t.interval(0.95, count - 1, loc=own.mean(), scale=stats.sem(own))
            assert result.ci_low[row] == pytest.approx(low, abs=1e-9)
            assert result.ci_high[row] == pytest.approx(high, abs=1e-9)


def test_five_ratings_by_hand():
    result = aggregate_pairs(np.array([[4.0, 5.0, 4.5, 3.0, 5.0]]), task="SITS")
    assert result.mean[0] == pytest.approx(4.3)
    assert result.median[0] == 4.5
    assert result.std[0] == pytest.approx(math.sqrt(0.7))
    half = stats.t.ppf(0.975, 4) * math.sqrt(0.7) / math.sqrt(5)
    assert result.ci_low[0] == pytest.approx(4.3 - half, abs=1e-9)
    assert result.ci_high[0] == pytest.approx(4.3 + half, abs=1e-9)
    assert result.agg_score[0] == 4.3 and bool(result.positive[0])


@pytest.mark.parametrize("df", [*range(1, 41), 60, 120, 500, 1001])
def test_t_critical_equals_scipy(df):
    assert t_critical(df) == pytest.approx(stats.t.ppf(0.975, df), rel=1e-12)
    assert t_critical(df, 0.9) == pytest.approx(stats.t.ppf(0.95, df), rel=1e-12)


def test_t_critical_rejects_bad_arguments():
    with pytest.raises(AggregationError, match="degrees of freedom"):
        t_critical(0)
    with pytest.raises(AggregationError, match="confidence"):
        t_critical(4, 1.0)


def test_scores_round_to_the_release_notation():
    means = np.array([2.4, 5.0, 4.99, 2.0 / 3.0, 1.995, 0.004, 4.996])
    texts = [repr(value) for value in round_scores(means).tolist()]
    assert texts == ["2.4", "5.0", "4.99", "0.67", "2.0", "0.0", "5.0"]


@pytest.mark.parametrize(
    ("task", "scores", "positive"),
    [
        ("STS", [3.0, 3.0], True),
        ("STS", [2.99, 2.99], False),
        ("SITS", [3.0, 3.0], True),
        ("SITS", [2.98, 2.98], False),
        ("SIS", [2.5, 2.5], True),
        ("SIS", [2.49, 2.49], False),
        # The threshold applies to the released (rounded) score: 2.996 is written 3.0.
        ("STS", [2.996, 2.996], True),
    ],
)
def test_positive_by_task_threshold(task, scores, positive):
    assert bool(aggregate_pairs(np.array([scores]), task=task).positive[0]) is positive


def test_aggregate_rejects_bad_input():
    with pytest.raises(AggregationError, match="unknown task"):
        aggregate_pairs(np.array([[1.0]]), task="XYZ")
    with pytest.raises(AggregationError, match="at least one rating"):
        aggregate_pairs(np.array([[1.0, 2.0], [NAN, NAN]]), task="SIS")
    with pytest.raises(AggregationError, match="2-D"):
        aggregate_pairs(np.array([1.0, 2.0]), task="SIS")


def test_leave_one_out_means():
    scores = np.array([[1.0, 2.0, 3.0, NAN], [4.0, NAN, NAN, NAN]])
    expected = np.array([[2.5, 2.0, 1.5, NAN], [NAN, NAN, NAN, NAN]])
    np.testing.assert_allclose(leave_one_out_means(scores), expected)


def _reliability(rng, n_raters, n_units, missing):
    data = rng.uniform(0, 5, size=(n_raters, n_units)) + rng.normal(0, 1.5, size=(1, n_units))
    data[rng.random(data.shape) < missing] = NAN
    return data


@pytest.mark.parametrize("seed", range(6))
def test_alpha_equals_krippendorff_package(seed):
    rng = np.random.default_rng(seed)
    data = _reliability(rng, n_raters=int(rng.integers(3, 9)), n_units=int(rng.integers(8, 40)), missing=0.3)
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="interval")
    # Our matrices are (units, values); the raters' identities do not matter.
    assert krippendorff_alpha_interval(data.T) == pytest.approx(expected, abs=1e-10)


def test_alpha_accumulated_in_chunks_equals_alpha_at_once():
    rng = np.random.default_rng(11)
    data = _reliability(rng, n_raters=5, n_units=300, missing=0.2).T
    whole = krippendorff_alpha_interval(data)
    chunked = IntervalAlpha()
    for start in range(0, 300, 37):
        chunked.add(data[start : start + 37])
    merged, other = IntervalAlpha(), IntervalAlpha()
    merged.add(data[:100])
    other.add(data[100:])
    merged.merge(other)
    assert chunked.alpha == pytest.approx(whole, abs=1e-12)
    assert merged.alpha == pytest.approx(whole, abs=1e-12)
    assert chunked.units == merged.units == int(((~np.isnan(data)).sum(axis=1) >= 2).sum())


def test_alpha_limits():
    assert krippendorff_alpha_interval(np.array([[1.0, 1.0], [4.0, 4.0], [2.5, 2.5]])) == pytest.approx(1.0)
    assert math.isnan(krippendorff_alpha_interval(np.array([[3.0, 3.0], [3.0, 3.0]])))
    # Units with a single value are not pairable and leave alpha undefined here.
    assert math.isnan(krippendorff_alpha_interval(np.array([[3.0, NAN], [1.0, NAN]])))


def _direct_rater_stats(pairs):
    """pairs: list of [(rater, score, time)] -> {rater: (ratings, r, bias, median_time)}."""
    own, others, times = {}, {}, {}
    for ratings in pairs:
        for position, (rater, score, time_ms) in enumerate(ratings):
            times.setdefault(rater, []).append(time_ms)
            rest = [s for p, (_, s, _) in enumerate(ratings) if p != position]
            if rest:
                own.setdefault(rater, []).append(score)
                others.setdefault(rater, []).append(sum(rest) / len(rest))
    out = {}
    for rater, rater_times in times.items():
        x, y = np.array(own.get(rater, [])), np.array(others.get(rater, []))
        r = stats.pearsonr(x, y).statistic if len(x) >= 2 else NAN
        out[rater] = (len(rater_times), r, float((x - y).mean()) if len(x) else NAN, float(np.median(rater_times)))
    return out


def test_rater_agreement_equals_direct_computation():
    rng = np.random.default_rng(5)
    bias = {rater: rng.normal(0, 0.5) for rater in range(10, 22)}
    pairs = []
    for _ in range(150):
        chosen = rng.choice(list(bias), size=int(rng.integers(1, 6)), replace=False)
        truth = rng.uniform(0, 5)
        pairs.append(
            [
                (int(r), float(np.clip(truth + bias[r] + rng.normal(0, 0.6), 0, 5)), int(rng.integers(1000, 90000)))
                for r in chosen
            ]
        )
    agreement = RaterAgreement()
    # Fed in three chunks of whole pairs, as the export does.
    for chunk in (pairs[:40], pairs[40:41], pairs[41:]):
        counts = np.array([len(p) for p in chunk])
        flat = [rating for p in chunk for rating in p]
        padded = pad_ragged(np.array([s for _, s, _ in flat]), counts)
        rows = np.repeat(np.arange(len(chunk)), counts)
        cols = np.concatenate([np.arange(c) for c in counts])
        agreement.add(
            np.array([r for r, _, _ in flat]),
            np.array([s for _, s, _ in flat]),
            leave_one_out_means(padded)[rows, cols],
            np.array([t for _, _, t in flat]),
        )
    expected = _direct_rater_stats(pairs)
    summaries = agreement.summaries()
    assert [s.rater for s in summaries] == sorted(expected)
    for summary in summaries:
        ratings, r, bias_expected, median = expected[summary.rater]
        assert summary.ratings == ratings
        assert summary.loo_correlation == pytest.approx(r, abs=1e-9)
        assert summary.mean_bias == pytest.approx(bias_expected, abs=1e-12)
        assert summary.median_time_ms == median
    # A rater who reads high shows a positive bias.
    high = max(bias, key=bias.get)
    low = min(bias, key=bias.get)
    by_rater = {s.rater: s for s in summaries}
    assert by_rater[high].mean_bias > by_rater[low].mean_bias


def test_rater_without_comparable_pairs_has_no_correlation():
    agreement = RaterAgreement()
    agreement.add(np.array([7, 7]), np.array([1.0, 2.0]), np.array([NAN, NAN]), np.array([100, 300]))
    (summary,) = agreement.summaries()
    assert summary.ratings == 2 and summary.compared == 0
    assert math.isnan(summary.loo_correlation) and math.isnan(summary.mean_bias)
    assert summary.median_time_ms == 200.0


def test_rater_agreement_rejects_mismatched_arrays():
    with pytest.raises(AggregationError, match="one length"):
        RaterAgreement().add(np.array([1, 2]), np.array([1.0]), np.array([1.0]), np.array([1]))
