"""The serveable gold pairs each rater has a lease of, per dataset and kind
(``RaterGoldMet``), kept by PostgreSQL's triggers: against a recount of the leases after
every kind of write to the leases and the gold pairs; a lease's own updates and a write
that changes no count leave the row alone; the migration's count of the leases stored
before it; a deactivation racing a lease, in both orders; and the progress statement's "pairs
left" reading the count instead of testing every lease."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import timedelta
from importlib import import_module

import pytest
from django.db import connection
from django.utils import timezone

from annotation.models import GoldLease, GoldPair, QualitySettings, QuizAttempt, RaterGoldMet, TaskKind
from annotation.quality.quiz import quiz_set
from annotation.rating.progress_sql import progress_row
from tests.factories import CaptionFactory, UserFactory
from tests.support.queue_support import claim, queue_pairs, rater, submit
from tests.support.runner_support import another_session

pytestmark = [pytest.mark.postgres]


def recount() -> Counter:
    """What the counter should hold: leases of serveable gold pairs per rater and the
    pair's dataset and kind."""
    leases = GoldLease.objects.filter(gold_pair__active=True, gold_pair__in_quiz=False)
    return Counter(leases.values_list("rater", "gold_pair__dataset", "gold_pair__kind"))


def counted() -> Counter:
    rows = RaterGoldMet.objects.filter(leased_serveable__gt=0)
    return Counter({(r, d, k): n for r, d, k, n in rows.values_list("rater", "dataset", "kind", "leased_serveable")})


def lease(gold: GoldPair, user, state: str = "done") -> GoldLease:
    now = timezone.now()
    return GoldLease(
        gold_pair=gold,
        rater=user,
        dataset_id=gold.dataset_id,
        kind=gold.kind,
        state=state,
        leased_at=now,
        lease_expires_at=now + timedelta(minutes=10) if state == "leased" else None,
    )


