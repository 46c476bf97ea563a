"""A submission that read its time before an exclusion was made but reached its pair after
the exclusion's run had passed: the rating is outside the exclusion (it was stored after
it), never a valid rating inside its scope that no chunk will ever see.

The races are made certain rather than hoped for: a second connection holds a lock the
rater's submit, sent through the API, waits for (its pair's, or its pair's other slot's
once its rating's id is drawn); the admin excludes the rater through the API meanwhile;
then the lock is let go."""

from __future__ import annotations

import pytest
from django.db import connection

from annotation.core.sql import use_postgres_sql
from annotation.models import ExclusionState, Rating, RatingExclusion, RatingStatus
from annotation.quality.exclusion.chunks import rating_scope
from annotation.quality.exclusion.services import rating_exclusion_run
from tests.factories import SplitFactory
from tests.support.exclusion_support import pair_problems
from tests.support.queue_support import api_claim, client_for, queue_pairs, rate_url, rater, submit_kwargs
from tests.support.row_locks import hold_row_lock, in_thread, wait_for_lock_waiters

pytestmark = [pytest.mark.postgres, pytest.mark.sql_paths, pytest.mark.django_db(transaction=True)]


class _Race:
    """A rater with one rating (pair ``rated_pair``) who holds a lease on the other pair
    (``late_pair``, slot ``late_slot``) of a two-pair queue, and their API client."""

    def __init__(self):
        split = SplitFactory()
        queue_pairs(split=split, n_pairs=2, ratings_per_pair=2)
        self.dataset, self.bad = split.dataset, rater()
        self.client = client_for(self.bad)
        first = api_claim(self.client, self.dataset).json()["slot_id"]
        early = self.client.post(rate_url(self.dataset, "submit", first), submit_kwargs("early"), format="json")
        assert early.status_code == 201
        self.late_slot = api_claim(self.client, self.dataset).json()["slot_id"]
        self.rated_pair = Rating.objects.get(rater=self.bad).pair_id
        (self.late_pair,) = self.dataset.pairs.exclude(pk=self.rated_pair).values_list("id", flat=True)

    def submit_late(self):
        return self.client.post(rate_url(self.dataset, "submit", self.late_slot), submit_kwargs("late"), format="json")

    def exclude(self, admin_api, **body):
        return admin_api.post(
            f"/api/datasets/{self.dataset.name}/exclusions/",
            {"rater": self.bad.username, "reason": "r", **body},
            format="json",
        )


def test_a_submit_stored_after_the_exclusions_run_is_outside_it_whatever_its_time(admin_api):
    assert connection.vendor == "postgresql"
    race = _Race()
    holder = hold_row_lock("SELECT 1 FROM annotation_pair WHERE id = %s FOR UPDATE", [race.late_pair])
    answers: list = []
    try:
        thread = in_thread(race.submit_late, answers)
        wait_for_lock_waiters(holder, 1, stop_if_done=thread)
        # Kept active: unpaused, the rater's submit is stored on every path (the ORM path
        # reads the pause after the pair lock and would refuse it).
        made = race.exclude(admin_api, keep_active=True)
        assert made.status_code == 202, made.json()
        exclusion = rating_exclusion_run(exclusion_id=made.json()["id"])
        assert exclusion.state == ExclusionState.APPLIED and exclusion.ratings_excluded == 1
    finally:
        holder.rollback()
        holder.close()
    thread.join(10)
    assert not thread.is_alive()

    (answer,) = answers
    assert answer.status_code == 201, answer.json()
    late = Rating.objects.get(rater=race.bad, idempotency_key="late")
    exclusion = RatingExclusion.objects.get(pk=exclusion.pk)
    # No valid rating is left inside the exclusion: the late one is outside it, although
    # its time was read before the exclusion was made (its id was drawn after the run).
    assert Rating.objects.filter(rating_scope(exclusion), status=RatingStatus.VALID).count() == 0
    assert Rating.objects.filter(rating_scope(exclusion)).count() == 1
    assert late.status == RatingStatus.VALID and late.id > exclusion.ratings_through
    if use_postgres_sql():
        # The race as it was: the single statement's time was read before it waited.
        assert late.created_at < exclusion.created_at
    else:
        # The ORM path reads its time once the pair is locked.
        assert late.created_at > exclusion.created_at
    assert pair_problems(dataset_id=race.dataset.id) == []


def test_a_submit_that_drew_its_id_before_the_exclusion_and_commits_after_the_passes_is_excluded(admin_api):
    """The submit holds its pair and has drawn its rating's id, then waits for the pair's
    other slot (a claim holding it, here a connection of the test's): the exclusion made
    meanwhile covers that rating, whose pair no chunk visits (the rater has no committed
    rating there). The run waits for the submit before its last pass."""
    assert connection.vendor == "postgresql"
    race = _Race()
    holder = hold_row_lock(
        "SELECT 1 FROM annotation_ratingslot WHERE pair_id = %s AND (rater_id IS NULL OR rater_id <> %s) FOR UPDATE",
        [race.late_pair, race.bad.pk],
    )
    submitted: list = []
    made: list = []
    try:
        submitting = in_thread(race.submit_late, submitted)
        wait_for_lock_waiters(holder, 1, stop_if_done=submitting)
        # The API runs the exclusion as its request commits (tasks run eagerly here).
        excluding = in_thread(lambda: race.exclude(admin_api), made)
        wait_for_lock_waiters(holder, 2, stop_if_done=excluding)
    finally:
        holder.rollback()
        holder.close()
    for thread in (submitting, excluding):
        thread.join(15)
        assert not thread.is_alive()

    (answer,), (exclusion_made,) = submitted, made
    assert answer.status_code == 201, answer.json()
    assert exclusion_made.status_code == 202, exclusion_made.json()
    exclusion = RatingExclusion.objects.get(pk=exclusion_made.json()["id"])
    late = Rating.objects.get(rater=race.bad, idempotency_key="late")
    assert late.id <= exclusion.ratings_through and late.created_at < exclusion.created_at
    assert exclusion.state == ExclusionState.APPLIED
    assert Rating.objects.filter(rating_scope(exclusion), status=RatingStatus.VALID).count() == 0
    assert late.status == RatingStatus.EXCLUDED and exclusion.ratings_excluded == 2
    assert pair_problems(dataset_id=race.dataset.id) == []
