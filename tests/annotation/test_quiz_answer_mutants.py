"""Quiz answers, the details `make mutation` found untested: the stored row, the refusals
and the texts that name them, idempotency keys shared with gold answers of the queue, and
which answers make an attempt's mean error (annotation.quality.quiz.quiz_answer)."""

import re
from datetime import UTC, datetime, timedelta

import pytest

from annotation.core.errors import Conflict
from annotation.models import GoldPair, GoldPurpose, GoldRating, Qualification, QualitySettings, QuizAttempt
from annotation.quality.quiz import QuizTooSmall, quiz_answer, quiz_set, quiz_state
from annotation.serving.shapes import QueueInputError
from tests.factories import SplitFactory, UserFactory
from tests.support.queue_support import claim, queue_pairs, rater, submit
from tests.support.quiz import LENGTH, REFERENCES, make_quiz, make_sts_quiz, second_dataset

pytestmark = pytest.mark.django_db

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def dataset(tmp_path):
    """SIS pairs to rate and an eight-question SIS quiz asked three at a time."""
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=3, ratings_per_pair=2)
    make_quiz(split.dataset, REFERENCES, tmp_path)
    QualitySettings.objects.create(dataset=split.dataset, quiz_length=LENGTH)
    return split.dataset


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


def test_the_stored_answer_keeps_what_the_rater_did_and_when(dataset):
    """The audit reads these rows: the interaction facts as sent, the score to four
    decimals, the service's clock, and an id from the ratings' sequence (gold ratings and
    ratings never share an id)."""
    user = UserFactory(roles=["rater"])
    state = quiz_state(rater=user, dataset=dataset.name, kind="SIS", now=START)
    before = rating_id(dataset, "before")
    first = answer(
        user,
        dataset,
        state.gold_pair_id,
        "q0",
        score=2.123456,
        time_on_item_ms=5200,
        time_to_first_move_ms=750,
        adjustments=3,
        now=START + timedelta(minutes=1),
    )
    after = rating_id(dataset, "after")
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
    again = answer(user, dataset, state.gold_pair_id, "q0", score=2.123456)
    assert again.replayed is True and again.state == first.state
    state = first.state
    for step in (1, 2):
        state = answer(user, dataset, state.gold_pair_id, f"q{step}", now=START + timedelta(minutes=1 + step)).state
    attempt = QuizAttempt.objects.get(rater=user)
    assert (attempt.started_at, attempt.finished_at) == (START, START + timedelta(minutes=3))
    assert state.result is not None and state.result.passed


def test_each_refused_answer_names_its_problem(dataset):
    user = UserFactory(roles=["rater"])
    pair = dataset.gold_pairs.order_by("pk").first()
    with pytest.raises(QueueInputError, match=r"^score must be within 0\.0-5\.0, got 5\.5$"):
        answer(user, dataset, pair.pk, "k", score=5.5)
    with pytest.raises(QueueInputError, match="^kind must be one of STS, SIS, SITS, got 'XYZ'$"):
        answer(user, dataset, pair.pk, "k", kind="XYZ")
    none_open = f"no SIS quiz attempt of yours is open in '{dataset.name}'; load the quiz first"
    with pytest.raises(Conflict, match=f"^{re.escape(none_open)}$"):
        answer(user, dataset, pair.pk, "k")
    state = quiz_state(rater=user, dataset=dataset.name, kind="SIS")
    wrong = dataset.gold_pairs.exclude(pk=state.gold_pair_id).first()
    with pytest.raises(Conflict, match="^that is not the question you were asked; reload the quiz$"):
        answer(user, dataset, wrong.pk, "k")
    for step in range(LENGTH):
        state = answer(user, dataset, state.gold_pair_id, f"k{step}").state
    with pytest.raises(Conflict, match="^your SIS quiz attempt 1 is finished; load the quiz again$"):
        answer(user, dataset, wrong.pk, "late")
    assert GoldRating.objects.filter(rater=user).count() == LENGTH


