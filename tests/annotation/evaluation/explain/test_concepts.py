"""The concept metrics (annotation/evaluation/explain/concepts.py): the worked examples of
their definitions, and each matching against brute force over every assignment on random
small sets. Pure, no database."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.evaluation.explain.concepts import (
    AnnotatedObject,
    concept_agreement,
    concept_enumeration,
    non_common_similarity,
    size_disagreement,
)
from annotation.evaluation.explain.matching import max_weight_matching, min_cost_matching
from annotation.evaluation.explain.vocabulary import vocabulary

# --- the worked examples --------------------------------------------------------------


def test_concept_agreement_of_the_worked_examples():
    assert concept_agreement({"dog", "frisbee", "park"}, {"dog", "ball", "park"}) == pytest.approx(2 / 3)
    assert concept_agreement({"dog", "frisbee", "park"}, {"cat", "fish"}) == 0
    assert concept_agreement({"dog"}, {"dog", "cat"}) == 1  # extra concepts retrieved cost nothing
    assert concept_agreement(set(), {"dog"}) is None


def test_concept_enumeration_of_the_worked_examples():
    truth = ["dog"] * 10 + ["frisbee"]
    assert concept_enumeration(truth, ["dog", "frisbee"]) == 9
    assert concept_enumeration(truth, ["dog"] * 10 + ["sports ball"]) == 0
    assert concept_enumeration(["dog", "dog"], ["dog", "frisbee", "frisbee"]) == 1  # frisbee is not common
    assert concept_enumeration(["dog"], ["cat"]) is None


def test_frisbee_against_a_ball_scores_above_frisbee_against_a_cat():
    similarity = vocabulary().path_similarity
    ball = non_common_similarity({"dog", "frisbee"}, {"dog", "sports ball"}, similarity)
    cat = non_common_similarity({"dog", "frisbee"}, {"dog", "cat"}, similarity)
    assert ball.score == pytest.approx(1 / 7)
    assert cat.score == pytest.approx(1 / 14)
    assert ball.score > cat.score
    assert [(p.truth, p.retrieved) for p in cat.pairs] == [("frisbee", "cat")]


def test_ncs_matches_each_truth_concept_to_its_nearest_when_that_is_best_overall():
    ncs = non_common_similarity({"dog", "frisbee"}, {"cat", "sports ball"}, vocabulary().path_similarity)
    assert {(p.truth, p.retrieved) for p in ncs.pairs} == {("dog", "cat"), ("frisbee", "sports ball")}
    assert ncs.score == pytest.approx((1 / 5 + 1 / 7) / 2)
    assert ncs.unmatched_truth == ncs.unmatched_retrieved == ()


def test_ncs_is_undefined_when_either_side_has_no_concept_of_its_own():
    similarity = vocabulary().path_similarity
    nothing_retrieved_alone = non_common_similarity({"dog", "cat"}, {"dog"}, similarity)
    assert nothing_retrieved_alone.score is None
    assert nothing_retrieved_alone.pairs == ()
    assert nothing_retrieved_alone.unmatched_truth == ("cat",)
    assert non_common_similarity({"dog"}, {"dog", "cat"}, similarity).score is None
    assert non_common_similarity(set(), set(), similarity).score is None


def test_ncs_leaves_the_larger_sides_extra_concepts_unmatched():
    ncs = non_common_similarity({"frisbee"}, {"sports ball", "cat", "car"}, vocabulary().path_similarity)
    assert [(p.truth, p.retrieved) for p in ncs.pairs] == [("frisbee", "sports ball")]
    assert ncs.unmatched_retrieved == ("car", "cat")


def test_size_disagreement_matches_objects_of_a_category_by_area():
    truth = [AnnotatedObject("dog", 100), AnnotatedObject("dog", 900), AnnotatedObject("cat", 50)]
    retrieved = [AnnotatedObject("dog", 850), AnnotatedObject("dog", 120), AnnotatedObject("cat", 80)]
    sd = size_disagreement(truth, retrieved, threshold=25)
    # dogs: 100-120 and 900-850 (not 100-850 and 900-120), mean 35; cats: 30
    assert sd.score == pytest.approx(35 + 30)
    assert sd.over_threshold == 2  # 50 and 30 exceed 25, 20 does not
    assert sorted(sd.per_category["dog"].tolist()) == [20, 50]


def test_size_disagreement_leaves_the_extra_objects_to_concept_enumeration():
    truth = [AnnotatedObject("dog", 100)] * 10
    retrieved = [AnnotatedObject("dog", 100), AnnotatedObject("frisbee", 5)]
    sd = size_disagreement(truth, retrieved, threshold=0)
    assert sd.score == 0 and sd.over_threshold == 0
    assert concept_enumeration([o.category for o in truth], [o.category for o in retrieved]) == 9


def test_size_disagreement_is_undefined_without_a_common_category_and_counts_strictly_above():
    assert size_disagreement([AnnotatedObject("dog", 1)], [AnnotatedObject("cat", 1)], threshold=1).score is None
    sd = size_disagreement([AnnotatedObject("dog", 10)], [AnnotatedObject("dog", 11)], threshold=1)
    assert sd.over_threshold == 0  # a difference equal to T_D does not exceed it


@pytest.mark.parametrize("area", [-1.0, float("nan"), float("inf")])
def test_size_disagreement_refuses_an_area_that_is_not_a_finite_number_at_least_zero(area):
    with pytest.raises(ValueError, match="'dog' has area"):
        size_disagreement([AnnotatedObject("dog", area)], [AnnotatedObject("dog", 1)], threshold=0)


def test_size_disagreement_refuses_a_negative_threshold():
    with pytest.raises(ValueError, match="threshold"):
        size_disagreement([], [], threshold=-1)


# --- the matchings against brute force --------------------------------------------------

sizes = st.integers(min_value=0, max_value=5)
values = st.floats(min_value=0, max_value=1_000, allow_nan=False, allow_infinity=False)


def _matrices(draw_rows, draw_columns):
    return st.tuples(draw_rows, draw_columns).flatmap(
        lambda shape: st.lists(
            st.lists(values, min_size=shape[1], max_size=shape[1]), min_size=shape[0], max_size=shape[0]
        ).map(lambda rows: np.array(rows, dtype=np.float64).reshape(shape))
    )


def _best_total(matrix: np.ndarray, better) -> float:
    """The best total over every full matching of the smaller side, by enumeration."""
    rows, columns = matrix.shape
    if rows > columns:
        return _best_total(matrix.T, better)
    totals = [
        sum(matrix[i, j] for i, j in enumerate(chosen)) for chosen in itertools.permutations(range(columns), rows)
    ]
    return better(totals)


def _is_full_matching(matrix, rows, columns):
    size = min(matrix.shape)
    return len(set(rows.tolist())) == len(set(columns.tolist())) == len(rows) == len(columns) == size


@settings(max_examples=150, deadline=None)
@given(_matrices(sizes, sizes))
def test_the_maximum_weight_matching_equals_brute_force(weights):
    rows, columns = max_weight_matching(weights)
    assert _is_full_matching(weights, rows, columns)
    assert weights[rows, columns].sum() == pytest.approx(_best_total(weights, max))


@settings(max_examples=150, deadline=None)
@given(_matrices(sizes, sizes))
def test_the_minimum_cost_matching_equals_brute_force(costs):
    rows, columns = min_cost_matching(costs)
    assert _is_full_matching(costs, rows, columns)
    assert costs[rows, columns].sum() == pytest.approx(_best_total(costs, min))


concept_pool = [f"c{i}" for i in range(10)]


@settings(max_examples=150, deadline=None)
@given(
    st.sets(st.sampled_from(concept_pool), max_size=5),
    st.sets(st.sampled_from(concept_pool), max_size=5),
    st.lists(values, min_size=100, max_size=100),
)
def test_ncs_equals_the_best_mean_over_every_assignment(truth, retrieved, table):
    def similarity(g, r):
        return table[10 * int(g[1:]) + int(r[1:])]

    ncs = non_common_similarity(truth, retrieved, similarity)
    only_truth, only_retrieved = sorted(truth - retrieved), sorted(retrieved - truth)
    if not only_truth or not only_retrieved:
        assert ncs.score is None
        return
    weights = np.array([[similarity(g, r) for r in only_retrieved] for g in only_truth])
    assert ncs.score == pytest.approx(_best_total(weights, max) / min(weights.shape))
    assert ncs.score == pytest.approx(np.mean([p.similarity for p in ncs.pairs]))
    assert len({p.truth for p in ncs.pairs}) == len({p.retrieved for p in ncs.pairs}) == min(weights.shape)


objects = st.lists(st.tuples(st.sampled_from(["dog", "cat"]), values), max_size=5).map(
    lambda items: [AnnotatedObject(category, area) for category, area in items]
)


@settings(max_examples=150, deadline=None)
@given(objects, objects, st.floats(min_value=0, max_value=500))
def test_sd_equals_the_best_assignment_per_category_by_brute_force(truth, retrieved, threshold):
    sd = size_disagreement(truth, retrieved, threshold)
    expected, common = 0.0, 0
    for category in ("dog", "cat"):
        areas_g = [o.area for o in truth if o.category == category]
        areas_r = [o.area for o in retrieved if o.category == category]
        if areas_g and areas_r:
            costs = np.abs(np.subtract.outer(areas_g, areas_r))
            best = _best_total(costs, min)
            expected += best / min(costs.shape)
            common += 1
            assert len(sd.per_category[category]) == min(costs.shape)
            assert sd.per_category[category].sum() == pytest.approx(best)
    if not common:
        assert sd.score is None and sd.over_threshold is None
    else:
        assert sd.score == pytest.approx(expected)
        assert sd.over_threshold == sum(int((d > threshold).sum()) for d in sd.per_category.values())
