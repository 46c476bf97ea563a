"""The qualification quiz: questions drawn from a pool, one by one, nothing said about a
reference until the attempt ends, then its review: each answered question's reference
level NAME and the pair's explanation (never a number); two attempts, the second with
other questions; passing (mean error strictly below the threshold) grants the kind;
answers kept with the gold ratings."""

import random
import re
from datetime import UTC, datetime, timedelta

import pytest
from rest_framework.test import APIClient

from annotation.core import cxc
from annotation.core.errors import Conflict, NotFound
from annotation.models import GoldPair, GoldPurpose, GoldRating, Qualification, QualitySettings, QuizAttempt, Rating
from annotation.quality.quiz import (
    QuizOver,
    QuizPool,
    QuizTooSmall,
    attempt_length,
    quiz_answer,
    quiz_attempt_length,
    quiz_offered,
    quiz_pools,
    quiz_results,
    quiz_set,
    quiz_state,
)
from annotation.rating.policy import slot_claim
from annotation.serving.shapes import QueueInputError
from tests.factories import SplitFactory, UserFactory
from tests.support.queue_support import claim, client_for, queue_pairs, rater, submit
from tests.support.quiz import (
    FIVE,
    LENGTH,
    REFERENCES,
    api_attempt,
    make_quiz,
    make_sts_quiz,
    second_dataset,
    sis_quiz_dataset,
)
from tests.support.rating_support import api_id, db_id

pytestmark = pytest.mark.django_db


@pytest.fixture
def dataset(tmp_path):
    """SIS pairs to rate and a fifteen-question SIS quiz asked three at a time."""
    return sis_quiz_dataset(tmp_path, n_pairs=5)


@pytest.fixture
def newcomer():
    return UserFactory(roles=["rater"])


def off_by(reference: float, distance: float) -> float:
    """A score ``distance`` from the reference, inside the scale."""
    return reference + distance if reference + distance <= cxc.SCORE_MAX else reference - distance


