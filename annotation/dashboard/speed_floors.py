"""Marks of the speed floor on stored ratings: after an admin changes a kind's floor, every
rating and queue gold rating of that kind in the dataset is marked anew, in the background and in
short batches, so no admin request waits for it and no transaction holds the rows long."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import transaction
from django.db.models import QuerySet

from annotation.core.task_queue import task_queue_on_commit
from annotation.models import GoldPurpose, GoldRating, Rating
from annotation.serving.submit import speed_floor_seconds  # the submissions' own rule

logger = logging.getLogger(__name__)

# Ratings re-marked per transaction: a few milliseconds of row locks each.
REMARK_BATCH = 5_000


def speed_floor_marks_request(*, dataset_id: int, kind: str) -> None:
    """Queue the re-marking of the dataset's ratings of ``kind`` once the current
    transaction (the one that changed the floor) commits."""
    task_queue_on_commit("annotation.tasks.remark_speed_floor", dataset_id, kind)


def speed_floor_marks_refresh(*, dataset_id: int, kind: str, batch: int = REMARK_BATCH) -> int:
    """Mark anew which of a dataset's ratings and gold ratings of ``kind`` were faster than
    its speed floor, ``batch`` of them (by id) per transaction; the floor is read again for
    every batch, so a floor changed meanwhile wins (its own re-marking follows). Returns how
    many ratings (gold included) are marked now."""

    def floor_ms() -> float:
        return 1000 * speed_floor_seconds(dataset_id, kind)

    ratings = Rating.objects.filter(pair__dataset_id=dataset_id, pair__kind=kind)
    # Queue gold ratings only: a quiz answer is never marked when given.
    gold = GoldRating.objects.filter(dataset_id=dataset_id, gold_pair__kind=kind, purpose=GoldPurpose.QUEUE)
    changed = _remark(ratings, floor_ms, batch) + _remark(gold, floor_ms, batch)
    logger.info("speed floor of %s in dataset #%s: %d mark(s) changed", kind, dataset_id, changed)
    return ratings.filter(below_speed_floor=True).count() + gold.filter(below_speed_floor=True).count()


def _remark(ratings: QuerySet, floor_ms: Callable[[], float], batch: int) -> int:
    """Walk ``ratings`` by id, ``batch`` at a time, and flip the marks that disagree with
    the floor, each batch in a transaction of its own. Returns the marks changed."""
    changed = 0
    last = 0
    while True:
        ids = list(ratings.filter(pk__gt=last).order_by("pk").values_list("pk", flat=True)[:batch])
        if not ids:
            return changed
        floor = floor_ms()
        window = ratings.model.objects.filter(pk__in=ids)
        with transaction.atomic():
            changed += window.filter(time_on_item_ms__lt=floor, below_speed_floor=False).update(below_speed_floor=True)
            changed += window.filter(time_on_item_ms__gte=floor, below_speed_floor=True).update(below_speed_floor=False)
        last = ids[-1]
