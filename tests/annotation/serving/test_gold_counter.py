"""The serveable gold pairs per dataset and kind (``GoldCounter``), kept by PostgreSQL's
triggers, against a recount of the gold pairs after every kind of write; the migration's
count of the gold pairs stored before it; and the progress statement's "pairs left"
reading the counter instead of counting the pool."""

from __future__ import annotations

from collections import Counter
from importlib import import_module

import pytest
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from annotation.models import GoldCounter, GoldPair, TaskKind
from annotation.quality.quiz import quiz_set
from annotation.rating.progress_sql import progress_row
from tests.factories import CaptionFactory, UserFactory
from tests.support.queue_support import queue_pairs

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

SERVEABLE = Q(active=True, in_quiz=False)


def recount() -> Counter:
    """What the counter should hold: active gold pairs outside the quiz per dataset and kind."""
    return Counter(GoldPair.objects.filter(SERVEABLE).values_list("dataset", "kind"))


def counted() -> Counter:
    rows = GoldCounter.objects.filter(pairs_serveable__gt=0).values_list("dataset", "kind", "pairs_serveable")
    return Counter({(dataset, kind): n for dataset, kind, n in rows})


def row_version(dataset_id: int, kind: str) -> str | None:
    """The counter row's physical version (ctid): any write to the row moves it."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT ctid::text FROM annotation_goldcounter WHERE dataset_id = %s AND kind = %s", [dataset_id, kind]
        )
        row = cursor.fetchone()
    return None if row is None else row[0]


def _delete_raw(gold_id: int) -> None:
    # Raw SQL, as a script or an admin's psql would: the counter follows whatever deletes.
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM annotation_goldpair WHERE id = %s", [gold_id])


def test_the_counter_follows_every_write_of_the_gold_pairs_it_counts(two_splits):
    split_a, split_b = two_splits
    a, b = split_a.dataset_id, split_b.dataset_id
    assert counted() == recount() == Counter({(a, "SIS"): 4, (a, "STS"): 3, (b, "SIS"): 2})
    sis = list(GoldPair.objects.filter(dataset_id=a, kind=TaskKind.SIS).order_by("id"))
    caption = CaptionFactory(image=sis[3].image_a)
    writes = [
        lambda: quiz_set(dataset_id=a, gold_pair_ids=[sis[0].pk, sis[1].pk], in_quiz=True),
        lambda: GoldPair.objects.filter(pk=sis[2].pk).update(active=False),  # the admin's "retire"
        lambda: GoldPair.objects.filter(pk=sis[1].pk).update(active=False),  # retired while in the quiz
        lambda: quiz_set(dataset_id=a, gold_pair_ids=[sis[1].pk], in_quiz=False),  # still retired
        lambda: GoldPair.objects.filter(pk__in=[sis[1].pk, sis[2].pk]).update(active=True),  # served again
        lambda: GoldPair.objects.get(pk=sis[2].pk).save(),  # every column written, none changed
        lambda: GoldPair.objects.filter(pk=sis[3].pk).update(gold_score=1.5, explanation="not counted"),
        lambda: GoldPair.objects.filter(pk=sis[3].pk).update(kind=TaskKind.SITS, caption_a=caption, image_b=None),
        lambda: GoldPair.objects.filter(dataset_id=b).update(dataset_id=a),  # moved to the other dataset
        lambda: GoldPair.objects.filter(pk=sis[2].pk).delete(),
        lambda: _delete_raw(sis[0].pk),  # in the quiz: no count to take
        lambda: _delete_raw(sis[1].pk),
    ]
    for number, write in enumerate(writes):
        write()
        assert counted() == recount(), number
    assert recount() == Counter({(a, "STS"): 3, (a, "SITS"): 1, (a, "SIS"): 2})


def test_a_write_that_changes_no_count_leaves_the_counter_row_alone(two_splits):
    # Not even a write of the same figure: that would take the row's lock until commit.
    split_a, _ = two_splits
    a = split_a.dataset_id
    gold = GoldPair.objects.filter(dataset_id=a, kind=TaskKind.SIS).order_by("id").first()
    before = row_version(a, "SIS")
    GoldPair.objects.get(pk=gold.pk).save()
    GoldPair.objects.filter(pk=gold.pk).update(gold_score=4.5, explanation="edited")
    GoldPair.objects.filter(dataset_id=a).update(explanation="all edited")
    assert row_version(a, "SIS") == before is not None
    GoldPair.objects.filter(pk=gold.pk).update(active=False)
    assert row_version(a, "SIS") != before


def counter_updates() -> int:
    """Rows of the counter updated so far in this transaction."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT n_tup_upd FROM pg_stat_xact_user_tables WHERE relname = 'annotation_goldcounter'")
        return cursor.fetchone()[0]


def test_a_statement_over_several_kinds_writes_each_counter_row_once(two_splits):
    split_a, split_b = two_splits
    before = counter_updates()
    assert GoldPair.objects.filter(dataset_id=split_a.dataset_id).update(active=False) == 7
    assert counted() == recount() == Counter({(split_b.dataset_id, "SIS"): 2})
    assert counter_updates() - before == 2  # one per kind, not one per gold pair (7)


def test_a_count_whose_row_is_gone_is_not_taken_below_zero(two_splits):
    # A dataset's deletion removes its counter rows before its gold pairs: their count is
    # not taken down then (a row of -1 would break the CHECK and the deletion with it).
    split_a, _ = two_splits
    a = split_a.dataset_id
    GoldCounter.objects.filter(dataset_id=a, kind=TaskKind.STS).delete()
    GoldPair.objects.filter(dataset_id=a, kind=TaskKind.STS).delete()
    assert not GoldCounter.objects.filter(dataset_id=a, kind=TaskKind.STS).exists()
    assert counted()[(a, "SIS")] == 4


def test_truncating_the_gold_pairs_empties_the_counter(two_splits):
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the uploads' deferred checks, before TRUNCATE
        cursor.execute("TRUNCATE annotation_goldpair CASCADE")
    assert not GoldCounter.objects.exists()


def test_the_migration_counts_the_gold_pairs_stored_before_it(two_splits):
    split_a, _ = two_splits
    first_sts = GoldPair.objects.filter(dataset_id=split_a.dataset_id, kind=TaskKind.STS).order_by("id").first()
    quiz_set(dataset_id=split_a.dataset_id, gold_pair_ids=[first_sts.pk], in_quiz=True)
    GoldPair.objects.filter(dataset_id=split_a.dataset_id, kind=TaskKind.SIS).update(active=False)
    GoldCounter.objects.all().delete()
    with connection.cursor() as cursor:
        cursor.execute(import_module("annotation.migrations.0033_gold_counter").BACKFILL)
    assert counted() == recount() and sum(recount().values()) == 4


def test_the_progress_reads_the_serveable_gold_pairs_from_the_counter(two_splits):
    split_a, _ = two_splits
    queue_pairs(split=split_a, kind=TaskKind.SIS, n_pairs=3, ratings_per_pair=3)
    rater = UserFactory(roles=["rater"], qualified_for=["SIS"])
    day = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)

    def pairs_left() -> int:
        row = progress_row(rater_id=rater.pk, dataset=split_a.dataset.name, day_start=day)
        return dict(zip(row[2], row[3], strict=True))["SIS"]

    assert pairs_left() == 3 + 4  # three open pairs and four gold pairs
    # Set by hand, the counter alone moves the figure: the pool is not counted again.
    GoldCounter.objects.filter(dataset_id=split_a.dataset_id, kind=TaskKind.SIS).update(pairs_serveable=10)
    assert pairs_left() == 3 + 10
