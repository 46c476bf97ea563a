"""The slot a request names: reading and locking it, who may write on it, and the slot
actions of a rater who holds it (heartbeat, skip, flag). Submissions lock the same way.
An id that is no slot of the dataset raises NotFound; ``annotation.rating.policy`` then
tries it as a gold lease."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, connection, transaction
from django.db.models import Case, F, Value, When

from annotation.core.errors import Conflict, DomainError, Forbidden, NotFound
from annotation.core.sql import execute, use_postgres_sql
from annotation.models import Flag, FlagReason, Pair, PairSkip, RatingSlot, SlotState
from annotation.serving import submit_statements
from annotation.serving.shapes import MAX_FLAG_NOTE, QueueInputError, lease_ttl, service_now


@dataclass(frozen=True)
class SlotView:
    """A slot and its pair as read (and locked) at the start of a write."""

    slot_id: int
    state: str
    rater_id: int | None
    previous_rater_id: int | None
    pair_id: int
    dataset_id: int
    dataset: str
    kind: str
    ratings_done: int
    ratings_required: int


# The columns of ``submit_statements.lock_pair_and_slot``'s row, as ORM lookups on a slot.
SLOT_VIEW_FIELDS = (
    "state",
    "rater_id",
    "previous_rater_id",
    "pair_id",
    "dataset_id",
    "dataset__name",
    "kind",
    "pair__ratings_done",
    "pair__ratings_required",
)


def lock_slot(*, slot_id: int, dataset: str, lock_pair: bool) -> SlotView:
    """Read a slot of ``dataset`` with its pair, locking the slot row (and first the pair
    row when ``lock_pair``: submissions take pair then slot, the one lock order)."""
    if lock_pair and use_postgres_sql():
        with connection.cursor() as cursor:
            execute(cursor, submit_statements.lock_pair_and_slot(), {"slot": slot_id})
            values = cursor.fetchone()
        row = dict(zip(SLOT_VIEW_FIELDS, values, strict=True)) if values is not None else None
    else:
        if lock_pair:
            pair_id = RatingSlot.objects.filter(pk=slot_id).values_list("pair_id", flat=True).first()
            if pair_id is not None:
                list(Pair.objects.select_for_update(no_key=True).filter(pk=pair_id).values_list("id"))
        row = RatingSlot.objects.select_for_update(of=("self",)).filter(pk=slot_id).values(*SLOT_VIEW_FIELDS).first()
    return _slot_view(slot_id=slot_id, dataset=dataset, row=row)


def _slot_view(*, slot_id: int, dataset: str, row: dict | None) -> SlotView:
    if row is None:
        raise NotFound("no such rating slot")
    if row["dataset__name"] != dataset:
        raise NotFound(f"this rating slot is not in dataset {dataset!r}")
    return SlotView(
        slot_id=slot_id,
        state=row["state"],
        rater_id=row["rater_id"],
        previous_rater_id=row["previous_rater_id"],
        pair_id=row["pair_id"],
        dataset_id=row["dataset_id"],
        dataset=row["dataset__name"],
        kind=row["kind"],
        ratings_done=row["pair__ratings_done"],
        ratings_required=row["pair__ratings_required"],
    )


def holds(view: SlotView, rater_id: int) -> bool:
    """The rater may write on this slot: they hold its lease (expired or not), or their
    lease expired and the slot went back to the queue without anyone taking it since."""
    if view.state == SlotState.LEASED:
        return view.rater_id == rater_id
    return view.state == SlotState.OPEN and view.previous_rater_id == rater_id


def not_held_error(view: SlotView, rater_id: int) -> DomainError:
    """The error for a write on a slot the rater does not hold, naming why. Error texts
    name no slot id: the rater knows which slot they sent, by its opaque id, and a
    database id would tell which slots are gold (annotation.core.opaque_ids)."""
    slot = "this rating slot"
    if view.state == SlotState.DONE and view.rater_id == rater_id:
        return Conflict(f"{slot} is already rated by you")
    if view.previous_rater_id == rater_id:
        taken = "rated by" if view.state == SlotState.DONE else "claimed by"
        return Conflict(f"your lease on {slot} expired and it was {taken} another rater; claim the next pair")
    if view.state == SlotState.OPEN:
        return Forbidden(f"you do not hold {slot}; claim a pair first")
    return Forbidden(f"you do not hold {slot}: it belongs to another rater")


# --- heartbeat -------------------------------------------------------------------------


def slot_heartbeat(*, rater, dataset: str, slot_id: int, now: datetime | None = None) -> datetime:
    """Extend the rater's lease on a slot to now + TTL and return the new expiry.

    A lease that expired is renewed while the slot is still the rater's or still free;
    raises Conflict once another rater has taken it, Forbidden for a slot never held.
    """
    now = service_now(now)
    expires = now + lease_ttl()
    try:
        with transaction.atomic():
            view = lock_slot(slot_id=slot_id, dataset=dataset, lock_pair=False)
            if not holds(view, rater.pk):
                raise not_held_error(view, rater.pk)
            RatingSlot.objects.filter(pk=slot_id).update(
                state=SlotState.LEASED,
                rater=rater,
                lease_expires_at=expires,
                leased_at=Case(When(state=SlotState.OPEN, then=Value(now)), default=F("leased_at")),
            )
    except IntegrityError:
        raise Conflict(
            f"your lease on this rating slot expired and you have since claimed another {view.kind} slot "
            "(of this pair, or of this dataset); finish that one"
        ) from None
    return expires


# --- skip and flag ---------------------------------------------------------------------


def lock_pairs_of(slot_ids: list[int]) -> None:
    """Lock the pairs of these slots in id order, ahead of several skips in one
    transaction (each skip locks its slot's pair, then the slot): exclusion and retirement
    lock several pairs in id order, so the two never wait on each other in a cycle. Ids
    that are no slot (gold leases) are passed over."""
    pairs = RatingSlot.objects.filter(pk__in=slot_ids).values("pair_id")
    list(Pair.objects.select_for_update(no_key=True).filter(pk__in=pairs).order_by("pk").values_list("pk"))


def _release_and_skip(*, view: SlotView, rater, now: datetime) -> None:
    """Give the slot back to the queue and never serve its pair to this rater again.
    ``view`` was read with its pair locked: the count it carries back is the pair's."""
    if view.state == SlotState.LEASED:
        RatingSlot.objects.filter(pk=view.slot_id).update(
            state=SlotState.OPEN, rater=None, leased_at=None, lease_expires_at=None, pair_done=view.ratings_done
        )
    PairSkip.objects.bulk_create([PairSkip(pair_id=view.pair_id, rater=rater, created_at=now)], ignore_conflicts=True)


def slot_skip(*, rater, dataset: str, slot_id: int, now: datetime | None = None) -> int:
    """Return a held slot to the queue; the rater is not served its pair again. Repeating
    a skip is harmless. Returns the pair id."""
    now = service_now(now)
    with transaction.atomic():
        view = lock_slot(slot_id=slot_id, dataset=dataset, lock_pair=True)
        if not holds(view, rater.pk):
            if PairSkip.objects.filter(pair_id=view.pair_id, rater=rater).exists():
                return view.pair_id
            raise not_held_error(view, rater.pk)
        _release_and_skip(view=view, rater=rater, now=now)
    return view.pair_id


def slot_flag(*, rater, dataset: str, slot_id: int, reason: str, note: str = "", now: datetime | None = None) -> Flag:
    """Report a pair that cannot be rated as shown (broken image, unreadable caption,
    inappropriate, other) on a slot the rater holds or has rated.

    A held slot goes back to the queue and the rater is not served the pair again; a
    rating already given stays. The flag is recorded once per rater and reason (a repeat
    returns the first one).
    """
    if reason not in FlagReason.values:
        raise QueueInputError(f"reason must be one of {', '.join(FlagReason.values)}, got {reason!r}")
    if not isinstance(note, str) or len(note) > MAX_FLAG_NOTE:
        raise QueueInputError(f"note must be text of at most {MAX_FLAG_NOTE} characters")
    if reason == FlagReason.OTHER and not note.strip():
        raise QueueInputError("a flag with reason 'other' needs a note saying what is wrong")
    now = service_now(now)
    with transaction.atomic():
        view = lock_slot(slot_id=slot_id, dataset=dataset, lock_pair=True)
        rated = view.state == SlotState.DONE and view.rater_id == rater.pk
        if not rated:
            if holds(view, rater.pk):
                _release_and_skip(view=view, rater=rater, now=now)
            elif not PairSkip.objects.filter(pair_id=view.pair_id, rater=rater).exists():
                raise not_held_error(view, rater.pk)
        Flag.objects.bulk_create(
            [Flag(pair_id=view.pair_id, rater=rater, reason=reason, note=note.strip())], ignore_conflicts=True
        )
        return Flag.objects.get(pair_id=view.pair_id, rater=rater, reason=reason)
