"""The review's figures on small worked examples, without a database: the marks' bits,
per failure the mean, raters and majority marks, per mark the share of failures, and
Spearman's rho of the human score against a metric."""

import math

import numpy as np
import pytest
from scipy import stats

from annotation.evaluation.review.figures import failure_reviews, mark_shares, metric_correlations, spearman_with
from annotation.evaluation.review.marks import MARK_BITS, MARKS, MarksError, marks_bits, marks_names


def test_marks_are_bits_and_a_fair_alternative_stands_alone():
    assert marks_bits([]) == 0
    assert marks_bits(["object_class", "size"]) == 1 | 16
    assert marks_bits(["fair_alternative"]) == 64
    assert marks_names(1 | 16) == ["object_class", "size"]
    assert marks_names(marks_bits(MARKS[:-1])) == list(MARKS[:-1])
    with pytest.raises(MarksError, match="tick it alone"):
        marks_bits(["fair_alternative", "action"])
    with pytest.raises(MarksError, match="unknown mark 'colour'"):
        marks_bits(["colour"])
    with pytest.raises(MarksError, match="at most once"):
        marks_bits(["size", "size"])


def test_per_failure_means_raters_and_majority_marks():
    # Failure 0: three raters, scores 1, 2, 3; two tick the class, one the colour.
    # Failure 1: two raters, one ticks action: 1 of 2 is no majority. Failure 2: nobody.
    failure = np.array([0, 0, 0, 1, 1])
    score = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    c, colour, action = MARK_BITS["object_class"], MARK_BITS["object_color"], MARK_BITS["action"]
    bits = np.array([c, c | colour, 0, action, 0])
    reviews = failure_reviews(failure, score, bits, 3)
    assert reviews.raters.tolist() == [3, 2, 0]
    assert reviews.mean[:2].tolist() == [2.0, 4.5] and math.isnan(reviews.mean[2])
    column = {m: i for i, m in enumerate(MARKS)}
    assert reviews.shares[0, column["object_class"]] == pytest.approx(2 / 3)
    assert reviews.shares[0, column["object_color"]] == pytest.approx(1 / 3)
    assert reviews.shares[1, column["action"]] == 0.5
    assert reviews.holds[0].tolist() == [m == "object_class" for m in MARKS]
    assert not reviews.holds[1].any() and not reviews.holds[2].any()
    shares = mark_shares(reviews)
    assert shares["object_class"] == {"failures": 1, "share": 0.5, "reviewed": 2}
    assert shares["action"] == {"failures": 0, "share": 0.0, "reviewed": 2}


def test_reviews_outside_the_failures_are_refused():
    with pytest.raises(ValueError, match="outside 0..1"):
        failure_reviews(np.array([2]), np.array([1.0]), np.array([0]), 2)


def test_spearman_worked_by_hand():
    # Ranks of human: 1 2 3 4; of metric: 2 1 4 3. d = (1, 1, 1, 1), rho = 1 - 6*4 / (4*15) = 0.6.
    human = np.array([0.5, 1.0, 2.0, 4.0])
    metric = np.array([0.3, 0.1, 0.9, 0.7])
    result = spearman_with(human, metric)
    assert result["rho"] == pytest.approx(0.6) and result["n"] == 4
    assert result["p"] == pytest.approx(stats.spearmanr(human, metric).pvalue)


def test_spearman_leaves_out_undefined_values_and_needs_three_varying_pairs():
    human = np.array([1.0, 2.0, np.nan, 3.0, 4.0])
    metric = np.array([4.0, np.nan, 1.0, 2.0, 1.0])  # both defined: (1, 4), (3, 2), (4, 1)
    assert spearman_with(human, metric) == {"rho": pytest.approx(-1.0), "p": pytest.approx(0.0, abs=1e-9), "n": 3}
    assert spearman_with(human[:2], metric[:2]) == {"rho": None, "p": None, "n": 1}
    assert spearman_with(np.array([1.0, 2.0, 3.0]), np.array([5.0, 5.0, 5.0])) == {"rho": None, "p": None, "n": 3}
    table = metric_correlations(human, {"CA": metric, "CE": -metric})
    assert table["CA"]["rho"] == pytest.approx(-1.0) and table["CE"]["rho"] == pytest.approx(1.0)
