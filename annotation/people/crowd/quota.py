"""A crowd participant's quota: the items they did and hold in their link's dataset and
kinds since joining. Ordinary ratings, queue gold ratings and leases held now (ordinary
and gold) all count: to the participant every item is one item, and an item held counts
so that claiming several kinds at once gets no more than the quota."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, IntegerField, Subquery
from django.db.models.functions import Coalesce

from annotation.core.errors import Forbidden
from annotation.models import (
    GoldLease,
    GoldLeaseState,
    GoldPurpose,
    GoldRating,
    Participant,
    Rating,
    RatingSlot,
    SlotState,
)


class QuotaReached(Forbidden):
    """The participant rated (or holds) their quota of items: the completion code is theirs."""

    code = "quota_reached"


@dataclass(frozen=True)
class QuotaUse:
    """``done``: items rated since joining; ``held``: (lease id, kind) of the leases held
    now, oldest first."""

    quota: int
    done: int
    held: tuple[tuple[int, str], ...]

    def held_other_than(self, lease_id: int | None) -> int:
        return sum(1 for held_id, _ in self.held if held_id != lease_id)

    def after_rating(self, lease_id: int) -> QuotaUse:
        """The use once the held item ``lease_id`` is rated: one more done, one less held."""
        held = tuple((held_id, kind) for held_id, kind in self.held if held_id != lease_id)
        return QuotaUse(quota=self.quota, done=self.done + 1, held=held)


def quota_reached_error(participant: Participant) -> QuotaReached:
    return QuotaReached(f"you rated the {participant.link.quota} items of this study; your completion code is ready")


def participant_items_done(participant: Participant) -> int:
    """Items the participant rated in the link's dataset and kinds since joining
    (ordinary and queue gold ratings alike), in one query."""
    link = participant.link
    ratings = Rating.objects.filter(
        rater_id=participant.user_id,
        pair__dataset_id=link.dataset_id,
        pair__kind__in=link.kinds,
        created_at__gte=participant.started_at,
    )
    gold = GoldRating.objects.filter(
        rater_id=participant.user_id,
        dataset_id=link.dataset_id,
        purpose=GoldPurpose.QUEUE,
        gold_pair__kind__in=link.kinds,
        created_at__gte=participant.started_at,
    )
    ordinary, queue_gold = (
        Participant.objects.filter(pk=participant.pk).values_list(_count_of(ratings), _count_of(gold)).get()
    )
    return ordinary + queue_gold


def study_progress(participant: Participant) -> dict:
    """The participant's items rated of their quota, as the page shows it ("2 of 4"):
    counted as the quota counts (ordinary and queue gold ratings alike)."""
    return {"items_done": participant_items_done(participant), "quota": participant.link.quota}


def _count_of(rows) -> Coalesce:
    """``rows``' count as a scalar subquery (grouped by rater: one group at most)."""
    counted = rows.order_by().values("rater_id").annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)


def quota_use(participant: Participant) -> QuotaUse:
    """What counts against the participant's quota now (two queries)."""
    link = participant.link
    slots = RatingSlot.objects.filter(
        rater_id=participant.user_id, dataset_id=link.dataset_id, kind__in=link.kinds, state=SlotState.LEASED
    ).values_list("id", "kind", "leased_at")
    gold = GoldLease.objects.filter(
        rater_id=participant.user_id, dataset_id=link.dataset_id, kind__in=link.kinds, state=GoldLeaseState.LEASED
    ).values_list("id", "kind", "leased_at")
    held = sorted(slots.order_by().union(gold.order_by(), all=True), key=lambda row: (row[2], row[0]))
    return QuotaUse(
        quota=link.quota,
        done=participant_items_done(participant),
        held=tuple((lease_id, kind) for lease_id, kind, _ in held),
    )
