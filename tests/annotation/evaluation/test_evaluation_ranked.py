"""R-Precision, mAP@R, positive ranks, intervals, calibration and own top-k precision on
arrays small enough to check by hand. No database."""

import numpy as np
import pytest

from annotation.evaluation.calibration import average_precision, global_calibration
from annotation.evaluation.intervals import bootstrap_intervals
from annotation.evaluation.ranked import first_correct_ranks, positive_ranks, query_figures
from annotation.evaluation.ranks import Positives
from annotation.evaluation.topk import topk_precision
from sampling.search.topk import exact_top_k


def scores_as_vectors(scores):
    """Queries and candidates whose dot products are ``scores`` (q, n): identity
    candidates, query rows the scores."""
    scores = np.asarray(scores, np.float32)
    return scores, np.eye(scores.shape[1], dtype=np.float32)


def test_ranks_of_every_positive_with_ties_against_the_model():
    # Query 0: candidates scored 0.9 0.8 0.7 0.6 0.5; positives 1 and 3 -> ranks 2 and 4.
    # Query 1: positive 0 ties with non-positive 2 at 0.5 -> ranked behind it: rank 2.
    queries, candidates = scores_as_vectors([[0.9, 0.8, 0.7, 0.6, 0.5], [0.5, 0.1, 0.5, 0.2, 0.0]])
    positives = Positives.from_pairs([0, 0, 1], [1, 3, 0], 2, 5)
    (ranks,) = positive_ranks(queries, candidates, [positives])
    assert ranks.tolist() == [2, 4, 2]


def test_tied_positives_take_consecutive_places():
    queries, candidates = scores_as_vectors([[0.5, 0.5, 0.5, 0.1]])
    positives = Positives.from_pairs([0, 0], [0, 1], 1, 4)
    (ranks,) = positive_ranks(queries, candidates, [positives])
    # Non-positive 2 ties at 0.5 and goes first; the two positives take places 2 and 3.
    assert ranks.tolist() == [2, 3]


def test_r_precision_and_map_at_r_by_hand():
    # Query 0: R = 2, ranks 2 and 4: R-Precision 1/2; mAP@R = (1/2) * (1/2) = 0.25.
    # Query 1: R = 1, rank 2: R-Precision 0, mAP@R 0. Query 2: R = 3, ranks 1 2 3: 1 and 1.
    queries, candidates = scores_as_vectors(
        [[0.9, 0.8, 0.7, 0.6, 0.5], [0.5, 0.1, 0.5, 0.2, 0.0], [0.9, 0.8, 0.7, 0.1, 0.0]]
    )
    positives = Positives.from_pairs([0, 0, 1, 2, 2, 2], [1, 3, 0, 0, 1, 2], 3, 5)
    (ranks,) = positive_ranks(queries, candidates, [positives])
    figures = query_figures(ranks, positives)
    assert figures.first_rank.tolist() == [2, 2, 1]
    assert figures.r_precision.tolist() == [0.5, 0.0, 1.0]
    assert figures.map_at_r.tolist() == [0.25, 0.0, 1.0]
    # Query 0 again with positives at ranks 1 and 3, R = 2: R-Precision 1/2, mAP@R (1 + 0) / 2.
    q0 = Positives.from_pairs([0, 0], [0, 2], 1, 5)
    (r0,) = positive_ranks(queries[:1], candidates, [q0])
    assert query_figures(r0, q0).map_at_r.tolist() == [0.5]


def test_queries_without_positives_are_left_out_and_the_first_rank_matches_the_old_count():
    rng = np.random.default_rng(3)
    queries = rng.normal(size=(40, 8)).astype(np.float32)
    candidates = rng.normal(size=(60, 8)).astype(np.float32)
    q = rng.integers(0, 30, 90)  # queries 30..39 have none
    positives = Positives.from_pairs(q, rng.integers(0, 60, 90), 40, 60)
    (ranks,) = positive_ranks(queries, candidates, [positives], block_rows=7)
    figures = query_figures(ranks, positives)
    (first,) = first_correct_ranks(queries, candidates, [positives])
    assert figures.queries.tolist() == np.flatnonzero(first > 0).tolist()
    assert figures.first_rank.tolist() == first[first > 0].tolist()
    # Brute force R-Precision from full sorts (no ties in random floats).
    scores = queries @ candidates.T
    for i, query in enumerate(figures.queries):
        wanted = set(positives.indices[positives.indptr[query] : positives.indptr[query + 1]].tolist())
        top = np.argsort(-scores[query])[: len(wanted)]
        assert figures.r_precision[i] == pytest.approx(len(wanted & set(top.tolist())) / len(wanted))


def test_excluded_candidate_is_never_ranked():
    queries, candidates = scores_as_vectors([[1.0, 0.9, 0.8]])
    positives = Positives.from_pairs([0], [2], 1, 3)
    (ranks,) = positive_ranks(queries, candidates, [positives], exclude=np.array([0]))
    assert ranks.tolist() == [2]


