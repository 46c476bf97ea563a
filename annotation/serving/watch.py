"""What an operator watches of the queue, read when the metrics endpoint is scraped: pairs
still needing ratings, leases held and leases expired, per dataset and kind. Cheap reads
only: the queue's counters (one row per dataset and kind) and the leased slots through
``slot_lease_expiry_idx`` and the gold leases held (about one per active rater). Open
slots are not counted one by one: that walks the claim index whole (every open slot of
a campaign) at every scrape; pairs open come from ``QueueCounter`` instead."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q
from django.utils import timezone

from annotation.models import GoldLease, GoldLeaseState, QueueCounter, RatingSlot, SlotState


@dataclass(frozen=True)
class QueueWatch:
    """Per (dataset id, kind): pairs still needing ratings, leases held (slots and gold),
    of which expired (abandoned, not yet tidied or claimed again)."""

    pairs_open: dict[tuple[int, str], int]
    leases_held: dict[tuple[int, str], int]
    leases_expired: dict[tuple[int, str], int]


def queue_watch(now=None) -> QueueWatch:
    """Three grouped reads (see the module's docstring for why they stay cheap)."""
    now = now or timezone.now()
    pairs_open = {(row["dataset_id"], row["kind"]): row["pairs_open"] for row in QueueCounter.objects.values()}
    held: dict[tuple[int, str], int] = {}
    expired: dict[tuple[int, str], int] = {}
    for model, leased in ((RatingSlot, SlotState.LEASED), (GoldLease, GoldLeaseState.LEASED)):
        rows = (
            model.objects.filter(state=leased)
            .values("dataset_id", "kind")
            .annotate(held=Count("id"), expired=Count("id", filter=Q(lease_expires_at__lt=now)))
        )
        for row in rows:
            key = (row["dataset_id"], row["kind"])
            held[key] = held.get(key, 0) + row["held"]
            expired[key] = expired.get(key, 0) + row["expired"]
    return QueueWatch(pairs_open=pairs_open, leases_held=held, leases_expired=expired)
