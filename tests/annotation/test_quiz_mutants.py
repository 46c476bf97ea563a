"""Quizzes, the details `make mutation` found untested: whom the quiz is offered to (per
rater, kind and dataset), what the pools and attempt lengths report, which attempt is the
rater's here, two tabs beginning one attempt, and the rater's own list of attempts
(annotation.quality.quiz)."""

import random
from datetime import UTC, datetime, timedelta

import pytest
from rest_framework.test import APIClient

from annotation.core.errors import NotFound
from annotation.models import GoldPair, Qualification, QualitySettings, QuizAttempt
from annotation.quality.quiz import (
    QuizPool,
    quiz_answer,
    quiz_attempt_length,
    quiz_offered,
    quiz_pools,
    quiz_results,
    quiz_set,
    quiz_state,
)
from annotation.serving.shapes import QueueInputError
from tests.factories import SplitFactory, UserFactory
from tests.support.queue_support import queue_pairs
from tests.support.quiz import LENGTH, REFERENCES, api_attempt, make_quiz, make_sts_quiz, second_dataset

pytestmark = pytest.mark.django_db


@pytest.fixture
def dataset(tmp_path):
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


def test_the_quiz_is_offered_until_this_rater_is_qualified_for_this_kind_here(dataset):
    other_dataset = SplitFactory().dataset
    user, other = UserFactory(roles=["rater"]), UserFactory(roles=["rater"])
    assert offered(user, dataset) is True
    assert offered(user, dataset, "STS") is False, "no STS pool"
    Qualification.objects.create(rater=other, dataset=dataset, kind="SIS")
    Qualification.objects.create(rater=user, dataset=other_dataset, kind="SIS")
    Qualification.objects.create(rater=user, dataset=dataset, kind="STS")
    assert offered(user, dataset) is True, "another rater's, another dataset's or another kind's grant"
    assert offered(other, dataset) is False
    Qualification.objects.create(rater=user, dataset=None, kind="SIS")
    assert offered(user, dataset) is False, "a grant for every dataset"


def test_two_failed_attempts_close_the_quiz_for_that_rater_only(dataset):
    user, other = UserFactory(roles=["rater"]), UserFactory(roles=["rater"])
    fail_twice(user, dataset)
    assert offered(user, dataset) is False
    assert offered(other, dataset) is True
    client = APIClient()
    client.force_authenticate(other)
    client.post(f"/api/rate/{dataset.name}/quiz/sis/", {}, format="json")
    assert offered(other, dataset) is True, "an open attempt"


def test_two_failed_attempts_of_one_kind_leave_the_quiz_of_another_kind_open(dataset, tmp_path):
    make_sts_quiz(dataset, [0.5, 1.5, 2.5, 3.5, 4.5, 5.0], tmp_path)
    user = UserFactory(roles=["rater"])
    fail_twice(user, dataset)
    assert (offered(user, dataset), offered(user, dataset, "STS")) == (False, True)


def test_another_raters_answers_to_the_same_questions_are_not_this_raters(dataset):
    first, second = UserFactory(roles=["rater"]), UserFactory(roles=["rater"])
    quiz_state(rater=first, dataset=dataset.name, kind="SIS", rng=random.Random(7))
    client = APIClient()
    client.force_authenticate(first)
    api_attempt(client, dataset, score_for=lambda question: 2.0, tag="first")  # the attempt begun above
    state = quiz_state(rater=second, dataset=dataset.name, kind="SIS", rng=random.Random(7))
    assert QuizAttempt.objects.get(rater=second).order == QuizAttempt.objects.get(rater=first).order
    assert (state.attempt, state.answered, state.result) == (1, 0, None)


def test_attempts_in_another_dataset_do_not_count(dataset, tmp_path):
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=3, ratings_per_pair=2)
    (tmp_path / "other").mkdir()
    make_quiz(split.dataset, REFERENCES, tmp_path / "other")
    QualitySettings.objects.create(dataset=split.dataset, quiz_length=LENGTH)
    user = UserFactory(roles=["rater"])
    fail_twice(user, split.dataset)
    assert offered(user, split.dataset) is False
    assert offered(user, dataset) is True