def answer_all(rater, dataset, *, distance: float, seed: int = 0):
    """Answer every question of the open attempt ``distance`` from its reference (service
    level); returns what each answer gave back and the order the questions came in."""
    state = quiz_state(rater=rater, dataset=dataset.name, kind="SIS")
    answered, order = [], []
    for step in range(state.total - state.answered):
        reference = GoldPair.objects.get(pk=state.gold_pair_id).gold_score
        order.append(state.gold_pair_id)
        result = quiz_answer(
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
        answered.append(result)
        state = result.state
    return answered, order


def far_answers():
    """score_for: the far end of the scale from each reference (an error of at least 2.5)."""
    references = {g.pk: g.gold_score for g in GoldPair.objects.all()}
    return lambda question: 0.0 if references[question] >= 2.5 else 5.0


def keys_in(value) -> list[str]:
    """Every key of a JSON document, at any depth."""
    if isinstance(value, dict):
        return [*value, *(key for item in value.values() for key in keys_in(item))]
    if isinstance(value, list):
        return [key for item in value for key in keys_in(item)]
    return []


def floats_in(value, path=""):
    """Every float in a JSON document, with its path."""
    if isinstance(value, float):
        return [(path, value)]
    if isinstance(value, dict):
        return [found for key, item in value.items() for found in floats_in(item, f"{path}.{key}")]
    if isinstance(value, list):
        return [found for index, item in enumerate(value) for found in floats_in(item, f"{path}[{index}]")]
    return []


def test_no_answer_names_a_reference_until_the_attempt_ends(dataset, newcomer):
    asked = api_attempt(client_for(newcomer), dataset, score_for=lambda q: 2.0)
    for _, body in asked[:-1]:
        assert set(body) == {"replayed", "state"} and body["state"]["review"] is None
        assert not [key for key in keys_in(body) if "reference" in key or "level" in key], body
    assert asked[-1][1]["state"]["review"] is not None


def test_the_review_names_each_answered_reference_level_and_holds_no_number_of_it(dataset, newcomer):
    references = {g.pk: g.gold_score for g in GoldPair.objects.all()}
    asked = api_attempt(client_for(newcomer), dataset, score_for=lambda q: off_by(references[q], 0.3))
    assert len(asked) == LENGTH
    state = asked[-1][1]["state"]
    review = state["review"]
    # The questions answered, in the order asked, and no other question of the pool.
    assert [db_id("question", entry["question"]) for entry in review] == [question for question, _ in asked]
    for question, entry in zip([q for q, _ in asked], review, strict=True):
        level = cxc.nearest_level(references[question])
        assert entry["reference_level"] == cxc.LEVEL_NAMES[level]
        assert entry["reference_detail"] == cxc.LEVEL_DETAILS["SIS"][level]
        assert entry["your_level"] == cxc.level_name(off_by(references[question], 0.3))
        assert entry["explanation"].startswith("the scenes share what question")
        assert len(entry["items"]) == 2
        assert not {"reference_score", "error", "score", "gold_score"} & set(entry)
    # Only a finished attempt's aggregate is a number: no float of a reference, no error.
    floats = floats_in(asked[-1][1])
    assert all(path in (".state.result.mean_error", ".state.result.threshold") for path, _ in floats), floats
    assert floats_in(asked[0][1]) == []
    assert state["result"]["mean_error"] == pytest.approx(0.3)
    # Reloading the finished attempt shows the same review; the next attempt shows none.
    again = client_for(newcomer).post(f"/api/rate/{dataset.name}/quiz/sis/", {}, format="json").json()
    assert again["review"] == review


def test_the_service_review_carries_names_only_and_only_the_answered_questions(dataset, newcomer):
    answered, order = answer_all(newcomer, dataset, distance=0.4)
    by_pair = {g.pk: g for g in GoldPair.objects.all()}
    assert len(order) == LENGTH == len(set(order))
    assert [a.state.review for a in answered[:-1]] == [None] * (LENGTH - 1)
    review = answered[-1].state.review
    assert [entry.gold_pair_id for entry in review] == order
    for entry, pair_id in zip(review, order, strict=True):
        level = cxc.nearest_level(by_pair[pair_id].gold_score)
        assert (entry.reference_level, entry.reference_detail) == (
            cxc.LEVEL_NAMES[level],
            cxc.LEVEL_DETAILS["SIS"][level],
        )
        assert entry.explanation == by_pair[pair_id].explanation
    assert [a.state.answered for a in answered] == [1, 2, 3]
    assert answered[-1].state.result.passed and answered[-1].state.qualified
    assert Qualification.objects.filter(rater=newcomer, kind="SIS").exists()


@pytest.mark.parametrize("seed", range(6))
def test_a_failed_attempts_questions_are_not_asked_in_the_second(dataset, seeded, seed):
    seeded(seed)
    rater = UserFactory(roles=["rater"])
    client = client_for(rater)
    first = [question for question, _ in api_attempt(client, dataset, score_for=far_answers(), tag="one")]
    assert QuizAttempt.objects.get(rater=rater, number=1).passed is False
    second = [question for question, _ in api_attempt(client, dataset, score_for=far_answers(), start=True)]
    assert len(first) == len(second) == LENGTH
    assert not set(first) & set(second)
    assert set(first) | set(second) <= set(GoldPair.objects.values_list("pk", flat=True))


def test_replaying_attempt_ones_learned_answers_in_attempt_two_gets_no_help(dataset, newcomer):
    """The attacker fails attempt 1 on purpose to learn the references from its review,
    then answers attempt 2 with what they learned."""
    client = client_for(newcomer)
    asked = api_attempt(client, dataset, score_for=far_answers(), tag="learn")
    learned = {
        db_id("question", entry["question"]): cxc.LEVEL_NAMES.index(entry["reference_level"])
        for entry in asked[-1][1]["state"]["review"]
    }
    assert set(learned) == {question for question, _ in asked}
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
    asked = api_attempt(client_for(rater), dataset, score_for=lambda q: off_by(references[q], distance))
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
    answered, _ = answer_all(newcomer, dataset, distance=0.4)
    assert answered[-1].state.result.threshold == 0.3 and not answered[-1].state.result.passed


def test_a_failed_attempt_grants_nothing_and_reloading_shows_its_result(dataset, newcomer):
    answered, first_order = answer_all(newcomer, dataset, distance=2.0)
    result = answered[-1].state.result
    assert result.mean_error == pytest.approx(2.0) and not result.passed
    assert not Qualification.objects.filter(rater=newcomer).exists()
    # Reloading shows the result; only an explicit start begins attempt 2.
    assert quiz_state(rater=newcomer, dataset=dataset.name, kind="SIS").result == result
    second = quiz_state(rater=newcomer, dataset=dataset.name, kind="SIS", start=True, rng=random.Random(5))
    assert second.attempt == 2 and second.answered == 0 and second.attempts_left == 1
    assert second.gold_pair_id not in first_order
    answered, second_order = answer_all(newcomer, dataset, distance=0.2, seed=1)
    assert not set(first_order) & set(second_order)
    assert answered[-1].state.result.passed
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


def test_a_replayed_answer_returns_the_state_again_and_a_wrong_question_is_refused(dataset, newcomer):
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
    assert again.replayed and not first.replayed and again.state == first.state and again.state.review is None
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
    client = client_for(newcomer)
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


def test_an_attempt_asks_the_quiz_length_from_five_times_that_pool_and_nothing_from_less():
    assert [attempt_length(pool=pool, quiz_length=5) for pool in (0, 1, 10, 24, 25, 40)] == [0, 0, 0, 0, 5, 5]
    assert [attempt_length(pool=pool, quiz_length=1) for pool in (4, 5)] == [0, 1]


def test_the_quiz_names_its_questions_by_opaque_ids_not_database_ids(dataset, newcomer):
    client = client_for(newcomer)
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
    client = client_for(newcomer)
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


# Folded from test_quiz_mutants.py:
# Quizzes, the details `make mutation` found untested: whom the quiz is offered to (per
# rater, kind and dataset), what the pools and attempt lengths report, which attempt is the
# rater's here, two tabs beginning one attempt, and the rater's own list of attempts
# (annotation.quality.quiz).


@pytest.fixture
def three_pair_dataset(tmp_path):
    """SIS pairs to rate and an eight-question SIS quiz asked three at a time."""
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=3, ratings_per_pair=2)
    make_quiz(split.dataset, REFERENCES, tmp_path)
    QualitySettings.objects.create(dataset=split.dataset, quiz_length=LENGTH)
    return split.dataset


