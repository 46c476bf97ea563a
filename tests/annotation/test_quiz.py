"""The qualification quiz: questions drawn from a pool, one by one, each followed by the
reference level's NAME and the pair's explanation (never a number); two attempts, the
second with other questions; passing (mean error strictly below the threshold) grants
the kind; answers kept with the gold ratings."""

import random

import pytest
from rest_framework.test import APIClient

from annotation.core import cxc
from annotation.core.errors import Conflict, NotFound
from annotation.models import GoldPair, GoldPurpose, GoldRating, Qualification, QualitySettings, QuizAttempt, Rating
from annotation.quality.quiz import QuizOver, attempt_length, quiz_answer, quiz_offered, quiz_state
from annotation.rating.policy import slot_claim
from tests.factories import SplitFactory, UserFactory
from tests.support.queue_support import queue_pairs
from tests.support.quiz import LENGTH, REFERENCES, api_attempt, make_quiz
from tests.support.rating_support import api_id, db_id

pytestmark = pytest.mark.django_db


@pytest.fixture
def dataset(tmp_path):
    """SIS pairs to rate and an eight-question SIS quiz asked three at a time."""
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=5, ratings_per_pair=2)
    make_quiz(split.dataset, REFERENCES, tmp_path)
    QualitySettings.objects.create(dataset=split.dataset, quiz_length=LENGTH)
    return split.dataset


@pytest.fixture
def newcomer():
    return UserFactory(roles=["rater"])


def api_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def off_by(reference: float, distance: float) -> float:
    """A score ``distance`` from the reference, inside the scale."""
    return reference + distance if reference + distance <= cxc.SCORE_MAX else reference - distance


def answer_all(rater, dataset, *, distance: float, seed: int = 0):
    """Answer every question of the open attempt ``distance`` from its reference (service
    level); returns the feedbacks and the order the questions came in."""
    state = quiz_state(rater=rater, dataset=dataset.name, kind="SIS")
    feedbacks, order = [], []
    for step in range(state.total - state.answered):
        reference = GoldPair.objects.get(pk=state.gold_pair_id).gold_score
        order.append(state.gold_pair_id)
        feedback = quiz_answer(
            rater=rater,
            dataset=dataset.name,
            kind="SIS",
            gold_pair_id=state.gold_pair_id,
            score=off_by(reference, distance),
            time_on_item_ms=4000,
            time_to_first_move_ms=800,
            adjustments=2,
            idempotency_key=f"{rater.pk}-{seed}-{step}",
        )
        feedbacks.append(feedback)
        state = feedback.state
    return feedbacks, order


def far_answers():
    """score_for: the far end of the scale from each reference (an error of at least 2.5)."""
    references = {g.pk: g.gold_score for g in GoldPair.objects.all()}
    return lambda question: 0.0 if references[question] >= 2.5 else 5.0


def floats_in(value, path=""):
    """Every float in a JSON document, with its path."""
    if isinstance(value, float):
        return [(path, value)]
    if isinstance(value, dict):
        return [found for key, item in value.items() for found in floats_in(item, f"{path}.{key}")]
    if isinstance(value, list):
        return [found for index, item in enumerate(value) for found in floats_in(item, f"{path}[{index}]")]
    return []


def test_the_answer_names_the_reference_level_and_holds_no_number_of_it(dataset, newcomer):
    references = {g.pk: g.gold_score for g in GoldPair.objects.all()}
    asked = api_attempt(api_for(newcomer), dataset, score_for=lambda q: off_by(references[q], 0.3))
    assert len(asked) == LENGTH
    for question, body in asked:
        level = cxc.nearest_level(references[question])
        assert body["reference_level"] == cxc.LEVEL_NAMES[level]
        assert body["reference_detail"] == cxc.LEVEL_DETAILS["SIS"][level]
        assert body["your_level"] == cxc.level_name(off_by(references[question], 0.3))
        assert body["explanation"].startswith("the scenes share what question")
        assert not {"reference_score", "error", "score"} & set(body)
        # Only a finished attempt's aggregate is a number: no float of a reference, no error.
        floats = floats_in(body)
        assert all(path in (".state.result.mean_error", ".state.result.threshold") for path, _ in floats), floats
    assert floats_in(asked[0][1]) == []
    assert asked[-1][1]["state"]["result"]["mean_error"] == pytest.approx(0.3)


