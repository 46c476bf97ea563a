"""A rater's progress in a dataset (today's count, pairs left, the oldest lease) and their
ratings, read as the rating page and the API show them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, time, tzinfo

from django.db.models import F
from django.utils import timezone

from annotation.catalog.selectors import dataset_get
from annotation.core.errors import NotFound
from annotation.core.sql import use_postgres_sql
from annotation.models import (
    GoldLease,
    GoldLeaseState,
    GoldPurpose,
    GoldRating,
    Qualification,
    Rating,
    RatingSlot,
    SlotState,
)
from annotation.rating.progress_sql import progress_after_claim, progress_claim_read, progress_row
from annotation.serving.pairs_left import rater_pairs_left
from annotation.serving.shapes import Assignment, ClaimRead


@dataclass(frozen=True)
class RaterProgress:
    """What the rating page shows. ``pairs_left``: pairs of the rater's kinds that still
    need ratings and that the rater has neither rated nor skipped (the held one counts);
    ``pairs_left_by_kind`` splits it by kind, one entry per qualified kind."""

    dataset: str
    kinds: list[str]
    ratings_today: int
    pairs_left: int
    pairs_left_by_kind: dict[str, int]
    day_starts_at: datetime
    held_slot_id: int | None
    held_until: datetime | None


@dataclass(frozen=True)
class ProgressAsk:
    """A progress asked for before a claim: the day it counts from, and the read the claim
    may run for it in its own statement (``queue.ClaimRead``; None when there is none)."""

    day_start: datetime
    claim_read: ClaimRead | None


def rater_progress_ask(*, rater, dataset: str, tz: tzinfo | None = None, now: datetime | None = None) -> ProgressAsk:
    """What a caller who claims for ``rater`` and then answers their progress hands the
    claim (``claim_read``) and then ``rater_progress`` (``ask``): on PostgreSQL, once this
    process knows the dataset's id, the claim reads the progress itself, which spares a
    statement and its round trip per rated item."""
    day_start = _day_start(tz, now)
    read = progress_claim_read(rater_id=rater.pk, dataset=dataset, day_start=day_start) if use_postgres_sql() else None
    return ProgressAsk(day_start=day_start, claim_read=read)


def _day_start(tz: tzinfo | None, now: datetime | None) -> datetime:
    now = now if now is not None else timezone.now()
    tz = tz or timezone.get_default_timezone()
    return datetime.combine(now.astimezone(tz).date(), time.min, tzinfo=tz)


def rater_progress(
    *,
    rater,
    dataset: str,
    tz: tzinfo | None = None,
    now: datetime | None = None,
    ask: ProgressAsk | None = None,
    claimed: Assignment | None = None,
) -> RaterProgress:
    """Progress of one rater on one dataset, in indexed reads whose cost does not grow
    with the queue (it grows with the rater's own unfinished pairs): open pairs from the
    per-kind counters, minus the rater's own unfinished pairs (partial index on their
    slots) and skips. On PostgreSQL one prepared statement (``annotation.rating.progress_sql``),
    which sums today's ratings from the rater's quarter-hour tally, else the ORM's reads
    below, which count them by the (rater, created_at) index. "Today" starts at midnight
    in ``tz`` (default: the server's time zone).

    With ``ask`` (``rater_progress_ask``'s, before ``claimed``, the claim it was handed to),
    "today" is the ask's and the progress is the one the claim read, when it read one."""
    day_start = ask.day_start if ask is not None else _day_start(tz, now)
    if use_postgres_sql():
        row = None
        if ask is not None and claimed is not None and claimed.read_row is not None:
            row = progress_after_claim(
                claimed.read_row,
                slot_id=claimed.slot_id,
                lease_expires_at=claimed.lease_expires_at,
                resumed=claimed.resumed,
                leased_at=claimed.leased_at,
            )
        return _rater_progress_postgres(rater=rater, dataset=dataset, day_start=day_start, row=row)
    ds = dataset_get(name=dataset)
    kinds = Qualification.objects.granted_kinds(rater=rater, dataset_id=ds.id)
    # Gold ratings count like any other: nothing on the page tells a gold pair apart.
    ratings_today = (
        Rating.objects.filter(rater=rater, created_at__gte=day_start, pair__dataset=ds).count()
        + GoldRating.objects.filter(
            rater=rater, created_at__gte=day_start, dataset=ds, purpose=GoldPurpose.QUEUE
        ).count()
    )
    left = rater_pairs_left(rater=rater, kinds=kinds, dataset_id=ds.id)
    pairs_left_by_kind = {kind: left.get((ds.id, kind), 0) for kind in kinds}
    held = _oldest_lease(rater=rater, dataset=ds)
    return RaterProgress(
        dataset=ds.name,
        kinds=kinds,
        ratings_today=ratings_today,
        pairs_left=sum(pairs_left_by_kind.values()),
        pairs_left_by_kind=pairs_left_by_kind,
        day_starts_at=day_start,
        held_slot_id=held["id"] if held else None,
        held_until=held["lease_expires_at"] if held else None,
    )


def _rater_progress_postgres(*, rater, dataset: str, day_start: datetime, row: tuple | None) -> RaterProgress:
    """``rater_progress`` in one statement (``annotation.rating.progress_sql``), or from ``row``
    when a claim read it."""
    if row is None:
        row = progress_row(rater_id=rater.pk, dataset=dataset, day_start=day_start)
    if row is None:
        raise NotFound(f"no dataset named {dataset!r}")
    _, ratings_today, kinds, left, held_id, held_until = row
    pairs_left_by_kind = {kind: max(int(n), 0) for kind, n in sorted(zip(kinds, left, strict=True))}
    return RaterProgress(
        dataset=dataset,
        kinds=sorted(kinds),
        ratings_today=int(ratings_today),
        pairs_left=sum(pairs_left_by_kind.values()),
        pairs_left_by_kind=pairs_left_by_kind,
        day_starts_at=day_start,
        held_slot_id=held_id,
        held_until=held_until,
    )


def _oldest_lease(*, rater, dataset) -> dict | None:
    """The rater's oldest held lease in the dataset, ordinary or gold alike: by lease time,
    a tie by id (both kinds draw ids from one sequence), so which table holds it never
    decides which one progress names."""
    fields = ("leased_at", "id", "lease_expires_at")
    leases = [
        RatingSlot.objects.filter(rater=rater, dataset=dataset, state=SlotState.LEASED)
        .order_by(F("leased_at").asc(nulls_first=True), "id")
        .values(*fields)
        .first(),
        GoldLease.objects.filter(rater=rater, dataset=dataset, state=GoldLeaseState.LEASED, gold_pair__active=True)
        .order_by(F("leased_at").asc(nulls_first=True), "id")
        .values(*fields)
        .first(),
    ]
    held = [lease for lease in leases if lease is not None]
    # A lease without a time (none the claim writes) counts as the oldest.
    return (
        min(held, key=lambda lease: (lease["leased_at"] is not None, lease["leased_at"] or 0, lease["id"]))
        if held
        else None
    )


def rater_rating_list(*, rater, dataset: str, before_id: int | None = None, limit: int = 50) -> list[dict]:
    """The rater's own ratings on a dataset, newest first (``before_id`` pages back), gold
    ratings among them like any other (their ids come from the same sequence): dicts of
    id, pair_id, kind, score, time_on_item_ms, time_to_first_move_ms, adjustments,
    created_at."""
    ds = dataset_get(name=dataset)
    fields = ("id", "score", "time_on_item_ms", "time_to_first_move_ms", "adjustments", "created_at")
    ratings = Rating.objects.filter(rater=rater, pair__dataset=ds)
    gold = GoldRating.objects.filter(rater=rater, dataset=ds, purpose=GoldPurpose.QUEUE)
    if before_id is not None:
        ratings, gold = ratings.filter(id__lt=before_id), gold.filter(id__lt=before_id)
    rows = [
        *ratings.order_by("-id").values(*fields, "pair_id", kind=F("pair__kind"))[:limit],
        *gold.order_by("-id").values(*fields, kind=F("gold_pair__kind"), pair_id=F("gold_pair_id"))[:limit],
    ]
    return sorted(rows, key=lambda row: -row["id"])[:limit]