def offered(user, dataset, kind="SIS"):
    return quiz_offered(rater=user, dataset_id=dataset.id, kind=kind)


def fail_twice(user, dataset):
    client = APIClient()
    client.force_authenticate(user)
    api_attempt(client, dataset, score_for=lambda question: 5.0 if question % 2 else 0.0, tag="one")
    api_attempt(client, dataset, score_for=lambda question: 5.0 if question % 2 else 0.0, start=True, tag="two")


def test_the_quiz_is_offered_until_this_rater_is_qualified_for_this_kind_here(three_pair_dataset):
    other_dataset = SplitFactory().dataset
    user, other = UserFactory(roles=["rater"]), UserFactory(roles=["rater"])
    assert offered(user, three_pair_dataset) is True
    assert offered(user, three_pair_dataset, "STS") is False, "no STS pool"
    Qualification.objects.create(rater=other, dataset=three_pair_dataset, kind="SIS")
    Qualification.objects.create(rater=user, dataset=other_dataset, kind="SIS")
    Qualification.objects.create(rater=user, dataset=three_pair_dataset, kind="STS")
    assert offered(user, three_pair_dataset) is True, "another rater's, another dataset's or another kind's grant"
    assert offered(other, three_pair_dataset) is False
    Qualification.objects.create(rater=user, dataset=None, kind="SIS")
    assert offered(user, three_pair_dataset) is False, "a grant for every dataset"


def test_two_failed_attempts_close_the_quiz_for_that_rater_only(three_pair_dataset):
    user, other = UserFactory(roles=["rater"]), UserFactory(roles=["rater"])
    fail_twice(user, three_pair_dataset)
    assert offered(user, three_pair_dataset) is False
    assert offered(other, three_pair_dataset) is True
    client = APIClient()
    client.force_authenticate(other)
    client.post(f"/api/rate/{three_pair_dataset.name}/quiz/sis/", {}, format="json")
    assert offered(other, three_pair_dataset) is True, "an open attempt"


def test_two_failed_attempts_of_one_kind_leave_the_quiz_of_another_kind_open(three_pair_dataset, tmp_path):
    make_sts_quiz(three_pair_dataset, REFERENCES, tmp_path)
    user = UserFactory(roles=["rater"])
    fail_twice(user, three_pair_dataset)
    assert (offered(user, three_pair_dataset), offered(user, three_pair_dataset, "STS")) == (False, True)