def test_a_key_of_another_datasets_quiz_is_refused_where_no_attempt_is_open(dataset, tmp_path):
    user = UserFactory(roles=["rater"])
    other = second_dataset(tmp_path)
    state = quiz_state(rater=user, dataset=other.name, kind="SIS")
    answer(user, other, state.gold_pair_id, "shared")
    message = "^idempotency key 'shared' was already used for another answer; use a new key for each item$"
    with pytest.raises(Conflict, match=message):
        answer(user, dataset, dataset.gold_pairs.first().pk, "shared")


def test_a_pool_too_small_for_the_attempt_says_what_to_do(tmp_path):
    split = SplitFactory()
    make_quiz(split.dataset, [2.5], tmp_path)
    text = (
        "the SIS qualification quiz of this dataset has too few questions for attempt 1 (each attempt asks "
        "questions no earlier one did); ask an admin to add questions"
    )
    with pytest.raises(QuizTooSmall) as refused:
        quiz_state(rater=UserFactory(roles=["rater"]), dataset=split.dataset.name, kind="SIS")
    assert str(refused.value) == text


@pytest.fixture
def gold_met_in_the_queue(tmp_path):
    """A rater who rated both gold pairs of a dataset in the queue, far from their
    references (keys g0 and g1), and then lost the grant; the admin then put both pairs
    in the quiz (default length: attempts of one question)."""
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=3, ratings_per_pair=2)
    pairs = make_quiz(split.dataset, [1.0, 4.0], tmp_path)
    quiz_set(dataset_id=split.dataset.pk, gold_pair_ids=[p.pk for p in pairs], in_quiz=False)
    QualitySettings.objects.create(dataset=split.dataset, gold_one_in=1)
    user = UserFactory(roles=["rater"], qualified_for=["SIS"], qualified_in=split.dataset)
    for step in range(2):
        assignment = claim(user, split.dataset)
        far = 5.0 if GoldPair.objects.get(pk=assignment.pair_id).gold_score < 2.5 else 0.0
        submit(user, split.dataset, assignment.slot_id, f"g{step}", score=far)
    assert GoldRating.objects.filter(rater=user, purpose=GoldPurpose.QUEUE).count() == 2
    Qualification.objects.filter(rater=user).delete()
    quiz_set(dataset_id=split.dataset.pk, gold_pair_ids=[p.pk for p in pairs], in_quiz=True)
    return user, split.dataset


def test_a_quiz_answer_reusing_a_queue_gold_key_is_refused_and_reveals_nothing(gold_met_in_the_queue):
    """Replaying the key of a gold answer given in the queue must not return that gold
    pair's reference level as if it were a quiz answer."""
    user, dataset = gold_met_in_the_queue
    state = quiz_state(rater=user, dataset=dataset.name, kind="SIS")
    message = "^idempotency key 'g0' was already used for another answer; use a new key for each item$"
    with pytest.raises(Conflict, match=message):
        answer(user, dataset, state.gold_pair_id, "g0")
    assert not GoldRating.objects.filter(rater=user, purpose=GoldPurpose.QUIZ).exists()


def test_the_quiz_mean_counts_the_quiz_answers_only(gold_met_in_the_queue):
    """The queue gold ratings of the same pair are no quiz answers: an exact answer passes."""
    user, dataset = gold_met_in_the_queue
    state = quiz_state(rater=user, dataset=dataset.name, kind="SIS")
    result = answer(user, dataset, state.gold_pair_id, "quiz-0").state.result
    assert (result.mean_error, result.passed) == (0.0, True)


def test_an_attempts_mean_is_not_mixed_with_another_kinds_attempt(dataset, tmp_path):
    """Attempt 1 of the STS quiz, failed, does not count in attempt 1 of the SIS quiz."""
    make_sts_quiz(dataset, [1.0, 4.0], tmp_path)
    user = UserFactory(roles=["rater"])
    state = quiz_state(rater=user, dataset=dataset.name, kind="STS")
    far = 5.0 if GoldPair.objects.get(pk=state.gold_pair_id).gold_score < 2.5 else 0.0
    assert not answer(user, dataset, state.gold_pair_id, "sts", score=far, kind="STS").state.result.passed
    state = quiz_state(rater=user, dataset=dataset.name, kind="SIS")
    for step in range(LENGTH):
        state = answer(user, dataset, state.gold_pair_id, f"sis-{step}").state
    assert (state.result.mean_error, state.result.passed, state.qualified) == (0.0, True, True)
