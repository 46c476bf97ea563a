"""The qualification quiz: questions one by one with the reference after each, two attempts
in different orders, passing grants the kind, answers kept with the gold ratings."""

import random

import pytest

from annotation.errors import Conflict, NotFound
from annotation.gold.upload import gold_pairs_upload
from annotation.models import GoldPair, GoldPurpose, GoldRating, Qualification, QualitySettings, QuizAttempt, Rating
from annotation.quiz import QuizOver, quiz_answer, quiz_offered, quiz_set, quiz_state
from annotation.rating.policy import slot_claim
from tests.annotation.queue_support import queue_pairs
from tests.factories import ImageFactory, SplitFactory, UserFactory

pytestmark = pytest.mark.django_db

REFERENCES = [0.0, 1.5, 3.0, 4.5]


@pytest.fixture
def dataset(tmp_path):
    """SIS pairs to rate and a four-question SIS quiz (references 0, 1.5, 3, 4.5)."""
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=5, ratings_per_pair=2)
    images = [ImageFactory(split=split, dataset=split.dataset) for _ in range(8)]
    lines = ["image1,image2,gold_score,explanation"]
    lines += [f"{images[2 * i].key},{images[2 * i + 1].key},{ref},why {ref}" for i, ref in enumerate(REFERENCES)]
    path = tmp_path / "quiz.csv"
    path.write_text("\n".join(lines) + "\n")
    gold_pairs_upload(dataset=split.dataset, path=path)
    assert (
        quiz_set(
            dataset_id=split.dataset.pk, gold_pair_ids=list(GoldPair.objects.values_list("pk", flat=True)), in_quiz=True
        )
        == 4
    )
    return split.dataset


@pytest.fixture
def newcomer():
    return UserFactory(roles=["rater"])


def answer_all(rater, dataset, *, off_by: float, seed: int = 0):
    """Answer every question of the open attempt ``off_by`` from its reference; returns
    the feedbacks and the order the questions came in."""
    state = quiz_state(rater=rater, dataset=dataset.name, kind="SIS")
    feedbacks, order = [], []
    for step in range(state.total - state.answered):
        reference = GoldPair.objects.get(pk=state.gold_pair_id).gold_score
        score = min(5.0, reference + off_by)
        order.append(state.gold_pair_id)
        feedback = quiz_answer(
            rater=rater,
            dataset=dataset.name,
            kind="SIS",
            gold_pair_id=state.gold_pair_id,
            score=score,
            time_on_item_ms=4000,
            time_to_first_move_ms=800,
            adjustments=2,
            idempotency_key=f"{rater.pk}-{seed}-{step}",
        )
        feedbacks.append(feedback)
        state = feedback.state
    return feedbacks, order


def test_each_answer_is_told_its_reference_level_and_explanation(dataset, newcomer):
    feedbacks, order = answer_all(newcomer, dataset, off_by=0.4)
    by_pair = {g.pk: g for g in GoldPair.objects.all()}
    assert sorted(order) == sorted(by_pair)
    for feedback, pair_id in zip(feedbacks, order, strict=True):
        assert feedback.reference_score == by_pair[pair_id].gold_score
        assert feedback.reference_level == int(by_pair[pair_id].gold_score + 0.5)
        assert feedback.explanation == f"why {by_pair[pair_id].gold_score}"
        assert feedback.error == pytest.approx(
            min(5.0, by_pair[pair_id].gold_score + 0.4) - by_pair[pair_id].gold_score
        )
    assert [f.state.answered for f in feedbacks] == [1, 2, 3, 4]
    assert feedbacks[-1].state.result.passed and feedbacks[-1].state.qualified
    assert Qualification.objects.filter(rater=newcomer, kind="SIS").exists()


def test_a_failed_attempt_grants_nothing_and_the_second_comes_in_another_order(dataset, newcomer):
    feedbacks, first_order = answer_all(newcomer, dataset, off_by=2.0)
    result = feedbacks[-1].state.result
    # Errors 2, 2, 2, 0.5 (4.5 + 2 is held at 5): mean 1.625, above the default 1.0.
    assert result.mean_error == pytest.approx(1.625) and not result.passed
    assert not Qualification.objects.filter(rater=newcomer).exists()
    # Reloading shows the result; only an explicit start begins attempt 2.
    assert quiz_state(rater=newcomer, dataset=dataset.name, kind="SIS").result == result
    second = quiz_state(rater=newcomer, dataset=dataset.name, kind="SIS", start=True, rng=random.Random(5))
    assert second.attempt == 2 and second.answered == 0 and second.attempts_left == 1
    attempt_orders = list(QuizAttempt.objects.filter(rater=newcomer).order_by("number").values_list("order", flat=True))
    assert attempt_orders[0] == first_order and attempt_orders[1] != first_order
    feedbacks, _ = answer_all(newcomer, dataset, off_by=0.2, seed=1)
    assert feedbacks[-1].state.result.passed
    assert Qualification.objects.filter(rater=newcomer, kind="SIS").exists()