def test_another_raters_answers_to_the_same_questions_are_not_this_raters(three_pair_dataset):
    first, second = UserFactory(roles=["rater"]), UserFactory(roles=["rater"])
    quiz_state(rater=first, dataset=three_pair_dataset.name, kind="SIS", rng=random.Random(7))
    client = APIClient()
    client.force_authenticate(first)
    api_attempt(client, three_pair_dataset, score_for=lambda question: 2.0, tag="first")  # the attempt begun above
    state = quiz_state(rater=second, dataset=three_pair_dataset.name, kind="SIS", rng=random.Random(7))
    assert QuizAttempt.objects.get(rater=second).order == QuizAttempt.objects.get(rater=first).order
    assert (state.attempt, state.answered, state.result) == (1, 0, None)


def test_attempts_in_another_dataset_do_not_count(three_pair_dataset, tmp_path):
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=3, ratings_per_pair=2)
    (tmp_path / "other").mkdir()
    make_quiz(split.dataset, REFERENCES, tmp_path / "other")
    QualitySettings.objects.create(dataset=split.dataset, quiz_length=LENGTH)
    user = UserFactory(roles=["rater"])
    fail_twice(user, split.dataset)
    assert offered(user, split.dataset) is False
    assert offered(user, three_pair_dataset) is True


def test_the_pools_are_the_datasets_active_quiz_pairs_per_kind(three_pair_dataset, tmp_path):
    other = SplitFactory()
    (tmp_path / "other").mkdir()
    make_quiz(other.dataset, [1.0, 2.0], tmp_path / "other")
    (pool,) = quiz_pools(dataset_id=three_pair_dataset.id)
    assert (pool.kind, pool.size, pool.quiz_length) == ("SIS", len(REFERENCES), LENGTH)
    first = three_pair_dataset.gold_pairs.filter(in_quiz=True).order_by("pk").first()
    first.active = False
    first.save(update_fields=["active"])
    three_pair_dataset.gold_pairs.exclude(pk=first.pk).filter(pk__lt=first.pk + 3).update(in_quiz=False)
    (pool,) = quiz_pools(dataset_id=three_pair_dataset.id)
    assert pool.size == len(three_pair_dataset.gold_pairs.filter(in_quiz=True, active=True))


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (25, "SIS quiz: 25 question(s) in the pool, 5 per attempt (which needs at least 25)."),
        (
            24,
            "SIS quiz: 24 question(s) in the pool: too small, the quiz cannot run: attempts of 5 need at least 25 "
            "(5 times the quiz length, so that what one rater is shown covers little of the pool). Raters not yet "
            "qualified stay closed out of SIS: add 1 more, or lower the quiz length to 4.",
        ),
        (
            4,
            "SIS quiz: 4 question(s) in the pool: too small, the quiz cannot run: attempts of 5 need at least 25 "
            "(5 times the quiz length, so that what one rater is shown covers little of the pool). Raters not yet "
            "qualified stay closed out of SIS: add 21 more.",
        ),
    ],
)
def test_a_pool_describes_itself(size, text):
    assert QuizPool(kind="SIS", size=size, quiz_length=5).describe() == text


def fail_first_attempt(rater, dataset, kind="SIS"):
    """Answer the rater's first attempt at the far end of the scale from every reference."""
    state = quiz_state(rater=rater, dataset=dataset.name, kind=kind)
    while state.result is None:
        reference = GoldPair.objects.get(pk=state.gold_pair_id).gold_score
        state = quiz_answer(
            rater=rater,
            dataset=dataset.name,
            kind=kind,
            gold_pair_id=state.gold_pair_id,
            score=0.0 if reference >= 2.5 else 5.0,
            time_on_item_ms=3000,
            time_to_first_move_ms=None,
            adjustments=0,
            idempotency_key=f"fail-{dataset.pk}-{kind}-{state.answered}",
        ).state
    assert not state.result.passed
    return state


def test_each_attempt_length_counts_only_this_datasets_active_quiz_pairs_of_the_kind(three_pair_dataset, tmp_path):
    """The rating page announces how many questions an attempt asks."""
    second_dataset(tmp_path)
    make_sts_quiz(three_pair_dataset, REFERENCES[:-1], tmp_path)
    assert quiz_attempt_length(dataset_id=three_pair_dataset.id, kind="SIS") == LENGTH
    assert quiz_attempt_length(dataset_id=three_pair_dataset.id, kind="STS") == 0, "14 STS questions: too few for 3"
    QualitySettings.objects.filter(dataset=three_pair_dataset).update(quiz_length=2)
    assert quiz_attempt_length(dataset_id=three_pair_dataset.id, kind="SIS") == 2
    assert quiz_attempt_length(dataset_id=three_pair_dataset.id, kind="STS") == 2
    QualitySettings.objects.filter(dataset=three_pair_dataset).update(quiz_length=LENGTH)
    GoldPair.objects.filter(pk=three_pair_dataset.gold_pairs.order_by("pk").first().pk).update(active=False)
    assert quiz_attempt_length(dataset_id=three_pair_dataset.id, kind="SIS") == 0, "14 active questions: none"


