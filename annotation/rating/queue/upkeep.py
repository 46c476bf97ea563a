"""Upkeep of the queue: expired leases back to the open queue, and the open-pairs
counters (added to as pairs are queued, rebuilt when they drift)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from django.db import transaction
from django.db.models import Count, F

from annotation.models import Pair, QueueCounter, RatingSlot, SlotState
from annotation.rating.queue.shapes import service_now


def leases_release_expired(*, now: datetime | None = None, batch_size: int = 1000) -> int:
    """Return expired leases to the open queue; returns how many. Not needed for
    correctness (the claim takes expired leases itself); it keeps the claim's look at
    expired leases short and the ``leased`` state honest for monitoring. The former
    holder is kept in ``previous_rater`` so their late submission is still accepted
    while nobody else takes the slot."""
    now = service_now(now)
    released = 0
    while True:
        with transaction.atomic():
            ids = list(
                RatingSlot.objects.select_for_update(skip_locked=True)
                .filter(state=SlotState.LEASED, lease_expires_at__lt=now)
                .order_by("lease_expires_at")
                .values_list("id", flat=True)[:batch_size]
            )
            if ids:
                RatingSlot.objects.filter(pk__in=ids, state=SlotState.LEASED).update(
                    state=SlotState.OPEN,
                    previous_rater=F("rater"),
                    rater=None,
                    leased_at=None,
                    lease_expires_at=None,
                )
        released += len(ids)
        if len(ids) < batch_size:
            return released


def queue_counters_add(*, dataset_id: int, pairs_per_kind: Mapping[str, int]) -> None:
    """Count newly queued pairs (called by the service that creates pairs, in its
    transaction)."""
    for kind, count in pairs_per_kind.items():
        if count <= 0:
            continue
        counter, _ = QueueCounter.objects.get_or_create(dataset_id=dataset_id, kind=kind)
        QueueCounter.objects.filter(pk=counter.pk).update(pairs_open=F("pairs_open") + count)


def queue_counters_rebuild() -> int:
    """Recount open pairs per dataset and kind from the pairs (repairs drift after pairs
    were deleted by hand). Each counter row is locked before its count is read, so a
    submission completing a pair meanwhile is counted exactly once. Returns the number
    of counters written."""
    written = 0
    keys = set(Pair.objects.values_list("dataset_id", "kind").distinct())
    keys |= set(QueueCounter.objects.values_list("dataset_id", "kind"))
    for dataset_id, kind in sorted(keys):
        with transaction.atomic():
            counter, _ = QueueCounter.objects.get_or_create(dataset_id=dataset_id, kind=kind)
            list(QueueCounter.objects.select_for_update().filter(pk=counter.pk).values_list("id"))
            open_pairs = (
                Pair.objects.filter(
                    dataset_id=dataset_id, kind=kind, ratings_done__lt=F("ratings_required"), retired_at__isnull=True
                )
                .aggregate(n=Count("id"))
                .get("n")
            )
            QueueCounter.objects.filter(pk=counter.pk).update(pairs_open=open_pairs or 0)
            written += 1
    return written
