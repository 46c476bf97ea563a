"""Ratings faster than the kind's speed floor are stored and marked at submit time (every
submit path), and marked anew when an admin changes the floor."""

import pytest

from annotation.models import Rating, SpeedFloor, TaskKind
from annotation.rating.queue import rating_submit
from tests.annotation import queue_support
from tests.annotation.queue_support import claim, queue_pairs, rater

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


def test_changing_the_floor_in_the_admin_marks_the_ratings_anew(admin_client, clock):
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
    answer = admin_client.post(f"/admin/annotation/dataset/{dataset.pk}/change/", form)
    assert answer.status_code == 302
    marks = list(Rating.objects.order_by("time_on_item_ms").values_list("time_on_item_ms", "below_speed_floor"))
    assert marks == [(1000, True), (4000, True), (9000, False)]