def test_putting_pairs_in_the_quiz_counts_only_the_pairs_that_changed_in_that_dataset(three_pair_dataset, tmp_path):
    """The admin is told how many pairs moved; another dataset's pairs are not moved."""
    ids = list(three_pair_dataset.gold_pairs.values_list("pk", flat=True))
    assert quiz_set(dataset_id=three_pair_dataset.id, gold_pair_ids=ids, in_quiz=True) == 0, "all in the quiz already"
    assert quiz_set(dataset_id=three_pair_dataset.id, gold_pair_ids=ids[:2], in_quiz=False) == 2
    assert quiz_set(dataset_id=three_pair_dataset.id, gold_pair_ids=ids, in_quiz=True) == 2
    other = second_dataset(tmp_path)
    other_ids = list(other.gold_pairs.values_list("pk", flat=True))
    assert quiz_set(dataset_id=three_pair_dataset.id, gold_pair_ids=other_ids, in_quiz=False) == 0
    assert set(GoldPair.objects.filter(pk__in=other_ids).values_list("in_quiz", flat=True)) == {True}


def test_the_state_is_qualified_only_by_this_raters_grant_of_this_kind(three_pair_dataset):
    user, other = UserFactory(roles=["rater"]), UserFactory(roles=["rater"])
    Qualification.objects.create(rater=other, dataset=three_pair_dataset, kind="SIS")
    Qualification.objects.create(rater=user, dataset=three_pair_dataset, kind="STS")
    state = quiz_state(rater=user, dataset=three_pair_dataset.name, kind="SIS")
    assert (state.kind, state.qualified) == ("SIS", False)
    Qualification.objects.create(rater=user, dataset=three_pair_dataset, kind="SIS")
    assert quiz_state(rater=user, dataset=three_pair_dataset.name, kind="SIS").qualified is True


def test_an_open_attempt_elsewhere_is_not_the_attempt_here(three_pair_dataset, tmp_path):
    """A rater midway through a quiz of another dataset or another kind loads this one's
    own question."""
    make_sts_quiz(three_pair_dataset, REFERENCES, tmp_path)
    other = second_dataset(tmp_path)
    user = UserFactory(roles=["rater"])
    elsewhere = quiz_state(rater=user, dataset=other.name, kind="SIS")
    sts = quiz_state(rater=user, dataset=three_pair_dataset.name, kind="STS")
    assert GoldPair.objects.get(pk=elsewhere.gold_pair_id).dataset == other
    assert GoldPair.objects.get(pk=sts.gold_pair_id).kind == "STS"
    sis = quiz_state(rater=user, dataset=three_pair_dataset.name, kind="SIS")
    assert (sis.kind, sis.attempt, sis.total) == ("SIS", 1, LENGTH)
    assert GoldPair.objects.get(pk=sis.gold_pair_id).dataset == three_pair_dataset
    assert GoldPair.objects.get(pk=sis.gold_pair_id).kind == "SIS"


def test_a_bad_kind_or_dataset_is_named(three_pair_dataset):
    user = UserFactory(roles=["rater"])
    with pytest.raises(QueueInputError, match="^kind must be one of STS, SIS, SITS, got 'XYZ'$"):
        quiz_state(rater=user, dataset=three_pair_dataset.name, kind="XYZ")
    with pytest.raises(NotFound, match="^no dataset named 'nowhere'$"):
        quiz_state(rater=user, dataset="nowhere", kind="SIS")


class OtherTabFirst(random.Random):
    """A draw during which the rater's other tab begins the same attempt and wins the
    insert: it draws with its own generator while this one is drawing."""

    def __init__(self, other_tab):
        super().__init__(0)
        self.other_tab = other_tab
        self.other_state = None

    def sample(self, population, k):
        self.other_state = self.other_tab()
        return super().sample(population, k)


