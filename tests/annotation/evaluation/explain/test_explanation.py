"""One failure explained (annotation/evaluation/explain/explanation.py): both forms of the
metrics and the local explanation's sentences. Pure, no database."""

import pytest

from annotation.evaluation.explain.concepts import AnnotatedObject
from annotation.evaluation.explain.explanation import describe, explain_failure
from annotation.evaluation.explain.vocabulary import UnknownCategory


def _objects(*items):
    return [AnnotatedObject(category, area) for category, area in items]


TRUTH = _objects(("person", 5000), ("person", 3000), ("Dog", 1200), ("frisbee", 90))
RETRIEVED = _objects(("person", 2800), ("cat", 1000), ("sports ball", 60))


def test_the_agnostic_form_takes_every_object_and_the_informed_form_those_the_query_names():
    explanation = explain_failure(TRUTH, RETRIEVED, query="A dog catches a frisbee in the park.", size_threshold=500)
    assert explanation.query_concepts == {"dog", "frisbee"}
    agnostic, informed = explanation.agnostic, explanation.informed
    assert agnostic.truth_concepts == {"person", "dog", "frisbee"}  # names normalised ("Dog")
    assert agnostic.concept_agreement == pytest.approx(1 / 3)
    assert agnostic.enumeration == 1
    assert agnostic.size.score == pytest.approx(200)  # the person of 3000 against 2800
    assert agnostic.size.over_threshold == 0
    assert agnostic.non_common.score == pytest.approx((1 / 5 + 1 / 7) / 2)
    assert informed.truth_concepts == {"dog", "frisbee"}
    assert informed.retrieved_concepts == set()
    assert informed.concept_agreement == 0
    assert informed.non_common.score is None
    assert informed.enumeration is None and informed.size.score is None


def test_a_query_naming_a_category_by_synonym_and_plural_informs_on_it():
    explanation = explain_failure(TRUTH, RETRIEVED, query="Two people playing with a pup", size_threshold=100)
    assert explanation.query_concepts == {"person"}
    assert explanation.informed.concept_agreement == 1
    assert explanation.informed.enumeration == 1
    assert explanation.informed.size.over_threshold == 1  # 3000 against 2800 differs by more than 100


def test_the_local_explanation_says_what_the_retrieved_image_has_in_place_of_the_truths_concepts():
    explanation = explain_failure(TRUTH, RETRIEVED, query="A dog catches a frisbee", size_threshold=500)
    assert describe(explanation.agnostic) == [
        "retrieved has a cat where the truth had a dog",
        "retrieved has a sports ball where the truth had a frisbee",
        "person: the truth had 2, retrieved has 1",
    ]
    assert describe(explanation.informed) == ["retrieved has no dog", "retrieved has no frisbee"]


def test_the_local_explanation_names_what_the_matching_left_over():
    truth = _objects(("dog", 10))
    retrieved = _objects(("cat", 10), ("umbrella", 20), ("skis", 5))
    lines = describe(explain_failure(truth, retrieved, query="a dog", size_threshold=0).agnostic)
    assert lines == [
        "retrieved has a cat where the truth had a dog",
        "retrieved also has skis",
        "retrieved also has an umbrella",
    ]


def test_a_category_missing_from_the_tables_is_named():
    with pytest.raises(UnknownCategory, match="'unicorn'"):
        explain_failure(_objects(("unicorn", 1)), _objects(("dog", 1)), query="a unicorn", size_threshold=0)