def test_two_failed_attempts_close_the_quiz(dataset, newcomer):
    answer_all(newcomer, dataset, off_by=3.0)
    quiz_state(rater=newcomer, dataset=dataset.name, kind="SIS", start=True)
    answer_all(newcomer, dataset, off_by=3.0, seed=1)
    assert not quiz_offered(rater=newcomer, dataset_id=dataset.pk, kind="SIS")
    with pytest.raises(QuizOver, match="both attempts"):
        quiz_state(rater=newcomer, dataset=dataset.name, kind="SIS", start=True)


def test_the_dataset_threshold_decides(dataset, newcomer):
    QualitySettings.objects.create(dataset=dataset, quiz_max_error=0.3)
    feedbacks, _ = answer_all(newcomer, dataset, off_by=0.4)
    assert feedbacks[-1].state.result.threshold == 0.3 and not feedbacks[-1].state.result.passed


def test_answers_are_gold_ratings_never_dataset_ratings(dataset, newcomer):
    answer_all(newcomer, dataset, off_by=0.0)
    answers = GoldRating.objects.filter(rater=newcomer)
    assert answers.count() == 4 and set(answers.values_list("purpose", "attempt")) == {(GoldPurpose.QUIZ, 1)}
    assert Rating.objects.count() == 0


def test_a_replayed_answer_returns_its_feedback_and_a_wrong_question_is_refused(dataset, newcomer):
    state = quiz_state(rater=newcomer, dataset=dataset.name, kind="SIS")
    other = GoldPair.objects.exclude(pk=state.gold_pair_id).first()
    values = {"score": 2.0, "time_on_item_ms": 3000, "time_to_first_move_ms": None, "adjustments": 0}
    with pytest.raises(Conflict, match="not the question you were asked"):
        quiz_answer(
            rater=newcomer, dataset=dataset.name, kind="SIS", gold_pair_id=other.pk, idempotency_key="k0", **values
        )
    first = quiz_answer(
        rater=newcomer,
        dataset=dataset.name,
        kind="SIS",
        gold_pair_id=state.gold_pair_id,
        idempotency_key="k1",
        **values,
    )
    again = quiz_answer(
        rater=newcomer,
        dataset=dataset.name,
        kind="SIS",
        gold_pair_id=state.gold_pair_id,
        idempotency_key="k1",
        **values,
    )
    assert again.replayed and again.reference_score == first.reference_score
    assert GoldRating.objects.filter(rater=newcomer).count() == 1


def test_quiz_pairs_are_never_served_in_the_queue(dataset):
    QualitySettings.objects.create(dataset=dataset, gold_one_in=1)
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
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(newcomer)
    state = client.post(f"/api/rate/{dataset.name}/quiz/sis/", {}, format="json").json()
    assert state["attempt"] == 1 and state["total"] == 4 and len(state["items"]) == 2 and state["result"] is None
    answer = {
        "gold_pair_id": state["gold_pair_id"],
        "score": 1.0,
        "time_on_item_ms": 2500,
        "time_to_first_move_ms": 400,
        "adjustments": 1,
        "idempotency_key": "first",
    }
    stored = client.post(f"/api/rate/{dataset.name}/quiz/sis/answer/", answer, format="json")
    assert stored.status_code == 201
    body = stored.json()
    reference = GoldPair.objects.get(pk=state["gold_pair_id"]).gold_score
    assert body["reference_score"] == reference and body["explanation"] == f"why {reference}"
    assert body["state"]["answered"] == 1
    assert client.post(f"/api/rate/{dataset.name}/quiz/sis/answer/", answer, format="json").status_code == 200
    missing = client.post(f"/api/rate/{dataset.name}/quiz/xyz/", {}, format="json")
    assert missing.status_code == 404 and "no task kind 'xyz'" in missing.json()["detail"]


def test_the_gold_pair_admin_puts_pairs_in_the_quiz_and_takes_them_out(dataset, admin_client):
    ids = list(GoldPair.objects.order_by("pk").values_list("pk", flat=True))
    admin_client.post("/admin/annotation/goldpair/", {"action": "quiz_remove", "_selected_action": ids[:3]})
    assert list(GoldPair.objects.filter(in_quiz=True).values_list("pk", flat=True)) == ids[3:]
    admin_client.post("/admin/annotation/goldpair/", {"action": "quiz_add", "_selected_action": ids[:1]})
    assert sorted(GoldPair.objects.filter(in_quiz=True).values_list("pk", flat=True)) == [ids[0], ids[3]]