def test_two_tabs_beginning_attempt_two_at_once_share_the_one_attempt(three_pair_dataset, tmp_path):
    """The tab that loses the race gets the winner's attempt, not an error, and not
    another rater's, dataset's, kind's or number's attempt (each exists here)."""
    make_sts_quiz(three_pair_dataset, REFERENCES, tmp_path)
    other_dataset = second_dataset(tmp_path)
    user, other = UserFactory(roles=["rater"]), UserFactory(roles=["rater"])
    for who, ds, kind in (
        (other, three_pair_dataset, "SIS"),
        (user, other_dataset, "SIS"),
        (user, three_pair_dataset, "STS"),
    ):
        fail_first_attempt(who, ds, kind)
        quiz_state(rater=who, dataset=ds.name, kind=kind, start=True)
    fail_first_attempt(user, three_pair_dataset)

    def other_tab():
        return quiz_state(rater=user, dataset=three_pair_dataset.name, kind="SIS", start=True, rng=random.Random(1))

    racing = OtherTabFirst(other_tab)
    state = quiz_state(rater=user, dataset=three_pair_dataset.name, kind="SIS", start=True, rng=racing)
    assert racing.other_state is not None and racing.other_state.attempt == 2
    assert state == racing.other_state
    assert QuizAttempt.objects.filter(rater=user, dataset=three_pair_dataset, kind="SIS").count() == 2


def test_the_raters_own_page_lists_their_attempts_newest_first_with_their_datasets(
    three_pair_dataset, tmp_path, django_assert_num_queries
):
    """quiz_results feeds the rater's own page: only their attempts, the newest on top,
    each with its dataset's name read in the one query (no query per row)."""
    other_dataset = second_dataset(tmp_path)
    user, other = UserFactory(roles=["rater"]), UserFactory(roles=["rater"])
    start = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    quiz_state(rater=user, dataset=three_pair_dataset.name, kind="SIS", now=start)
    quiz_state(rater=other, dataset=three_pair_dataset.name, kind="SIS", now=start + timedelta(hours=1))
    quiz_state(rater=user, dataset=other_dataset.name, kind="SIS", now=start + timedelta(hours=2))
    with django_assert_num_queries(1):
        listed = [(a.dataset.name, a.number, a.started_at) for a in quiz_results(rater=user)]
    assert listed == [(other_dataset.name, 1, start + timedelta(hours=2)), (three_pair_dataset.name, 1, start)]


# Folded from test_quiz_answer_mutants.py:
# Quiz answers, the details `make mutation` found untested: the stored row, the refusals
# and the texts that name them, idempotency keys shared with gold answers of the queue, and
# which answers make an attempt's mean error (annotation.quality.quiz.quiz_answer).


START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def answer(user, dataset, gold_pair_id, key, *, score=None, kind="SIS", **values):
    """quiz_answer with a rater's usual interaction facts; ``score`` defaults to the reference."""
    if score is None:
        score = GoldPair.objects.get(pk=gold_pair_id).gold_score
    facts = {"time_on_item_ms": 4000, "time_to_first_move_ms": 800, "adjustments": 2, **values}
    return quiz_answer(
        rater=user,
        dataset=dataset.name,
        kind=kind,
        gold_pair_id=gold_pair_id,
        score=score,
        idempotency_key=key,
        **facts,
    )


def rating_id(dataset, key) -> int:
    """A qualified rater's rating of the next pair of the dataset's queue."""
    user = rater(["SIS"])
    return submit(user, dataset, claim(user, dataset).slot_id, key).rating_id


