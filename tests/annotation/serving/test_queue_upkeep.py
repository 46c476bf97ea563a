"""Upkeep: releasing expired leases, the open-pairs counters and their rebuild, and the
beat schedule that runs both. Every test taking ``engine`` runs on each engine (see
queue_support.engine)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from annotation.models import QueueCounter, RatingSlot, SlotState
from annotation.serving import leases_release_expired, queue_counters_rebuild, slot_heartbeat
from tests.factories import SplitFactory
from tests.support import queue_support
from tests.support.queue_support import TTL, claim, queue_pairs, rater, submit

pytestmark = pytest.mark.django_db

engine = queue_support.engine  # every test taking it runs on each engine


def test_release_expired_leases_only_touches_expired_ones(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    queue_pairs(split=split, n_pairs=3)
    users = [rater() for _ in range(3)]
    held = [claim(u, dataset) for u in users]
    clock.advance(TTL / 2)
    slot_heartbeat(rater=users[0], dataset=dataset.name, slot_id=held[0].slot_id)
    clock.advance(TTL / 2 + 1)
    assert leases_release_expired(batch_size=1) == 2
    states = dict(RatingSlot.objects.filter(pk__in=[h.slot_id for h in held]).values_list("pk", "state"))
    assert states == {held[0].slot_id: "leased", held[1].slot_id: "open", held[2].slot_id: "open"}
    assert leases_release_expired() == 0


def test_counters_follow_completion_and_rebuild_repairs_drift(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    queue_pairs(split=split, n_pairs=3, ratings_per_pair=1)
    counter = QueueCounter.objects.get(dataset=dataset, kind="SIS")
    assert counter.pairs_open == 3
    user = rater()
    submit(user, dataset, claim(user, dataset).slot_id, "x")
    counter.refresh_from_db()
    assert counter.pairs_open == 2
    QueueCounter.objects.filter(pk=counter.pk).update(pairs_open=40)
    assert queue_counters_rebuild() >= 1
    counter.refresh_from_db()
    assert counter.pairs_open == 2


def test_beat_schedule_runs_the_tidy_up_tasks(clock, settings):
    from annotation.serving.tasks import recount_open_pairs, release_expired_leases
    from config.celery import app

    app.loader.import_default_modules()  # what a worker does at start: autodiscover the tasks
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        assert entry["task"] in app.tasks, entry
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=2)
    held = claim(rater(), split.dataset)
    clock.advance(TTL + 1)
    assert release_expired_leases.delay().get() == 1
    assert RatingSlot.objects.get(pk=held.slot_id).state == SlotState.OPEN
    assert recount_open_pairs.delay().get() >= 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_submit_completing_a_pair_does_not_wait_for_a_recount(clock):
    """While the recount reads its count, another session's submit completes a pair and
    takes a pair off the counter: it must not wait for the recount (2 s lock timeout),
    and the recount keeps it (the counter ends at the true count)."""
    assert connection.vendor == "postgresql"
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=3, ratings_per_pair=1)
    user = rater()
    held = claim(user, split.dataset)
    QueueCounter.objects.filter(dataset=split.dataset).update(pairs_open=40)  # drift to repair
    outcome = []

    def submit_elsewhere():
        try:
            with connection.cursor() as cursor:
                cursor.execute("SET lock_timeout = '2s'")
            outcome.append(submit(user, split.dataset, held.slot_id, "meanwhile"))
        except Exception as error:  # the test reports what stopped the submit
            outcome.append(error)
        finally:
            connection.close()

    def after_the_count(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if "annotation_pair" in sql and "COUNT(" in sql.upper() and not outcome:
            thread = threading.Thread(target=submit_elsewhere)
            thread.start()
            thread.join()
        return result

    with connection.execute_wrapper(after_the_count):
        queue_counters_rebuild()
    assert len(outcome) == 1 and not isinstance(outcome[0], Exception), outcome
    assert QueueCounter.objects.get(dataset=split.dataset, kind="SIS").pairs_open == 2