def row_version(user, dataset_id: int, kind: str) -> str | None:
    """The counter row's physical version (ctid): any write to the row moves it."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT ctid::text FROM annotation_ratergoldmet WHERE rater_id = %s AND dataset_id = %s AND kind = %s",
            [user.pk, dataset_id, kind],
        )
        row = cursor.fetchone()
    return None if row is None else row[0]


def raw(sql: str, params: list) -> None:
    # Raw SQL, as a script or an admin's psql would: the counter follows whatever writes.
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


@pytest.mark.django_db
def test_the_counter_follows_every_write_of_the_leases_and_gold_pairs(two_splits, clock):
    split_a, split_b = two_splits
    a, b = split_a.dataset_id, split_b.dataset_id
    sis = list(GoldPair.objects.filter(dataset_id=a, kind=TaskKind.SIS).order_by("id"))
    sts = list(GoldPair.objects.filter(dataset_id=a, kind=TaskKind.STS).order_by("id"))
    other = list(GoldPair.objects.filter(dataset_id=b).order_by("id"))
    one, two, three = rater(), rater(), rater(["SIS"])
    caption = CaptionFactory(image=sis[3].image_a)
    queue_pairs(split=split_a, kind=TaskKind.SIS, n_pairs=2)
    QualitySettings.objects.create(dataset_id=a, gold_one_in=1)
    moved = {}
    writes = [
        # One statement, several raters and kinds, one lease of a pair in the quiz.
        lambda: quiz_set(dataset_id=a, gold_pair_ids=[sts[2].pk], in_quiz=True),
        lambda: GoldLease.objects.bulk_create(
            [
                *(lease(gold, one) for gold in (sis[0], sis[1], sts[0], other[0])),
                *(lease(gold, two) for gold in (sis[0], sts[2], sis[3])),
            ]
        ),
        lambda: claim(three, split_a.dataset),  # the gold claim's own insert
        lambda: quiz_set(dataset_id=a, gold_pair_ids=[sis[0].pk], in_quiz=True),
        lambda: GoldPair.objects.filter(pk=sis[1].pk).update(active=False),  # the admin's "retire"
        lambda: GoldPair.objects.filter(pk=sis[0].pk).update(active=False),  # retired while in the quiz
        lambda: quiz_set(dataset_id=a, gold_pair_ids=[sis[0].pk, sts[2].pk], in_quiz=False),
        lambda: GoldPair.objects.filter(pk__in=[sis[0].pk, sis[1].pk]).update(active=True),  # served again
        lambda: moved.update(sts=GoldLease.objects.get(gold_pair=sts[0], rater=one)),
        lambda: GoldLease.objects.filter(pk=moved["sts"].pk).update(rater=two),  # another rater
        lambda: GoldLease.objects.filter(pk=moved["sts"].pk).update(gold_pair=sis[2], kind=TaskKind.SIS),
        lambda: GoldLease.objects.filter(pk=moved["sts"].pk).update(gold_pair=sts[1], rater=one, kind=TaskKind.STS),
        lambda: GoldPair.objects.filter(pk=sis[3].pk).update(kind=TaskKind.SITS, caption_a=caption, image_b=None),
        lambda: GoldPair.objects.filter(dataset_id=b).update(dataset_id=a),  # moved to the other dataset
        lambda: GoldLease.objects.filter(gold_pair=sis[1]).delete(),
        lambda: GoldPair.objects.filter(pk=sis[2].pk).delete(),  # its leases first (Django's cascade)
        # The pair first, then its leases (the foreign key waits for the commit); the pair
        # written again after its leases, then deleted for good.
        lambda: raw("CREATE TEMP TABLE kept_pair AS SELECT * FROM annotation_goldpair WHERE id = %s", [sis[0].pk]),
        lambda: raw("DELETE FROM annotation_goldpair WHERE id = %s", [sis[0].pk]),
        lambda: raw("INSERT INTO annotation_goldpair SELECT * FROM kept_pair", []),
        lambda: raw("DELETE FROM annotation_goldpair WHERE id = %s", [sis[0].pk]),
        lambda: raw("DELETE FROM annotation_goldlease WHERE gold_pair_id = %s", [sis[0].pk]),
        lambda: two.delete(),
    ]
    raters, seen = {one.pk, two.pk, three.pk}, set()
    for number, write in enumerate(writes):
        write()
        assert counted() == recount(), number
        seen |= set(recount())
    # The walk counted leases of every rater, both datasets and three kinds.
    assert {key[0] for key in seen} == raters
    assert {key[1:] for key in seen} >= {(a, "SIS"), (a, "STS"), (a, "SITS"), (b, "SIS")}
    # One keeps the lease moved to an STS pair and the one of B's pair moved to A; three's
    # pair was drawn at random.
    assert recount()[(one.pk, a, "STS")] == recount()[(one.pk, a, "SIS")] == 1


@pytest.mark.django_db
def test_a_lease_renewed_or_submitted_and_a_write_that_changes_no_count_leave_the_row_alone(two_splits, clock):
    split_a, _ = two_splits
    a = split_a.dataset_id
    queue_pairs(split=split_a, kind=TaskKind.SIS, n_pairs=2)
    QualitySettings.objects.create(dataset_id=a, gold_one_in=1)
    user = rater(["SIS"])
    held = claim(user, split_a.dataset)
    gold = GoldLease.objects.get(pk=held.slot_id).gold_pair
    before = row_version(user, a, "SIS")
    assert before is not None and counted() == recount() == Counter({(user.pk, a, "SIS"): 1})
    assert claim(user, split_a.dataset).slot_id == held.slot_id  # resumed: the lease renewed
    submit(user, split_a.dataset, held.slot_id, "k1")
    GoldLease.objects.get(pk=held.slot_id).save()  # every column written, none changed
    GoldPair.objects.filter(pk=gold.pk).update(gold_score=4.5, explanation="edited")
    GoldPair.objects.filter(dataset_id=a).update(explanation="all edited")
    assert row_version(user, a, "SIS") == before
    GoldPair.objects.filter(pk=gold.pk).update(active=False)
    assert row_version(user, a, "SIS") != before and counted() == recount() == Counter()


@pytest.mark.django_db
def test_truncating_the_leases_empties_the_counter(two_splits):
    gold = GoldPair.objects.filter(dataset_id=two_splits[0].dataset_id).first()
    GoldLease.objects.bulk_create([lease(gold, rater())])
    assert counted()
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the uploads' deferred checks, before TRUNCATE
        cursor.execute("TRUNCATE annotation_goldlease CASCADE")
    assert not RaterGoldMet.objects.exists()


@pytest.mark.django_db
def test_the_migration_counts_the_leases_stored_before_it(two_splits):
    split_a, _ = two_splits
    one, two = rater(), rater()
    golds = list(GoldPair.objects.order_by("id"))
    GoldLease.objects.bulk_create([lease(gold, one) for gold in golds] + [lease(golds[0], two)])
    quiz_set(dataset_id=split_a.dataset_id, gold_pair_ids=[golds[1].pk], in_quiz=True)
    GoldPair.objects.filter(pk=golds[2].pk).update(active=False)
    RaterGoldMet.objects.all().delete()
    with connection.cursor() as cursor:
        cursor.execute(import_module("annotation.migrations.0034_rater_gold_met").BACKFILL)
    assert counted() == recount() and sum(recount().values()) == len(golds) - 2 + 1


def _deactivation_in_flight(gold_id: int):
    """A second session that retired the gold pair and has not committed yet."""
    admin = another_session()
    with admin.cursor() as cursor:
        cursor.execute("UPDATE annotation_goldpair SET active = false WHERE id = %s", [gold_id])
    return admin


def _in_a_third_session(sql: str, params: list) -> threading.Thread:
    """``sql`` committed by a session of its own, in a thread (it may wait for a lock)."""

    def run():
        session = another_session()
        try:
            with session.cursor() as cursor:
                cursor.execute("SET lock_timeout = '20s'")
                cursor.execute(sql, params)
            session.commit()
        finally:
            session.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _waits_for_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0] > 0


def _wait_for_a_lock() -> None:
    deadline = timezone.now() + timedelta(seconds=10)
    while not _waits_for_a_lock() and timezone.now() < deadline:
        threading.Event().wait(0.02)
    assert _waits_for_a_lock(), "the second write did not wait for the first"


def _race(gold: GoldPair, sql: str, params: list) -> None:
    """A lease written by one session while another retires its gold pair: the lease's
    triggers wait for the retirement's commit, then count what it left."""
    admin = _deactivation_in_flight(gold.pk)
    try:
        writer = _in_a_third_session(sql, params)
        _wait_for_a_lock()
        admin.commit()
        writer.join(30)
    finally:
        admin.close()