def test_the_service_feedback_carries_names_only(dataset, newcomer):
    feedbacks, order = answer_all(newcomer, dataset, distance=0.4)
    by_pair = {g.pk: g for g in GoldPair.objects.all()}
    assert len(order) == LENGTH == len(set(order))
    for feedback, pair_id in zip(feedbacks, order, strict=True):
        level = cxc.nearest_level(by_pair[pair_id].gold_score)
        assert (feedback.reference_level, feedback.reference_detail) == (
            cxc.LEVEL_NAMES[level],
            cxc.LEVEL_DETAILS["SIS"][level],
        )
        assert feedback.explanation == by_pair[pair_id].explanation
    assert [f.state.answered for f in feedbacks] == [1, 2, 3]
    assert feedbacks[-1].state.result.passed and feedbacks[-1].state.qualified
    assert Qualification.objects.filter(rater=newcomer, kind="SIS").exists()


@pytest.mark.parametrize("seed", range(6))
def test_a_failed_attempts_questions_are_not_asked_in_the_second(dataset, seeded, seed):
    seeded(seed)
    rater = UserFactory(roles=["rater"])
    client = api_for(rater)
    first = [question for question, _ in api_attempt(client, dataset, score_for=far_answers(), tag="one")]
    assert QuizAttempt.objects.get(rater=rater, number=1).passed is False
    second = [question for question, _ in api_attempt(client, dataset, score_for=far_answers(), start=True)]
    assert len(first) == len(second) == LENGTH
    assert not set(first) & set(second)
    assert set(first) | set(second) <= set(GoldPair.objects.values_list("pk", flat=True))


def test_replaying_attempt_ones_learned_answers_in_attempt_two_gets_no_help(dataset, newcomer):
    """The attacker fails attempt 1 on purpose to learn the references, then answers
    attempt 2 with what they learned."""
    client = api_for(newcomer)
    learned = {}
    for question, body in api_attempt(client, dataset, score_for=far_answers(), tag="learn"):
        # Whatever the answer told them: a number if it had one, else the level's middle.
        told = body.get("reference_score")
        learned[question] = told if told is not None else cxc.LEVEL_NAMES.index(body["reference_level"])
    assert QuizAttempt.objects.get(rater=newcomer, number=1).passed is False
    state = client.post(f"/api/rate/{dataset.name}/quiz/sis/", {"start": True}, format="json").json()
    assert state["attempt"] == 2
    # Nothing learned is asked, and an answer to a learned question is refused.
    replay = {
        "gold_pair_id": api_id("question", next(iter(learned))),
        "score": next(iter(learned.values())),
        "time_on_item_ms": 3000,
        "time_to_first_move_ms": 500,
        "adjustments": 1,
        "idempotency_key": "replay",
    }
    refused = client.post(f"/api/rate/{dataset.name}/quiz/sis/answer/", replay, format="json")
    assert refused.status_code == 409 and "not the question you were asked" in refused.json()["detail"]
    far = far_answers()
    asked = api_attempt(client, dataset, score_for=lambda q: learned.get(q, far(q)), tag="replay")
    assert not {question for question, _ in asked} & set(learned)
    assert not Qualification.objects.filter(rater=newcomer).exists()


def answer_at_distance(dataset, distance: float) -> dict:
    rater = UserFactory(roles=["rater"])
    references = {g.pk: g.gold_score for g in GoldPair.objects.all()}
    asked = api_attempt(api_for(rater), dataset, score_for=lambda q: off_by(references[q], distance))
    return asked[-1][1]["state"]


