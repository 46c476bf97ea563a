"""The rater's quarter-hour tally (``RaterTally``), kept by PostgreSQL's triggers, against
a recount of the ratings it tallies after every kind of write; and the progress
statement's "rated today" from it, exact from a day start on a quarter hour or between
two."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from importlib import import_module
from zoneinfo import ZoneInfo

import pytest
from django.db import connection
from django.utils import timezone

from annotation.models import GoldPair, GoldPurpose, GoldRating, RaterTally, Rating, TaskKind
from annotation.rating.progress_sql import QUARTER, QUARTER_ORIGIN, first_quarter, progress_row
from tests.factories import SplitFactory, UserFactory
from tests.support.crowd_support import gold_upload
from tests.support.queue_support import queue_pairs
from tests.support.rating_support import rate_pair

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def quarter_of(moment: datetime) -> datetime:
    return QUARTER_ORIGIN + (moment - QUARTER_ORIGIN) // QUARTER * QUARTER


def recount() -> Counter:
    """What the tally should hold: ratings and the queue's gold ratings per rater, dataset
    and quarter hour, counted from the rows themselves."""
    stored = Counter()
    for rater, dataset, created in Rating.objects.values_list("rater", "pair__dataset", "created_at"):
        stored[(rater, dataset, quarter_of(created))] += 1
    queue = GoldRating.objects.filter(purpose=GoldPurpose.QUEUE)
    for rater, dataset, created in queue.values_list("rater", "dataset", "created_at"):
        stored[(rater, dataset, quarter_of(created))] += 1
    return stored


def tally() -> Counter:
    rows = RaterTally.objects.filter(ratings__gt=0).values_list("rater", "dataset", "quarter", "ratings")
    return Counter({(rater, dataset, quarter): n for rater, dataset, quarter, n in rows})


def gold_rating(gold: GoldPair, rater, purpose: str, created_at: datetime) -> GoldRating:
    return GoldRating.objects.create(
        gold_pair=gold,
        rater=rater,
        dataset=gold.dataset,
        purpose=purpose,
        score=2.0,
        gold_score=gold.gold_score,
        time_on_item_ms=5000,
        idempotency_key=f"{purpose}-{created_at.isoformat()}",
        created_at=created_at,
    )


@pytest.fixture
def two_datasets(tmp_path):
    splits = [SplitFactory(), SplitFactory()]
    pairs = [queue_pairs(split=split, n_pairs=3)[1] for split in splits]
    gold_upload(splits[0], TaskKind.SIS, 3, tmp_path)
    return splits, pairs


def test_the_tally_follows_every_write_of_the_ratings_it_counts(two_datasets):
    (_, _), (pairs_a, pairs_b) = two_datasets
    raters = [UserFactory(roles=["rater"], qualified_for=["SIS"]) for _ in range(3)]
    rate_pair(pairs_a[0], [1.0, 2.0], raters=raters[:2])
    rate_pair(pairs_a[1], [3.0], raters=raters[:1])
    rate_pair(pairs_b[0], [4.0, 4.5], raters=raters[1:])
    golds = list(GoldPair.objects.order_by("id"))
    queue_gold = gold_rating(golds[0], raters[0], GoldPurpose.QUEUE, NOON + timedelta(minutes=14, seconds=59))
    quiz_gold = gold_rating(golds[1], raters[0], GoldPurpose.QUIZ, NOON)
    gold_rating(golds[2], raters[2], GoldPurpose.QUEUE, NOON + timedelta(minutes=15))
    assert tally() == recount() and sum(recount().values()) == 7

    first, second, *_ = Rating.objects.order_by("id")
    writes = [
        lambda: Rating.objects.filter(pk=first.pk).update(created_at=NOON - timedelta(days=1, minutes=7)),
        lambda: Rating.objects.filter(pk=first.pk).update(rater=raters[2]),
        lambda: Rating.objects.filter(pk=second.pk).update(pair=pairs_b[1]),  # into the other dataset
        lambda: Rating.objects.filter(pk=second.pk).update(score=0.5, below_speed_floor=True),  # not tallied
        lambda: GoldRating.objects.filter(pk=queue_gold.pk).update(created_at=NOON + timedelta(minutes=15)),
        lambda: GoldRating.objects.filter(pk=queue_gold.pk).update(purpose=GoldPurpose.QUIZ),
        lambda: GoldRating.objects.filter(pk=quiz_gold.pk).update(purpose=GoldPurpose.QUEUE),
        lambda: GoldRating.objects.filter(pk=quiz_gold.pk).update(rater=raters[1]),
        lambda: GoldRating.objects.filter(pk=quiz_gold.pk).delete(),
        lambda: _delete_rating(second.pk),
    ]
    for number, write in enumerate(writes):
        write()
        assert tally() == recount(), number
    assert sum(recount().values()) == 5


def _delete_rating(rating_id: int) -> None:
    # Raw SQL, as a script or an admin's psql would: the tally follows whatever deletes.
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM annotation_rating WHERE id = %s", [rating_id])


def test_the_migration_tallies_the_ratings_stored_before_it(two_datasets):
    (_, _), (pairs_a, pairs_b) = two_datasets
    rate_pair(pairs_a[0], [1.0, 2.0, 3.0])
    rate_pair(pairs_b[0], [4.0])
    gold = GoldPair.objects.order_by("id").first()
    gold_rating(gold, UserFactory(), GoldPurpose.QUEUE, timezone.now())
    gold_rating(gold, UserFactory(), GoldPurpose.QUIZ, timezone.now())
    # Older than the two days kept: not tallied again.
    stale = gold_rating(gold, UserFactory(), GoldPurpose.QUEUE, timezone.now() - timedelta(days=2, minutes=1))
    RaterTally.objects.all().delete()
    with connection.cursor() as cursor:
        cursor.execute(import_module("annotation.migrations.0027_rater_tally").BACKFILL)
    expected = recount()
    del expected[(stale.rater_id, stale.dataset_id, quarter_of(stale.created_at))]
    assert tally() == expected and sum(tally().values()) == 5


@pytest.mark.parametrize(
    "day_start",
    [
        NOON,  # on a quarter hour, as every zone's midnight today
        NOON + timedelta(minutes=7, seconds=30),
        NOON + QUARTER - timedelta(microseconds=1),
        NOON + timedelta(microseconds=1),
        datetime(2026, 3, 2, 17, 52, 30, tzinfo=ZoneInfo("Asia/Kathmandu")),  # 12:07:30 UTC, +05:45
    ],
)
def test_rated_today_is_exact_from_any_start_of_the_day(two_datasets, day_start):
    splits, (pairs_a, pairs_b) = two_datasets
    rater = UserFactory(roles=["rater"], qualified_for=["SIS"])
    other = UserFactory(roles=["rater"], qualified_for=["SIS"])
    golds = list(GoldPair.objects.order_by("id"))
    # Ratings every 5 minutes from the quarter before the start's to the one after it, in
    # both datasets and by another rater too; the queue's gold ratings at three of them.
    times = [quarter_of(day_start) - QUARTER + timedelta(minutes=5 * i) for i in range(9)]
    for pair_a, pair_b in zip(pairs_a, pairs_b, strict=True):
        rate_pair(pair_a, [1.0, 2.0], raters=[rater, other])
        rate_pair(pair_b, [3.0], raters=[rater])
    ratings = list(Rating.objects.order_by("id"))
    for rating, created in zip(ratings, times, strict=True):
        Rating.objects.filter(pk=rating.pk).update(created_at=created)
    for gold, created in zip(golds, [times[2], times[5], times[7]], strict=True):
        gold_rating(gold, rater, GoldPurpose.QUEUE, created)
    gold_rating(golds[0], other, GoldPurpose.QUIZ, times[-1])
    gold_rating(golds[1], rater, GoldPurpose.QUIZ, times[5])  # a quiz answer is no rating of the day
    assert first_quarter(day_start) == (
        day_start if day_start == quarter_of(day_start) else quarter_of(day_start) + QUARTER
    )

    for user in (rater, other):
        for split in splits:
            expected = (
                Rating.objects.filter(rater=user, pair__dataset=split.dataset, created_at__gte=day_start).count()
                + GoldRating.objects.filter(
                    rater=user, dataset=split.dataset, purpose=GoldPurpose.QUEUE, created_at__gte=day_start
                ).count()
            )
            row = progress_row(rater_id=user.pk, dataset=split.dataset.name, day_start=day_start)
            assert row[1] == expected, (user.username, split.dataset.name)
    # The times straddle the start: ratings before it, in its quarter, and after.
    assert any(t < day_start for t in times) and any(t >= first_quarter(day_start) for t in times)


def test_the_beat_prunes_tallies_no_day_reads_and_keeps_the_rest(two_datasets, settings):
    from annotation.serving.tasks import prune_rater_tallies

    (_, _), (pairs_a, _) = two_datasets
    rate_pair(pairs_a[0], [1.0, 2.0, 3.0])
    now = timezone.now()
    old, kept, _ = Rating.objects.order_by("id")
    Rating.objects.filter(pk=old.pk).update(created_at=now - timedelta(days=2, minutes=20))
    Rating.objects.filter(pk=kept.pk).update(created_at=now - timedelta(days=1, hours=23))
    assert settings.CELERY_BEAT_SCHEDULE["queue-prune-rater-tallies"]["task"] == prune_rater_tallies.name
    assert prune_rater_tallies.delay().get() == 1
    left = recount()
    del left[(old.rater_id, pairs_a[0].dataset_id, quarter_of(now - timedelta(days=2, minutes=20)))]
    assert tally() == left and sum(left.values()) == 2