@pytest.mark.django_db(transaction=True)
def test_a_lease_taken_while_its_pair_is_retired_is_not_counted(two_splits):
    gold = GoldPair.objects.filter(dataset_id=two_splits[0].dataset_id, kind=TaskKind.SIS).first()
    user = UserFactory()
    insert = """INSERT INTO annotation_goldlease (gold_pair_id, rater_id, dataset_id, kind, state, leased_at,
                    lease_expires_at, flag_reason, flag_note)
                VALUES (%s, %s, %s, %s, 'done', now(), NULL, '', '')"""
    _race(gold, insert, [gold.pk, user.pk, gold.dataset_id, gold.kind])
    assert GoldLease.objects.filter(gold_pair=gold, rater=user).exists()
    assert counted() == recount() == Counter()


@pytest.mark.django_db(transaction=True)
def test_a_lease_deleted_while_its_pair_is_retired_is_taken_off_once(two_splits):
    gold, kept = GoldPair.objects.filter(dataset_id=two_splits[0].dataset_id, kind=TaskKind.SIS).order_by("id")[:2]
    user = UserFactory()
    GoldLease.objects.bulk_create([lease(gold, user), lease(kept, user)])
    assert counted() == Counter({(user.pk, gold.dataset_id, "SIS"): 2})
    _race(gold, "DELETE FROM annotation_goldlease WHERE gold_pair_id = %s", [gold.pk])
    assert not GoldLease.objects.filter(gold_pair=gold).exists()
    assert counted() == recount() == Counter({(user.pk, gold.dataset_id, "SIS"): 1})


@pytest.mark.django_db(transaction=True)
def test_a_pair_retired_while_a_lease_of_it_is_taken_takes_that_lease_off(two_splits):
    # The other order: the lease's session locked the pair first, so the retirement waits
    # for its commit and then sees the lease.
    gold = GoldPair.objects.filter(dataset_id=two_splits[0].dataset_id, kind=TaskKind.SIS).first()
    user = UserFactory()
    leasing = another_session()
    try:
        with leasing.cursor() as cursor:
            cursor.execute(
                """INSERT INTO annotation_goldlease (gold_pair_id, rater_id, dataset_id, kind, state, leased_at,
                       lease_expires_at, flag_reason, flag_note)
                   VALUES (%s, %s, %s, %s, 'done', now(), NULL, '', '')""",
                [gold.pk, user.pk, gold.dataset_id, gold.kind],
            )
        retire = _in_a_third_session("UPDATE annotation_goldpair SET active = false WHERE id = %s", [gold.pk])
        _wait_for_a_lock()
        leasing.commit()
        retire.join(30)
    finally:
        leasing.close()
    assert not GoldPair.objects.get(pk=gold.pk).active
    assert GoldLease.objects.filter(gold_pair=gold, rater=user).exists()
    assert counted() == recount() == Counter()


@pytest.mark.django_db
def test_the_progress_reads_the_leased_gold_pairs_from_the_counter(two_splits):
    split_a, _ = two_splits
    queue_pairs(split=split_a, kind=TaskKind.SIS, n_pairs=3, ratings_per_pair=3)
    user = rater(["SIS"])
    golds = GoldPair.objects.filter(dataset_id=split_a.dataset_id, kind=TaskKind.SIS).order_by("id")
    GoldLease.objects.bulk_create([lease(golds[0], user), lease(golds[1], user)])
    day = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)

    def pairs_left() -> int:
        row = progress_row(rater_id=user.pk, dataset=split_a.dataset.name, day_start=day)
        return dict(zip(row[2], row[3], strict=True))["SIS"]

    assert pairs_left() == 3 + 4 - 2  # three open pairs, four gold pairs, two of them met
    # Asked in a quiz attempt too, a leased pair is still one pair met.
    QuizAttempt.objects.create(
        rater=user,
        dataset_id=split_a.dataset_id,
        kind=TaskKind.SIS,
        number=1,
        order=[golds[0].pk, golds[2].pk],
        started_at=timezone.now(),
    )
    assert pairs_left() == 3 + 4 - 3
    # Set by hand, the counter alone moves the figure: the leases are not tested again.
    RaterGoldMet.objects.filter(rater=user, dataset_id=split_a.dataset_id, kind=TaskKind.SIS).update(leased_serveable=0)
    assert pairs_left() == 3 + 4 - 1
