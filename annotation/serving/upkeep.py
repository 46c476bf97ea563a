"""Upkeep of the queue: expired leases back to the open queue, the open-pairs counters
(added to as pairs are queued, rebuilt when they drift), and the raters' tallies of
ratings per quarter hour (old ones pruned)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Count, F, OuterRef, Subquery
from django.db.models.functions import Coalesce

from annotation.models import Pair, QueueCounter, RaterTally, RatingSlot, SlotState
from annotation.serving.shapes import service_now


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
                    # Open again, so the claim orders it: the pair's count now (a leased
                    # slot's copy is not kept; RatingSlot.pair_done). Read without the
                    # pair's lock, which a submission takes before its slot's (this
                    # holds the slots): ratings committed meanwhile leave the copy
                    # behind until the pair's next rating, a place in the order, never
                    # a wrong count of ratings.
                    pair_done=Subquery(Pair.objects.filter(pk=OuterRef("pair_id")).values("ratings_done")[:1]),
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
    were deleted by hand) without a lock that a submission waits on. Every change of the
    open pairs moves its counter in the same transaction, so the drift is the difference
    between the count and the counter read in one statement (one snapshot); the counter
    is then moved by that difference, keeping what was committed meanwhile. Returns the
    number of counters recounted."""
    keys = set(Pair.objects.values_list("dataset_id", "kind").distinct())
    keys |= set(QueueCounter.objects.values_list("dataset_id", "kind"))
    for dataset_id, kind in sorted(keys):
        counter, _ = QueueCounter.objects.get_or_create(dataset_id=dataset_id, kind=kind)
        counted, seen = _counter_reading(counter.pk)
        if counted != seen:
            QueueCounter.objects.filter(pk=counter.pk).update(pairs_open=F("pairs_open") + (counted - seen))
    return len(keys)


def _counter_reading(counter_id: int) -> tuple[int, int]:
    """(open pairs counted, the counter's value) of one counter, in one statement."""
    open_pairs = (
        Pair.objects.filter(
            dataset_id=OuterRef("dataset_id"),
            kind=OuterRef("kind"),
            ratings_done__lt=F("ratings_required"),
            retired_at__isnull=True,
        )
        .order_by()
        .values("dataset_id")
        .annotate(n=Count("id"))
        .values("n")
    )
    return (
        QueueCounter.objects.filter(pk=counter_id)
        .annotate(counted=Coalesce(Subquery(open_pairs), 0))
        .values_list("counted", "pairs_open")
        .get()
    )


# "Today" started at most 25 hours ago in every time zone (a day with a DST fall-back);
# a tally older than this is never read.
TALLY_KEEP = timedelta(days=2)


def rater_tallies_prune(*, now: datetime | None = None) -> int:
    """Delete the rater tallies of quarters no day's progress reads any more; returns how
    many rows. The triggers keep adding a row per rater and active quarter hour."""
    deleted, _ = RaterTally.objects.filter(quarter__lt=service_now(now) - TALLY_KEEP).delete()
    return deleted
