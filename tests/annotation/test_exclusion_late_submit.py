"""A submission that read its time before an exclusion was made but reached its pair after
the exclusion's run had passed: the rating is outside the exclusion (it was stored after
it), never a valid rating inside its scope that no chunk will ever see.

The race is made certain rather than hoped for: a second connection holds the pair's lock
while the rater's submit, sent through the API, waits for it; the admin excludes the rater
through the API meanwhile and the run finishes; then the lock is let go."""

from __future__ import annotations

import threading
import time

import psycopg2
import pytest
from django.db import connection

from annotation.models import ExclusionState, Rating, RatingExclusion, RatingStatus
from annotation.quality.exclusion.chunks import rating_scope
from annotation.quality.exclusion.services import rating_exclusion_run
from annotation.sql import use_postgres_sql
from tests.annotation.exclusion_support import pair_problems
from tests.annotation.queue_support import api_claim, client_for, queue_pairs, rate_url, rater, submit_kwargs
from tests.factories import SplitFactory

pytestmark = [pytest.mark.postgres, pytest.mark.sql_paths, pytest.mark.django_db(transaction=True)]


def _lock_pair(pair_id: int):
    """A connection of its own holding ``pair_id``'s row lock, as a chunk or another
    submission would."""
    holder = psycopg2.connect(**connection.get_connection_params())
    cursor = holder.cursor()
    cursor.execute("SELECT 1 FROM annotation_pair WHERE id = %s FOR UPDATE", [pair_id])
    return holder


def _wait_until_a_backend_waits_for_a_lock(holder, answers, seconds: float = 10.0) -> None:
    own = holder.get_backend_pid()
    deadline = time.monotonic() + seconds
    with holder.cursor() as cursor:
        while time.monotonic() < deadline:
            # The holder is inside its transaction, where the activity view keeps the
            # snapshot of its first read unless told to drop it.
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> %s "
                "AND datname = current_database()",
                [own],
            )
            if cursor.fetchone()[0]:
                return
            time.sleep(0.02)
    raise AssertionError(f"the submit never waited for the pair lock: {answers}")


def _submit_in_thread(client, dataset, slot_id, answers: list) -> threading.Thread:
    def post():
        try:
            answers.append(client.post(rate_url(dataset, "submit", slot_id), submit_kwargs("late"), format="json"))
        except Exception as error:  # shown by the test's assertions
            answers.append(error)
        finally:
            connection.close()

    thread = threading.Thread(target=post)
    thread.start()
    return thread


def test_a_submit_stored_after_the_exclusions_run_is_outside_it_whatever_its_time(admin_api):
    assert connection.vendor == "postgresql"
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=2, ratings_per_pair=2)
    dataset, bad = split.dataset, rater()
    client = client_for(bad)
    first = api_claim(client, dataset).json()["slot_id"]
    assert client.post(rate_url(dataset, "submit", first), submit_kwargs("early"), format="json").status_code == 201
    late_slot = api_claim(client, dataset).json()["slot_id"]
    rated_pair = Rating.objects.get(rater=bad).pair_id
    (late_pair,) = dataset.pairs.exclude(pk=rated_pair).values_list("id", flat=True)

    holder = _lock_pair(late_pair)
    answers: list = []
    try:
        thread = _submit_in_thread(client, dataset, late_slot, answers)
        _wait_until_a_backend_waits_for_a_lock(holder, answers)
        made = admin_api.post(
            f"/api/datasets/{dataset.name}/exclusions/",
            # Kept active: unpaused, the rater's submit is stored on every path (the ORM
            # path reads the pause after the pair lock and would refuse it).
            {"rater": bad.username, "reason": "r", "keep_active": True},
            format="json",
        )
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
    late = Rating.objects.get(rater=bad, idempotency_key="late")
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
    assert pair_problems(dataset.id) == []