def test_an_attempt_exactly_at_the_threshold_fails_and_just_below_passes(dataset):
    QualitySettings.objects.filter(dataset=dataset).update(quiz_max_error=0.5)
    at = answer_at_distance(dataset, 0.5)
    assert at["result"] == {"mean_error": 0.5, "threshold": 0.5, "passed": False} and not at["qualified"]
    below = answer_at_distance(dataset, 0.49)
    assert below["result"]["mean_error"] == pytest.approx(0.49)
    assert below["result"]["passed"] and below["qualified"]


def test_the_dataset_threshold_decides(dataset, newcomer):
    QualitySettings.objects.filter(dataset=dataset).update(quiz_max_error=0.3)
    feedbacks, _ = answer_all(newcomer, dataset, distance=0.4)
    assert feedbacks[-1].state.result.threshold == 0.3 and not feedbacks[-1].state.result.passed


def test_a_failed_attempt_grants_nothing_and_reloading_shows_its_result(dataset, newcomer):
    feedbacks, first_order = answer_all(newcomer, dataset, distance=2.0)
    result = feedbacks[-1].state.result
    assert result.mean_error == pytest.approx(2.0) and not result.passed
    assert not Qualification.objects.filter(rater=newcomer).exists()
    # Reloading shows the result; only an explicit start begins attempt 2.
    assert quiz_state(rater=newcomer, dataset=dataset.name, kind="SIS").result == result
    second = quiz_state(rater=newcomer, dataset=dataset.name, kind="SIS", start=True, rng=random.Random(5))
    assert second.attempt == 2 and second.answered == 0 and second.attempts_left == 1
    assert second.gold_pair_id not in first_order
    feedbacks, second_order = answer_all(newcomer, dataset, distance=0.2, seed=1)
    assert not set(first_order) & set(second_order)
    assert feedbacks[-1].state.result.passed
    assert Qualification.objects.filter(rater=newcomer, kind="SIS").exists()


def test_two_failed_attempts_close_the_quiz(dataset, newcomer):
    answer_all(newcomer, dataset, distance=3.0)
    quiz_state(rater=newcomer, dataset=dataset.name, kind="SIS", start=True)
    answer_all(newcomer, dataset, distance=3.0, seed=1)
    assert not quiz_offered(rater=newcomer, dataset_id=dataset.pk, kind="SIS")
    with pytest.raises(QuizOver, match="both attempts"):
        quiz_state(rater=newcomer, dataset=dataset.name, kind="SIS", start=True)


def test_answers_are_gold_ratings_never_dataset_ratings(dataset, newcomer):
    answer_all(newcomer, dataset, distance=0.0)
    answers = GoldRating.objects.filter(rater=newcomer)
    assert answers.count() == LENGTH and set(answers.values_list("purpose", "attempt")) == {(GoldPurpose.QUIZ, 1)}
    assert Rating.objects.count() == 0


def test_a_replayed_answer_returns_its_feedback_and_a_wrong_question_is_refused(dataset, newcomer):
    state = quiz_state(rater=newcomer, dataset=dataset.name, kind="SIS")
    other = GoldPair.objects.exclude(pk=state.gold_pair_id).first()
    values = {"score": 2.0, "time_on_item_ms": 3000, "time_to_first_move_ms": None, "adjustments": 0}
    with pytest.raises(Conflict, match="not the question you were asked"):
        quiz_answer(
            rater=newcomer, dataset=dataset.name, kind="SIS", gold_pair_id=other.pk, idempotency_key="k0", **values
        )
    asked = {"rater": newcomer, "dataset": dataset.name, "kind": "SIS", "gold_pair_id": state.gold_pair_id}
    first = quiz_answer(idempotency_key="k1", **asked, **values)
    again = quiz_answer(idempotency_key="k1", **asked, **values)
    assert again.replayed and again.reference_level == first.reference_level
    assert GoldRating.objects.filter(rater=newcomer).count() == 1