def test_the_stored_answer_keeps_what_the_rater_did_and_when(three_pair_dataset):
    """The audit reads these rows: the interaction facts as sent, the score to four
    decimals, the service's clock, and an id from the ratings' sequence (gold ratings and
    ratings never share an id)."""
    user = UserFactory(roles=["rater"])
    state = quiz_state(rater=user, dataset=three_pair_dataset.name, kind="SIS", now=START)
    before = rating_id(three_pair_dataset, "before")
    first = answer(
        user,
        three_pair_dataset,
        state.gold_pair_id,
        "q0",
        score=2.123456,
        time_on_item_ms=5200,
        time_to_first_move_ms=750,
        adjustments=3,
        now=START + timedelta(minutes=1),
    )
    after = rating_id(three_pair_dataset, "after")
    stored = GoldRating.objects.get(rater=user)
    assert (stored.score, stored.time_on_item_ms, stored.time_to_first_move_ms, stored.adjustments) == (
        2.1235,
        5200,
        750,
        3,
    )
    assert (stored.purpose, stored.attempt, stored.gold_pair_id) == (GoldPurpose.QUIZ, 1, state.gold_pair_id)
    assert stored.created_at == START + timedelta(minutes=1)
    assert before < stored.pk < after
    assert first.replayed is False and (first.state.kind, first.state.answered) == ("SIS", 1)
    again = answer(user, three_pair_dataset, state.gold_pair_id, "q0", score=2.123456)
    assert again.replayed is True and again.state == first.state
    state = first.state
    for step in (1, 2):
        state = answer(
            user, three_pair_dataset, state.gold_pair_id, f"q{step}", now=START + timedelta(minutes=1 + step)
        ).state
    attempt = QuizAttempt.objects.get(rater=user)
    assert (attempt.started_at, attempt.finished_at) == (START, START + timedelta(minutes=3))
    assert state.result is not None and state.result.passed


def test_each_refused_answer_names_its_problem(three_pair_dataset):
    user = UserFactory(roles=["rater"])
    pair = three_pair_dataset.gold_pairs.order_by("pk").first()
    with pytest.raises(QueueInputError, match=r"^score must be within 0\.0-5\.0, got 5\.5$"):
        answer(user, three_pair_dataset, pair.pk, "k", score=5.5)
    with pytest.raises(QueueInputError, match="^kind must be one of STS, SIS, SITS, got 'XYZ'$"):
        answer(user, three_pair_dataset, pair.pk, "k", kind="XYZ")
    none_open = f"no SIS quiz attempt of yours is open in '{three_pair_dataset.name}'; load the quiz first"
    with pytest.raises(Conflict, match=f"^{re.escape(none_open)}$"):
        answer(user, three_pair_dataset, pair.pk, "k")
    state = quiz_state(rater=user, dataset=three_pair_dataset.name, kind="SIS")
    wrong = three_pair_dataset.gold_pairs.exclude(pk=state.gold_pair_id).first()
    with pytest.raises(Conflict, match="^that is not the question you were asked; reload the quiz$"):
        answer(user, three_pair_dataset, wrong.pk, "k")
    for step in range(LENGTH):
        state = answer(user, three_pair_dataset, state.gold_pair_id, f"k{step}").state
    with pytest.raises(Conflict, match="^your SIS quiz attempt 1 is finished; load the quiz again$"):
        answer(user, three_pair_dataset, wrong.pk, "late")
    assert GoldRating.objects.filter(rater=user).count() == LENGTH


def test_a_key_of_another_datasets_quiz_is_refused_where_no_attempt_is_open(three_pair_dataset, tmp_path):
    user = UserFactory(roles=["rater"])
    other = second_dataset(tmp_path)
    state = quiz_state(rater=user, dataset=other.name, kind="SIS")
    answer(user, other, state.gold_pair_id, "shared")
    message = "^idempotency key 'shared' was already used for another answer; use a new key for each item$"
    with pytest.raises(Conflict, match=message):
        answer(user, three_pair_dataset, three_pair_dataset.gold_pairs.first().pk, "shared")


def test_a_pool_too_small_for_the_attempt_says_what_to_do(tmp_path):
    split = SplitFactory()
    make_quiz(split.dataset, [2.5], tmp_path)
    text = (
        "the SIS qualification quiz of this dataset cannot run: its pool holds 1 question(s) and attempts of 5 "
        "need at least 25 (5 times the quiz length); ask an admin to add questions"
    )
    with pytest.raises(QuizTooSmall) as refused:
        quiz_state(rater=UserFactory(roles=["rater"]), dataset=split.dataset.name, kind="SIS")
    assert str(refused.value) == text


@pytest.fixture
def gold_met_in_the_queue(tmp_path):
    """A rater who rated all five gold pairs of a dataset in the queue, far from their
    references (keys g0 to g4), and then lost the grant; the admin then put the five in
    the quiz (attempts of one question)."""
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=3, ratings_per_pair=2)
    pairs = make_quiz(split.dataset, FIVE, tmp_path)
    quiz_set(dataset_id=split.dataset.pk, gold_pair_ids=[p.pk for p in pairs], in_quiz=False)
    QualitySettings.objects.create(dataset=split.dataset, gold_one_in=1, quiz_length=1)
    user = UserFactory(roles=["rater"], qualified_for=["SIS"], qualified_in=split.dataset)
    for step in range(len(FIVE)):
        assignment = claim(user, split.dataset)
        far = 5.0 if GoldPair.objects.get(pk=assignment.pair_id).gold_score < 2.5 else 0.0
        submit(user, split.dataset, assignment.slot_id, f"g{step}", score=far)
    assert GoldRating.objects.filter(rater=user, purpose=GoldPurpose.QUEUE).count() == len(FIVE)
    Qualification.objects.filter(rater=user).delete()
    quiz_set(dataset_id=split.dataset.pk, gold_pair_ids=[p.pk for p in pairs], in_quiz=True)
    return user, split.dataset