def test_average_precision_by_hand():
    # Ranked: + - + -  -> AP = (1/2)(1/1) + (1/2)(2/3) = 0.8333...
    assert average_precision([0.9, 0.8, 0.7, 0.1], [1, 0, 1, 0]) == pytest.approx(5 / 6)
    # A tie between a positive and a negative is one threshold at precision 1/2.
    assert average_precision([0.5, 0.5], [1, 0]) == pytest.approx(0.5)
    assert average_precision([0.5, 0.4], [0, 0]) is None
    perfect = global_calibration(np.array([0.9, 0.8, 0.2, 0.1]), np.array([5.0, 4.0, 1.0, 0.0]), 3.0)
    assert perfect["pr_auc"] == pytest.approx(100.0) and perfect["spearman"] == pytest.approx(100.0)
    assert perfect["positives"] == 2 and perfect["pairs"] == 4
    reversed_model = global_calibration(np.array([0.1, 0.2, 0.8, 0.9]), np.array([5.0, 4.0, 1.0, 0.0]), 3.0)
    assert reversed_model["spearman"] == pytest.approx(-100.0)
    assert reversed_model["pr_auc"] == pytest.approx(100 * ((1 / 2) * (1 / 3) + (1 / 2) * (2 / 4)))


def test_bootstrap_intervals_hold_the_mean_and_are_paired_by_seed():
    rng = np.random.default_rng(0)
    a = rng.random(500)
    b = a + 0.1
    intervals = bootstrap_intervals({"a": a, "b": b}, samples=400, seed=5)
    low, high = intervals["a"]
    assert low < a.mean() < high
    # Same resamples for both columns: b's interval is a's shifted by exactly 0.1.
    assert intervals["b"][0] == pytest.approx(low + 0.1) and intervals["b"][1] == pytest.approx(high + 0.1)
    # The same seed draws the same resamples whatever the other columns; the matrix
    # product's summation order may differ in the last bit with the number of columns.
    assert bootstrap_intervals({"a": a}, samples=400, seed=5)["a"] == pytest.approx(intervals["a"], rel=1e-12)
    assert bootstrap_intervals({"a": a}, samples=400, seed=6)["a"] != pytest.approx(intervals["a"], rel=1e-12)
    assert bootstrap_intervals({"c": np.full(10, 7.0)}, samples=50)["c"] == [7.0, 7.0]
    assert bootstrap_intervals({"e": np.zeros(0)}) == {"e": None}


def test_exact_top_k_best_first_and_excluding_self():
    queries, candidates = scores_as_vectors([[0.1, 0.9, 0.5, 0.9], [0.3, 0.2, 0.1, 0.0]])
    assert exact_top_k(queries, candidates, 3).tolist() == [[1, 3, 2], [0, 1, 2]]
    assert exact_top_k(queries, candidates, 2, exclude=np.array([1, -1])).tolist() == [[3, 2], [0, 1]]
    with pytest.raises(ValueError, match="k must be at least 1"):
        exact_top_k(queries, candidates, 0)


def test_own_top_k_precision_counts_judged_and_unrated():
    top = np.array([[0, 1], [2, 3], [1, 2]])
    # Query 0: both judged, one positive. Query 1: 2 judged positive, 3 unrated. Query 2: both judged, none positive.
    judged = Positives.from_pairs([0, 0, 1, 2, 2], [0, 1, 2, 1, 2], 3, 4)
    positive = Positives.from_pairs([0, 1], [1, 2], 3, 4)
    summary = topk_precision(top, judged, positive, 4, samples=100, seed=0)
    assert summary["retrieved"] == 6 and summary["judged"] == 5 and summary["unrated"] == 1
    assert summary["precision_judged"] == pytest.approx(100 * 2 / 5)
    assert summary["queries_fully_judged"] == 2
    assert summary["P@2"] == pytest.approx(25.0)
    low, high = summary["ci"]["P@2"]
    assert 0.0 <= low <= 25.0 <= high <= 50.0


def test_the_own_top_k_from_the_ranks_pass_orders_ties_as_the_audit_does():
    # 30 tied candidates: both pick the lowest columns, in column order.
    queries, candidates = scores_as_vectors([[0.5] * 30 + [0.1] * 5])
    top = np.zeros((1, 3), np.int64)
    positive_ranks(queries, candidates, [Positives.from_pairs([0], [0], 1, 35)], top=top)
    assert top.tolist() == exact_top_k(queries, candidates, 3).tolist() == [[0, 1, 2]]


def test_nan_scores_and_a_top_k_beyond_the_candidates_are_refused():
    queries, candidates = scores_as_vectors([[np.nan, 0.5]])
    with pytest.raises(ValueError, match="hold NaN"):
        positive_ranks(queries, candidates, [Positives.from_pairs([0], [1], 1, 2)])
    queries, candidates = scores_as_vectors([[0.2, 0.5]])
    with pytest.raises(ValueError, match="only 2 candidates"):
        positive_ranks(queries, candidates, [Positives.from_pairs([0], [1], 1, 2)], top=np.zeros((1, 3), np.int64))
    with pytest.raises(ValueError, match="k=3 but only 2 candidates"):
        exact_top_k(queries, candidates, 3)