def test_quiz_pairs_are_never_served_in_the_queue(dataset):
    QualitySettings.objects.filter(dataset=dataset).update(gold_one_in=1)
    rater = UserFactory(roles=["rater"], qualified_for=["SIS"])
    gold_ids = set(GoldPair.objects.values_list("pk", flat=True))
    assignment = slot_claim(rater=rater, dataset=dataset.name, kind="SIS")
    assert assignment is not None and assignment.pair_id not in gold_ids


def test_no_quiz_is_a_clear_not_found(newcomer):
    split = SplitFactory()
    with pytest.raises(NotFound, match="no SIS qualification quiz"):
        quiz_state(rater=newcomer, dataset=split.dataset.name, kind="SIS")
    assert not quiz_offered(rater=newcomer, dataset_id=split.dataset.pk, kind="SIS")


def test_the_quiz_api_asks_answers_and_names_a_bad_kind(dataset, newcomer):
    client = api_for(newcomer)
    state = client.post(f"/api/rate/{dataset.name}/quiz/sis/", {}, format="json").json()
    assert state["attempt"] == 1 and state["total"] == LENGTH and len(state["items"]) == 2 and state["result"] is None
    answer = {
        "gold_pair_id": state["gold_pair_id"],
        "score": 1.0,
        "time_on_item_ms": 2500,
        "time_to_first_move_ms": 400,
        "adjustments": 1,
        "idempotency_key": "first",
    }
    stored = client.post(f"/api/rate/{dataset.name}/quiz/sis/answer/", answer, format="json")
    assert stored.status_code == 201 and stored.json()["state"]["answered"] == 1
    assert client.post(f"/api/rate/{dataset.name}/quiz/sis/answer/", answer, format="json").status_code == 200
    missing = client.post(f"/api/rate/{dataset.name}/quiz/xyz/", {}, format="json")
    assert missing.status_code == 404 and "no task kind 'xyz'" in missing.json()["detail"]


def test_attempt_length_is_half_a_small_pool():
    assert [attempt_length(pool=pool, quiz_length=5) for pool in (0, 1, 2, 3, 9, 10, 40)] == [0, 0, 1, 1, 4, 5, 5]


def test_the_quiz_names_its_questions_by_opaque_ids_not_database_ids(dataset, newcomer):
    client = api_for(newcomer)
    state = client.post(f"/api/rate/{dataset.name}/quiz/sis/", {}, format="json").json()
    question = state["gold_pair_id"]
    pair_ids = set(GoldPair.objects.values_list("pk", flat=True))
    assert isinstance(question, str) and int(question) not in pair_ids
    assert db_id("question", question) in pair_ids
    # The database id itself is no question the API knows.
    body = {
        "gold_pair_id": str(db_id("question", question)),
        "score": 2.0,
        "time_on_item_ms": 3000,
        "time_to_first_move_ms": 500,
        "adjustments": 1,
        "idempotency_key": "by-database-id",
    }
    refused = client.post(f"/api/rate/{dataset.name}/quiz/sis/answer/", body, format="json")
    assert refused.status_code in (400, 409), refused.content


def api_answer_values():
    return {
        "score": 2.0,
        "time_on_item_ms": 3000,
        "time_to_first_move_ms": 500,
        "adjustments": 1,
        "idempotency_key": "x",
    }


def test_a_stale_answer_is_refused_without_naming_any_id(dataset, newcomer):
    client = api_for(newcomer)
    state = client.post(f"/api/rate/{dataset.name}/quiz/sis/", {}, format="json").json()
    body = {
        "gold_pair_id": state["gold_pair_id"],
        "score": 2.0,
        "time_on_item_ms": 3000,
        "time_to_first_move_ms": 500,
        "adjustments": 1,
        "idempotency_key": "first",
    }
    assert client.post(f"/api/rate/{dataset.name}/quiz/sis/answer/", body, format="json").status_code == 201
    stale = client.post(
        f"/api/rate/{dataset.name}/quiz/sis/answer/", {**body, "idempotency_key": "again"}, format="json"
    )
    assert stale.status_code == 409
    assert "not the question you were asked" in stale.json()["detail"]
    assert not any(ch.isdigit() for ch in stale.json()["detail"]), stale.json()["detail"]