def test_a_quiz_answer_reusing_a_queue_gold_key_is_refused_and_reveals_nothing(gold_met_in_the_queue):
    """Replaying the key of a gold answer given in the queue must not return that gold
    pair's reference level as if it were a quiz answer."""
    user, three_pair_dataset = gold_met_in_the_queue
    state = quiz_state(rater=user, dataset=three_pair_dataset.name, kind="SIS")
    message = "^idempotency key 'g0' was already used for another answer; use a new key for each item$"
    with pytest.raises(Conflict, match=message):
        answer(user, three_pair_dataset, state.gold_pair_id, "g0")
    assert not GoldRating.objects.filter(rater=user, purpose=GoldPurpose.QUIZ).exists()


def test_the_quiz_mean_counts_the_quiz_answers_only(gold_met_in_the_queue):
    """The queue gold ratings of the same pair are no quiz answers: an exact answer passes."""
    user, three_pair_dataset = gold_met_in_the_queue
    state = quiz_state(rater=user, dataset=three_pair_dataset.name, kind="SIS")
    result = answer(user, three_pair_dataset, state.gold_pair_id, "quiz-0").state.result
    assert (result.mean_error, result.passed) == (0.0, True)


def test_an_attempts_mean_is_not_mixed_with_another_kinds_attempt(three_pair_dataset, tmp_path):
    """Attempt 1 of the STS quiz, failed, does not count in attempt 1 of the SIS quiz."""
    make_sts_quiz(three_pair_dataset, REFERENCES, tmp_path)
    user = UserFactory(roles=["rater"])
    assert not fail_first_attempt(user, three_pair_dataset, kind="STS").result.passed
    state = quiz_state(rater=user, dataset=three_pair_dataset.name, kind="SIS")
    for step in range(LENGTH):
        state = answer(user, three_pair_dataset, state.gold_pair_id, f"sis-{step}").state
    assert (state.result.mean_error, state.result.passed, state.qualified) == (0.0, True, True)


def test_each_rater_and_attempt_draws_its_own_questions_from_a_keyed_seed(three_pair_dataset, settings):
    """The draw is seeded by a keyed hash (SECRET_KEY) of the rater, dataset, kind and
    attempt: the same attempt draws the same questions, other raters draw others, and
    without the key nobody predicts a draw."""
    from annotation.quality import quiz

    raters = [UserFactory(roles=["rater"]) for _ in range(8)]
    for user in raters:
        quiz_state(rater=user, dataset=three_pair_dataset.name, kind="SIS")
    orders = [QuizAttempt.objects.get(rater=user).order for user in raters]
    # Three of fifteen in order: eight raters drawing alike by chance is out of the question.
    assert len({tuple(order) for order in orders}) > 1
    pool = sorted(three_pair_dataset.gold_pairs.filter(in_quiz=True).values_list("pk", flat=True))
    first = raters[0]

    def draw(number: int, questions: list[int]) -> list[int]:
        generator = quiz._generator(rater_id=first.pk, dataset_id=three_pair_dataset.pk, kind="SIS", number=number)
        return generator.sample(questions, LENGTH)

    assert draw(1, pool) == orders[0]
    fail_first_attempt(first, three_pair_dataset)
    second = quiz_state(rater=first, dataset=three_pair_dataset.name, kind="SIS", start=True)
    fresh = [pk for pk in pool if pk not in orders[0]]
    assert QuizAttempt.objects.get(rater=first, number=2).order == draw(2, fresh)
    assert second.gold_pair_id == draw(2, fresh)[0]
    keyed = settings.SECRET_KEY
    others = set()
    for n in range(4):
        settings.SECRET_KEY = f"{keyed}-another-{n}"
        others.add(tuple(draw(1, pool)))
    assert others != {tuple(orders[0])}