def test_the_pools_are_the_datasets_active_quiz_pairs_per_kind(dataset, tmp_path):
    other = SplitFactory()
    (tmp_path / "other").mkdir()
    make_quiz(other.dataset, [1.0, 2.0], tmp_path / "other")
    (pool,) = quiz_pools(dataset_id=dataset.id)
    assert (pool.kind, pool.size, pool.quiz_length) == ("SIS", len(REFERENCES), LENGTH)
    first = dataset.gold_pairs.filter(in_quiz=True).order_by("pk").first()
    first.active = False
    first.save(update_fields=["active"])
    dataset.gold_pairs.exclude(pk=first.pk).filter(pk__lt=first.pk + 3).update(in_quiz=False)
    (pool,) = quiz_pools(dataset_id=dataset.id)
    assert pool.size == len(dataset.gold_pairs.filter(in_quiz=True, active=True))


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (10, "SIS quiz: 10 question(s) in the pool, 5 per attempt."),
        (
            7,
            "SIS quiz: 7 question(s) in the pool: too small for 5 per attempt (two attempts that never repeat "
            "need 10); attempts ask 3. Add 3 more.",
        ),
        (
            1,
            "SIS quiz: 1 question(s) in the pool: too small, the quiz cannot run, so raters not yet qualified "
            "stay closed out of SIS; add 9 more for attempts of 5.",
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


def test_each_attempt_length_counts_only_this_datasets_active_quiz_pairs_of_the_kind(dataset, tmp_path):
    """The rating page announces how many questions an attempt asks."""
    second_dataset(tmp_path, references=[1.0, 2.0, 3.0, 4.0])
    make_sts_quiz(dataset, [1.0, 4.0], tmp_path)
    assert quiz_attempt_length(dataset_id=dataset.id, kind="SIS") == LENGTH
    assert quiz_attempt_length(dataset_id=dataset.id, kind="STS") == 1, "two STS questions: attempts of one"
    QualitySettings.objects.filter(dataset=dataset).update(quiz_length=4)
    assert quiz_attempt_length(dataset_id=dataset.id, kind="SIS") == 4
    GoldPair.objects.filter(pk=dataset.gold_pairs.order_by("pk").first().pk).update(active=False)
    assert quiz_attempt_length(dataset_id=dataset.id, kind="SIS") == 3, "seven active questions: attempts of three"


def test_putting_pairs_in_the_quiz_counts_only_the_pairs_that_changed_in_that_dataset(dataset, tmp_path):
    """The admin is told how many pairs moved; another dataset's pairs are not moved."""
    ids = list(dataset.gold_pairs.values_list("pk", flat=True))
    assert quiz_set(dataset_id=dataset.id, gold_pair_ids=ids, in_quiz=True) == 0, "all in the quiz already"
    assert quiz_set(dataset_id=dataset.id, gold_pair_ids=ids[:2], in_quiz=False) == 2
    assert quiz_set(dataset_id=dataset.id, gold_pair_ids=ids, in_quiz=True) == 2
    other = second_dataset(tmp_path)
    other_ids = list(other.gold_pairs.values_list("pk", flat=True))
    assert quiz_set(dataset_id=dataset.id, gold_pair_ids=other_ids, in_quiz=False) == 0
    assert set(GoldPair.objects.filter(pk__in=other_ids).values_list("in_quiz", flat=True)) == {True}


def test_the_state_is_qualified_only_by_this_raters_grant_of_this_kind(dataset):
    user, other = UserFactory(roles=["rater"]), UserFactory(roles=["rater"])
    Qualification.objects.create(rater=other, dataset=dataset, kind="SIS")
    Qualification.objects.create(rater=user, dataset=dataset, kind="STS")
    state = quiz_state(rater=user, dataset=dataset.name, kind="SIS")
    assert (state.kind, state.qualified) == ("SIS", False)
    Qualification.objects.create(rater=user, dataset=dataset, kind="SIS")
    assert quiz_state(rater=user, dataset=dataset.name, kind="SIS").qualified is True


def test_an_open_attempt_elsewhere_is_not_the_attempt_here(dataset, tmp_path):
    """A rater midway through a quiz of another dataset or another kind loads this one's
    own question."""
    make_sts_quiz(dataset, [1.0, 4.0], tmp_path)
    other = second_dataset(tmp_path)
    user = UserFactory(roles=["rater"])
    elsewhere = quiz_state(rater=user, dataset=other.name, kind="SIS")
    sts = quiz_state(rater=user, dataset=dataset.name, kind="STS")
    assert GoldPair.objects.get(pk=elsewhere.gold_pair_id).dataset == other
    assert GoldPair.objects.get(pk=sts.gold_pair_id).kind == "STS"
    sis = quiz_state(rater=user, dataset=dataset.name, kind="SIS")
    assert (sis.kind, sis.attempt, sis.total) == ("SIS", 1, LENGTH)
    assert GoldPair.objects.get(pk=sis.gold_pair_id).dataset == dataset
    assert GoldPair.objects.get(pk=sis.gold_pair_id).kind == "SIS"


def test_a_bad_kind_or_dataset_is_named(dataset):
    user = UserFactory(roles=["rater"])
    with pytest.raises(QueueInputError, match="^kind must be one of STS, SIS, SITS, got 'XYZ'$"):
        quiz_state(rater=user, dataset=dataset.name, kind="XYZ")
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


def test_two_tabs_beginning_attempt_two_at_once_share_the_one_attempt(dataset, tmp_path):
    """The tab that loses the race gets the winner's attempt, not an error, and not
    another rater's, dataset's, kind's or number's attempt (each exists here)."""
    make_sts_quiz(dataset, [1.0, 4.0], tmp_path)
    other_dataset = second_dataset(tmp_path)
    user, other = UserFactory(roles=["rater"]), UserFactory(roles=["rater"])
    for rater, ds, kind in ((other, dataset, "SIS"), (user, other_dataset, "SIS"), (user, dataset, "STS")):
        fail_first_attempt(rater, ds, kind)
        quiz_state(rater=rater, dataset=ds.name, kind=kind, start=True)
    fail_first_attempt(user, dataset)

    def other_tab():
        return quiz_state(rater=user, dataset=dataset.name, kind="SIS", start=True, rng=random.Random(1))

    racing = OtherTabFirst(other_tab)
    state = quiz_state(rater=user, dataset=dataset.name, kind="SIS", start=True, rng=racing)
    assert racing.other_state is not None and racing.other_state.attempt == 2
    assert state == racing.other_state
    assert QuizAttempt.objects.filter(rater=user, dataset=dataset, kind="SIS").count() == 2


def test_the_raters_own_page_lists_their_attempts_newest_first_with_their_datasets(
    dataset, tmp_path, django_assert_num_queries
):
    """quiz_results feeds the rater's own page: only their attempts, the newest on top,
    each with its dataset's name read in the one query (no query per row)."""
    other_dataset = second_dataset(tmp_path)
    user, other = UserFactory(roles=["rater"]), UserFactory(roles=["rater"])
    start = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    quiz_state(rater=user, dataset=dataset.name, kind="SIS", now=start)
    quiz_state(rater=other, dataset=dataset.name, kind="SIS", now=start + timedelta(hours=1))
    quiz_state(rater=user, dataset=other_dataset.name, kind="SIS", now=start + timedelta(hours=2))
    with django_assert_num_queries(1):
        listed = [(a.dataset.name, a.number, a.started_at) for a in quiz_results(rater=user)]
    assert listed == [(other_dataset.name, 1, start + timedelta(hours=2)), (dataset.name, 1, start)]
