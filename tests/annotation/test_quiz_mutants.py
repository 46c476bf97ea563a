"""Quizzes, the details `make mutation` found untested: whom the quiz is offered to (per
rater, kind and dataset) and what the pools report (annotation.quality.quiz)."""

import pytest
from rest_framework.test import APIClient

from annotation.models import Qualification, QualitySettings
from annotation.quality.quiz import QuizPool, quiz_offered, quiz_pools
from tests.annotation.queue_support import queue_pairs
from tests.annotation.test_quiz import LENGTH, REFERENCES, api_attempt, make_quiz
from tests.factories import SplitFactory, UserFactory

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
