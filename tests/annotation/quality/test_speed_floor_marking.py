"""Ratings faster than the kind's speed floor are stored and marked at submit time (every
submit path), and marked anew in the background, in batches, when an admin changes the
floor."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.dashboard.speed_floors import speed_floor_marks_refresh
from annotation.models import GoldPair, GoldPurpose, GoldRating, QualitySettings, Rating, SpeedFloor, TaskKind
from annotation.rating.policy import rating_submit as policy_submit
from annotation.rating.policy import slot_claim
from annotation.serving import rating_submit
from annotation.serving.gold_ids import ids_reserve
from tests.factories import SplitFactory, UserFactory
from tests.support import queue_support
from tests.support.crowd_support import gold_upload
from tests.support.queue_support import claim, queue_pairs, rater

pytestmark = pytest.mark.django_db
engine = queue_support.engine


def rate_in(dataset, times_ms: list[int]) -> list[Rating]:
    stored = []
    for number, time_ms in enumerate(times_ms):
        user = rater()
        assignment = claim(user, dataset)
        result = rating_submit(
            rater=user,
            dataset=dataset.name,
            slot_id=assignment.slot_id,
            score=2.0,
            time_on_item_ms=time_ms,
            time_to_first_move_ms=None,
            adjustments=0,
            idempotency_key=f"k{number}",
        )
        stored.append(Rating.objects.get(pk=result.rating_id))
    return stored


def test_the_default_floor_marks_fast_ratings(engine, clock):
    _, pairs = queue_pairs(kind=TaskKind.SIS, n_pairs=1, ratings_per_pair=3)
    ratings = rate_in(pairs[0].dataset, [1499, 1500, 20_000])  # SIS default: 1.5 s
    assert [r.below_speed_floor for r in ratings] == [True, False, False]


def test_the_datasets_own_floor_marks_fast_ratings(engine, clock):
    _, pairs = queue_pairs(kind=TaskKind.STS, n_pairs=1, ratings_per_pair=3)
    SpeedFloor.objects.create(dataset=pairs[0].dataset, kind=TaskKind.STS, seconds=10)
    ratings = rate_in(pairs[0].dataset, [2000, 9999, 10_000])
    assert [r.below_speed_floor for r in ratings] == [True, True, False]


def test_changing_the_floor_in_the_admin_marks_the_ratings_anew_in_the_background(
    admin_client, clock, django_capture_on_commit_callbacks
):
    _, pairs = queue_pairs(kind=TaskKind.SIS, n_pairs=1, ratings_per_pair=3)
    dataset = pairs[0].dataset
    rate_in(dataset, [1000, 4000, 9000])
    form = {
        "name": dataset.name,
        "images_root": dataset.images_root,
        "image_url_prefix": dataset.image_url_prefix,
        "speed_floors-TOTAL_FORMS": "1",
        "quality_settings-TOTAL_FORMS": "0",
        "quality_settings-INITIAL_FORMS": "0",
        "speed_floors-INITIAL_FORMS": "0",
        "speed_floors-MIN_NUM_FORMS": "0",
        "speed_floors-MAX_NUM_FORMS": "3",
        "speed_floors-0-kind": "SIS",
        "speed_floors-0-seconds": "5",
    }
    with (
        django_capture_on_commit_callbacks(execute=False) as queued,
        CaptureQueriesContext(connection) as request_queries,
    ):
        answer = admin_client.post(f"/admin/annotation/dataset/{dataset.pk}/change/", form)
    assert answer.status_code == 302
    # The request itself re-marks nothing: a CxC-sized kind would hold it (and the rows) long.
    rating_table = Rating._meta.db_table
    assert not [q for q in request_queries.captured_queries if q["sql"].startswith(f'UPDATE "{rating_table}"')]
    assert marks_of(Rating) == [(1000, True), (4000, False), (9000, False)]
    assert len(queued) == 1
    queued[0]()  # the task, queued on commit, runs
    assert marks_of(Rating) == [(1000, True), (4000, True), (9000, False)]


def marks_of(rows) -> list[tuple[int, bool]]:
    """(time on item, mark) of a model's rows or of a queryset's, by time."""
    rows = rows.objects.all() if isinstance(rows, type) else rows
    return list(rows.order_by("time_on_item_ms").values_list("time_on_item_ms", "below_speed_floor"))


def test_re_marking_walks_ratings_and_gold_ratings_in_batches_and_flips_both_ways(clock, tmp_path):
    split = SplitFactory()
    queue_pairs(split=split, kind=TaskKind.SIS, n_pairs=3, ratings_per_pair=3)
    gold_upload(split, TaskKind.SIS, 3, tmp_path)
    dataset = split.dataset
    gold_rate = QualitySettings.objects.create(dataset=dataset, gold_one_in=0)
    served = {"ordinary": 0, "gold": 0}
    for number, time_ms in enumerate([1000, 3000, 6000, 1200, 2500, 9000, 4000, 1100, 7000]):
        gold_rate.gold_one_in = 1 if number % 3 == 0 else 0  # items 0, 3 and 6 gold
        gold_rate.save()
        user = UserFactory(roles=["rater"], qualified_for=["SIS"])
        held = slot_claim(rater=user, dataset=dataset.name)
        result = policy_submit(
            rater=user,
            dataset=dataset.name,
            slot_id=held.slot_id,
            score=2.0,
            time_on_item_ms=time_ms,
            time_to_first_move_ms=None,
            adjustments=0,
            idempotency_key=f"k{number}",
        )
        served["gold" if GoldRating.objects.filter(pk=result.rating_id).exists() else "ordinary"] += 1
    assert served == {"ordinary": 6, "gold": 3}
    # A quiz answer is never marked when given (the quiz is no rating of the queue): re-marking
    # leaves it alone too.
    quiz_answer = GoldRating.objects.create(
        id=ids_reserve(Rating, 1)[0],
        gold_pair=GoldPair.objects.filter(dataset=dataset).first(),
        rater=UserFactory(roles=["rater"]),
        dataset=dataset,
        purpose=GoldPurpose.QUIZ,
        score=1.0,
        gold_score=1.0,
        time_on_item_ms=100,
        idempotency_key="quiz-1",
        created_at=clock(),
    )
    every = sorted(marks_of(Rating) + marks_of(GoldRating.objects.exclude(pk=quiz_answer.pk)))
    assert every == [(t, t < 1500) for t in (1000, 1100, 1200, 2500, 3000, 4000, 6000, 7000, 9000)]  # SIS: 1.5 s

    SpeedFloor.objects.create(dataset=dataset, kind=TaskKind.SIS, seconds=5)
    with CaptureQueriesContext(connection) as remarking:
        marked = speed_floor_marks_refresh(dataset_id=dataset.pk, kind=TaskKind.SIS, batch=2)
    every = sorted(marks_of(Rating) + marks_of(GoldRating.objects.exclude(pk=quiz_answer.pk)))
    assert every == [(t, t < 5000) for t in (1000, 1100, 1200, 2500, 3000, 4000, 6000, 7000, 9000)]
    assert marked == 6
    assert GoldRating.objects.get(pk=quiz_answer.pk).below_speed_floor is False
    batches = [q for q in remarking.captured_queries if q["sql"].startswith("SAVEPOINT")]
    assert len(batches) == (served["ordinary"] + 1) // 2 + (served["gold"] + 1) // 2

    SpeedFloor.objects.filter(dataset=dataset).update(seconds=2)  # down again: marks come off
    assert speed_floor_marks_refresh(dataset_id=dataset.pk, kind=TaskKind.SIS, batch=2) == 3
    assert sorted(marks_of(Rating) + marks_of(GoldRating.objects.exclude(pk=quiz_answer.pk)))[3] == (2500, False)
