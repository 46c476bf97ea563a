"""Adaptive N's bounds under any order of claims, submits, exclusions and undos, through
the rating policy and the serving mechanism on PostgreSQL (hypothesis, generated
operation sequences).

After every operation: no pair asks for more ratings than its maximum or fewer than its
minimum, no pair holds more valid ratings than its maximum, no rater rated a pair twice,
and the queue's invariant holds (``pair_problems``). At the end the queue is drained by
raters who have not rated yet: then every pair holds at least its minimum and at most its
maximum of valid ratings (the queue cannot run dry with enough fresh raters, who claim
past every lease's expiry).

The world (three adaptive pairs, minimum 2, maximum 4, a tight target so pairs grow) is
built once; each example runs in a savepoint rolled back at its end. Bounded and
deterministic: EXAMPLES examples of at most STEPS operations, derandomized.
"""

from __future__ import annotations

import os
from datetime import timedelta

import pytest
from django.conf import settings as settings_module
from django.db import connection, transaction
from django.db.models import Count
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.core.errors import DomainError
from annotation.models import Pair, Rating, RatingExclusion, RatingStatus
from tests.factories import UserFactory
from tests.support.exclusion_support import exclude, pair_problems, undo
from tests.support.queue_support import claim, queue_pairs, rater, submit

pytestmark = [pytest.mark.django_db, pytest.mark.postgres, pytest.mark.slow]

EXAMPLES = int(os.environ.get("ADAPTIVE_MACHINE_EXAMPLES", "25"))
STEPS = 30
MINIMUM, MAXIMUM, HALF_WIDTH = 2, 4, 0.3
RATERS = 6

operations = st.lists(
    st.one_of(
        st.tuples(st.just("claim"), st.integers(0, RATERS - 1)),
        st.tuples(st.just("submit"), st.integers(0, RATERS - 1), st.sampled_from([0.0, 1.0, 2.5, 3.0, 4.5, 5.0])),
        st.tuples(st.just("exclude"), st.integers(0, RATERS - 1)),
        st.tuples(st.just("undo"), st.integers(0, RATERS - 1)),
    ),
    max_size=STEPS,
)


class _Rollback(Exception):
    pass


@pytest.fixture
def world():
    _, pairs = queue_pairs(n_pairs=3, ratings_per_pair=MINIMUM, adaptive=(MAXIMUM, HALF_WIDTH))
    return {
        "dataset": pairs[0].dataset,
        "raters": [rater() for _ in range(RATERS)],
        "fresh": [rater() for _ in range(MAXIMUM + RATERS)],
        "admin": UserFactory(roles=["admin"]),
    }


def bounds_problems(dataset) -> list[str]:
    problems = pair_problems(dataset.pk)
    for pair in Pair.objects.filter(dataset=dataset):
        valid = Rating.objects.filter(pair=pair, status=RatingStatus.VALID).count()
        if not MINIMUM <= pair.ratings_required <= pair.ratings_max == MAXIMUM:
            problems.append(f"pair {pair.pk} asks for {pair.ratings_required} of {MINIMUM}..{MAXIMUM}")
        if valid > MAXIMUM:
            problems.append(f"pair {pair.pk} holds {valid} valid ratings, above {MAXIMUM}")
    twice = Rating.objects.filter(pair__dataset=dataset).values("pair", "rater").annotate(n=Count("id"))
    problems += [f"rater {row['rater']} rated pair {row['pair']} twice" for row in twice if row["n"] > 1]
    return problems


def apply(operation, world, held: dict, capture, step: int) -> None:
    dataset, user = world["dataset"], world["raters"][operation[1]]
    kind = operation[0]
    if kind == "claim":
        held[operation[1]] = claim(user, dataset)
    elif kind == "submit" and held.get(operation[1]) is not None:
        submit(user, dataset, held.pop(operation[1]).slot_id, f"k{step}", score=operation[2])
    elif kind == "exclude" and not RatingExclusion.objects.filter(rater=user, undone_at__isnull=True).exists():
        exclude(capture, dataset=dataset, rater=user, reason="spam", created_by=world["admin"])
    elif kind == "undo":
        exclusion = RatingExclusion.objects.filter(rater=user, undone_at__isnull=True).first()
        if exclusion is not None:
            undo(capture, exclusion, by=world["admin"])


def drain(world) -> None:
    """Fresh raters claim and rate, past every lease's expiry (leases the sequence left
    held are taken over, as the next rater would), until nobody is served any more."""
    dataset, served = world["dataset"], True
    later = timezone.now() + timedelta(seconds=2 * settings_module.LEASE_TTL_SECONDS)
    while served:
        served = False
        for number, user in enumerate(world["fresh"]):
            assignment = claim(user, dataset, now=later)
            if assignment is not None:
                key = f"drain-{number}-{assignment.slot_id}"
                submit(user, dataset, assignment.slot_id, key, score=2.6, now=later)
                served = True


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(sequence=operations)
def test_no_pair_ends_outside_its_bounds(world, django_capture_on_commit_callbacks, sequence):
    assert connection.vendor == "postgresql"
    try:
        with transaction.atomic():
            held: dict = {}
            for step, operation in enumerate(sequence):
                try:
                    apply(operation, world, held, django_capture_on_commit_callbacks, step)
                except DomainError:
                    held.pop(operation[1], None)  # refused (paused, excluded, lease gone): nothing stored
                assert bounds_problems(world["dataset"]) == [], (step, operation)
            drain(world)
            assert bounds_problems(world["dataset"]) == []
            for pair in Pair.objects.filter(dataset=world["dataset"]):
                valid = Rating.objects.filter(pair=pair, status=RatingStatus.VALID).count()
                assert MINIMUM <= valid <= MAXIMUM, (pair.pk, valid)
                assert valid == pair.ratings_required == pair.ratings_done
            raise _Rollback
    except _Rollback:
        pass
