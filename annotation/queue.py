"""The rating queue: claim, heartbeat, submit, skip and flag a rating slot.

Guarantees, all held by the database rather than by this code:
- a pair never gets more ratings than it has slots (``Rating.slot`` is one-to-one) and
  never two from one rater (unique ``(pair, rater)`` on slots and on ratings);
- a rater holds at most one lease per dataset and kind (a partial unique index), so a
  repeated claim returns the held slot instead of stranding another one;
- a lease is a timestamp: a leased slot whose ``lease_expires_at`` has passed is
  claimable by the next rater, so an abandoned slot returns without any cron job.
  ``leases_release_expired`` (run by Celery beat) only tidies up.

On PostgreSQL the claim is one statement (one short transaction) that walks the partial
index ``slot_claim_idx`` in queue order with ``FOR UPDATE SKIP LOCKED``; its cost depends
on how many entries at the head of the queue it must pass over (pairs the rater already
rated or skipped, rows other claims hold at that moment), not on the number of open
slots. A submission locks its pair row (FOR NO KEY UPDATE) first and then slot rows of
that pair; every other writer locks one slot row and, holding it, waits for nothing a
submission holds (the claim skips locked rows; foreign-key checks take KEY SHARE on the
pair, which NO KEY UPDATE admits), so the writers cannot deadlock.

Other databases (the embedded SQLite mode) run the same rules through the ORM; SQLite
serializes writers, which keeps the guarantees at a lower throughput.

Every service takes ``now`` (default: ``django.utils.timezone.now()``) so tests control
the clock, and raises a DomainError naming the problem, with nothing written, on bad input.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Case, Count, Exists, F, OuterRef, Q, Value, When
from django.urls import reverse
from django.utils import timezone

from annotation.errors import Conflict, DomainError, Forbidden, NotFound
from annotation.models import (
    Dataset,
    Flag,
    FlagReason,
    Pair,
    PairSkip,
    Qualification,
    QueueCounter,
    Rating,
    RatingSlot,
    SlotState,
    TaskKind,
)
from annotation.sql import Statement, execute

SCORE_MIN = 0.0
SCORE_MAX = 5.0
# A day on one item is certainly a client clock or counting bug, not a measurement.
MAX_TIME_ON_ITEM_MS = 24 * 3600 * 1000
MAX_ADJUSTMENTS = 100_000
MAX_IDEMPOTENCY_KEY = 64
MAX_FLAG_NOTE = 2000


class QueueInputError(DomainError):
    """A submission or claim with bad values. Nothing was written."""

    code = "queue_invalid"


# --- results ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    """One side of a pair as the rating page shows it. ``type`` is "caption" (``text``)
    or "image" (``url``, ``width``/``height`` in pixels when known)."""

    type: str
    text: str | None = None
    url: str | None = None
    width: int | None = None
    height: int | None = None


@dataclass(frozen=True)
class Assignment:
    """A leased slot and what the rater needs to rate it. ``items`` are in display order:
    STS two captions, SIS two images, SITS the caption then the image."""

    slot_id: int
    pair_id: int
    dataset: str
    kind: str
    lease_expires_at: datetime
    resumed: bool
    items: tuple[Item, ...]


@dataclass(frozen=True)
class SubmitResult:
    rating_id: int
    pair_id: int
    slot_id: int
    created_at: datetime
    replayed: bool


# --- helpers ---------------------------------------------------------------------------


def _now(now: datetime | None) -> datetime:
    return now if now is not None else timezone.now()


def lease_ttl() -> timedelta:
    return timedelta(seconds=settings.LEASE_TTL_SECONDS)


def _use_postgres_sql() -> bool:
    """The single-statement PostgreSQL paths; anything else runs the portable ORM paths."""
    return connection.vendor == "postgresql"


def _check_kind(kind: str | None) -> None:
    if kind is not None and kind not in TaskKind.values:
        raise QueueInputError(f"kind must be one of {', '.join(TaskKind.values)}, got {kind!r}")


def image_url(*, dataset: str, images_root: str, image_url_prefix: str, key: str, file_path: str) -> str:
    """Where the browser loads an image: below the dataset's URL prefix, or from the
    image view that serves files below ``images_root``."""
    if image_url_prefix:
        return image_url_prefix.rstrip("/") + "/" + file_path.lstrip("/")
    return reverse("image-file", kwargs={"dataset": dataset, "key": key})


def _dataset_id(name: str) -> int:
    dataset_id = Dataset.objects.filter(name=name).values_list("id", flat=True).first()
    if dataset_id is None:
        raise NotFound(f"no dataset named {name!r}")
    return dataset_id


def _qualified_kinds(rater) -> list[str]:
    return sorted(Qualification.objects.filter(rater=rater).values_list("kind", flat=True))


def _explain_nothing_claimed(*, rater, dataset: str, kind: str | None) -> None:
    """Raise if the claim found nothing because of the request itself; return if the
    queue simply has nothing left for this rater."""
    _dataset_id(dataset)
    kinds = _qualified_kinds(rater)
    if not kinds:
        raise Forbidden(f"{rater.get_username()} has no task qualifications yet; an admin grants STS, SIS or SITS")
    if kind is not None and kind not in kinds:
        raise Forbidden(f"{rater.get_username()} is not qualified for {kind} pairs (qualified for: {', '.join(kinds)})")


# --- claim -----------------------------------------------------------------------------

# Candidates: the rater's own lease (held), the head of the open queue for each kind the
# rater may rate (fresh), and the oldest expired lease in reach (stale). ``pick`` takes
# the held one, else the best by batch priority then ratings already done; the others
# are unlocked when the statement commits. ``held`` waits for its row (only this rater
# touches it); the rest skip rows other claims hold.
_CLAIM_SQL = """
WITH ds AS (
    SELECT id FROM annotation_dataset WHERE name = %(dataset)s
),
kinds AS (
    SELECT q.kind FROM annotation_qualification q
    WHERE q.rater_id = %(rater)s AND (%(kind)s::varchar IS NULL OR q.kind = %(kind)s::varchar)
),
held AS (
    SELECT s.id, 0 AS src, s.priority, s.pair_done
    FROM annotation_ratingslot s JOIN ds ON s.dataset_id = ds.id
    WHERE s.rater_id = %(rater)s AND s.state = 'leased' AND s.kind IN (SELECT kind FROM kinds)
    ORDER BY s.leased_at
    LIMIT 1
    FOR UPDATE OF s
),
fresh AS (
    SELECT c.id, 2 AS src, c.priority, c.pair_done
    FROM ds CROSS JOIN kinds k CROSS JOIN LATERAL (
        SELECT s.id, s.priority, s.pair_done
        FROM annotation_ratingslot s
        WHERE s.dataset_id = ds.id AND s.kind = k.kind AND s.state = 'open'
          AND NOT EXISTS (
              SELECT 1 FROM annotation_ratingslot m WHERE m.pair_id = s.pair_id AND m.rater_id = %(rater)s
          )
          AND NOT EXISTS (
              SELECT 1 FROM annotation_pairskip x WHERE x.pair_id = s.pair_id AND x.rater_id = %(rater)s
          )
        ORDER BY s.priority DESC, s.pair_done DESC, s.pair_id, s.index
        LIMIT 1
        FOR UPDATE OF s SKIP LOCKED
    ) c
    WHERE NOT EXISTS (SELECT 1 FROM held)
),
stale AS (
    SELECT s.id, 1 AS src, s.priority, s.pair_done
    FROM annotation_ratingslot s JOIN ds ON s.dataset_id = ds.id
    WHERE s.state = 'leased' AND s.lease_expires_at < %(now)s
      AND s.kind IN (SELECT kind FROM kinds)
      AND NOT EXISTS (
          SELECT 1 FROM annotation_ratingslot m WHERE m.pair_id = s.pair_id AND m.rater_id = %(rater)s
      )
      AND NOT EXISTS (
          SELECT 1 FROM annotation_pairskip x WHERE x.pair_id = s.pair_id AND x.rater_id = %(rater)s
      )
      AND NOT EXISTS (SELECT 1 FROM held)
    ORDER BY s.priority DESC, s.pair_done DESC, s.lease_expires_at
    LIMIT 1
    FOR UPDATE OF s SKIP LOCKED
),
pick AS (
    SELECT id, src FROM (
        SELECT * FROM held UNION ALL SELECT * FROM fresh UNION ALL SELECT * FROM stale
    ) candidates
    ORDER BY src = 0 DESC, priority DESC, pair_done DESC, src
    LIMIT 1
),
claimed AS (
    UPDATE annotation_ratingslot s SET
        state = 'leased',
        previous_rater_id = CASE WHEN pick.src = 1 THEN s.rater_id ELSE s.previous_rater_id END,
        rater_id = %(rater)s,
        leased_at = CASE WHEN pick.src = 0 THEN s.leased_at ELSE %(now)s END,
        lease_expires_at = %(expires)s
    FROM pick
    WHERE s.id = pick.id
    RETURNING s.id, s.pair_id, s.lease_expires_at, pick.src = 0 AS resumed
)
SELECT c.id, c.pair_id, c.lease_expires_at, c.resumed, p.kind, d.name, d.images_root, d.image_url_prefix,
       ca.text, cb.text,
       ia.key, ia.file_path, ia.width, ia.height,
       ib.key, ib.file_path, ib.width, ib.height
FROM claimed c
JOIN annotation_pair p ON p.id = c.pair_id
JOIN annotation_dataset d ON d.id = p.dataset_id
LEFT JOIN annotation_caption ca ON ca.id = p.caption_a_id
LEFT JOIN annotation_caption cb ON cb.id = p.caption_b_id
LEFT JOIN annotation_image ia ON ia.id = p.image_a_id
LEFT JOIN annotation_image ib ON ib.id = p.image_b_id
"""


def slot_claim(*, rater, dataset: str, kind: str | None = None, now: datetime | None = None) -> Assignment | None:
    """Lease the next slot of ``dataset`` for ``rater`` and return it with its items.

    Returns the rater's current lease (renewed, ``resumed=True``) if they hold one for
    these kinds; else the best open or expired slot of a kind the rater is qualified for
    (``kind`` narrows it to one kind), never on a pair they rated, hold or skipped: the
    highest batch priority first, within it the pair closest to completion. Returns None
    when nothing is left for the rater. Raises NotFound for an unknown dataset and
    Forbidden when the rater lacks the qualification.
    """
    _check_kind(kind)
    now = _now(now)
    expires = now + lease_ttl()
    # A unique violation means a concurrent claim by the same rater won the race for
    # the same pair or lease; the next attempt sees its result.
    for attempt in range(3):
        try:
            if _use_postgres_sql() and not connection.in_atomic_block:
                # One statement in one round trip: its own short transaction.
                assignment = _claim_postgres(rater=rater, dataset=dataset, kind=kind, now=now, expires=expires)
            else:
                with transaction.atomic():
                    if _use_postgres_sql():
                        assignment = _claim_postgres(rater=rater, dataset=dataset, kind=kind, now=now, expires=expires)
                    else:
                        assignment = _claim_portable(rater=rater, dataset=dataset, kind=kind, now=now, expires=expires)
        except IntegrityError:
            if attempt == 2:
                raise Conflict("another claim by the same rater is in progress; try again") from None
            continue
        if assignment is None:
            _explain_nothing_claimed(rater=rater, dataset=dataset, kind=kind)
        return assignment
    return None


_CLAIM = Statement(
    "queue_claim_v1",
    _CLAIM_SQL,
    (
        ("dataset", "text"),
        ("rater", "bigint"),
        ("kind", "varchar"),
        ("now", "timestamptz"),
        ("expires", "timestamptz"),
    ),
)

# A lease need not survive a database crash: losing the last instants of claims only
# leaves those slots open again. So the claim does not wait for its WAL flush;
# submissions do.
_ASYNC_COMMIT = "SET LOCAL synchronous_commit TO OFF; "


def _claim_postgres(*, rater, dataset: str, kind: str | None, now: datetime, expires: datetime) -> Assignment | None:
    with connection.cursor() as cursor:
        values = {"dataset": dataset, "rater": rater.pk, "kind": kind, "now": now, "expires": expires}
        execute(cursor, _CLAIM, values, prefix=_ASYNC_COMMIT)
        row = cursor.fetchone()
    if row is None:
        return None
    (slot_id, pair_id, lease_expires_at, resumed, pair_kind, name, images_root, url_prefix, *rest) = row
    return _assignment(
        slot_id=slot_id,
        pair_id=pair_id,
        lease_expires_at=lease_expires_at,
        resumed=resumed,
        kind=pair_kind,
        dataset=name,
        images_root=images_root,
        image_url_prefix=url_prefix,
        caption_texts=rest[0:2],
        images=(rest[2:6], rest[6:10]),
    )


def _not_touched_by(rater) -> Q:
    mine = RatingSlot.objects.filter(pair_id=OuterRef("pair_id"), rater=rater)
    skipped = PairSkip.objects.filter(pair_id=OuterRef("pair_id"), rater=rater)
    return ~Q(Exists(mine)) & ~Q(Exists(skipped))


def _claim_portable(*, rater, dataset: str, kind: str | None, now: datetime, expires: datetime) -> Assignment | None:
    dataset_id = Dataset.objects.filter(name=dataset).values_list("id", flat=True).first()
    if dataset_id is None:
        return None
    kinds = [k for k in _qualified_kinds(rater) if kind is None or k == kind]
    if not kinds:
        return None
    slots = RatingSlot.objects.select_for_update(skip_locked=True, of=("self",))
    held = (
        RatingSlot.objects.select_for_update()
        .filter(rater=rater, state=SlotState.LEASED, dataset_id=dataset_id, kind__in=kinds)
        .order_by("leased_at")
        .first()
    )
    if held is not None:
        RatingSlot.objects.filter(pk=held.pk).update(lease_expires_at=expires)
        return _assignment_for(slot_id=held.pk, lease_expires_at=expires, resumed=True)
    candidates: list[tuple[int, int, int, RatingSlot]] = []
    for k in kinds:
        slot = (
            slots.filter(dataset_id=dataset_id, kind=k, state=SlotState.OPEN)
            .filter(_not_touched_by(rater))
            .order_by("-priority", "-pair_done", "pair_id", "index")
            .first()
        )
        if slot is not None:
            candidates.append((slot.priority, slot.pair_done, 0, slot))
    stale = (
        slots.filter(dataset_id=dataset_id, kind__in=kinds, state=SlotState.LEASED, lease_expires_at__lt=now)
        .filter(_not_touched_by(rater))
        .order_by("-priority", "-pair_done", "lease_expires_at")
        .first()
    )
    if stale is not None:
        candidates.append((stale.priority, stale.pair_done, 1, stale))
    if not candidates:
        return None
    _, _, _, chosen = max(candidates, key=lambda c: c[:3])
    RatingSlot.objects.filter(pk=chosen.pk).update(
        state=SlotState.LEASED,
        previous_rater_id=chosen.rater_id if chosen.state == SlotState.LEASED else chosen.previous_rater_id,
        rater=rater,
        leased_at=now,
        lease_expires_at=expires,
    )
    return _assignment_for(slot_id=chosen.pk, lease_expires_at=expires, resumed=False)


def _assignment_for(*, slot_id: int, lease_expires_at: datetime, resumed: bool) -> Assignment:
    slot = RatingSlot.objects.select_related(
        "pair__dataset", "pair__caption_a", "pair__caption_b", "pair__image_a", "pair__image_b"
    ).get(pk=slot_id)
    pair = slot.pair
    images = [
        (img.key, img.file_path, img.width, img.height) if img is not None else (None, None, None, None)
        for img in (pair.image_a, pair.image_b)
    ]
    return _assignment(
        slot_id=slot.pk,
        pair_id=pair.pk,
        lease_expires_at=lease_expires_at,
        resumed=resumed,
        kind=pair.kind,
        dataset=pair.dataset.name,
        images_root=pair.dataset.images_root,
        image_url_prefix=pair.dataset.image_url_prefix,
        caption_texts=[c.text if c is not None else None for c in (pair.caption_a, pair.caption_b)],
        images=images,
    )


def _assignment(
    *,
    slot_id: int,
    pair_id: int,
    lease_expires_at: datetime,
    resumed: bool,
    kind: str,
    dataset: str,
    images_root: str,
    image_url_prefix: str,
    caption_texts,
    images,
) -> Assignment:
    def image_item(values) -> Item:
        key, file_path, width, height = values
        url = image_url(
            dataset=dataset, images_root=images_root, image_url_prefix=image_url_prefix, key=key, file_path=file_path
        )
        return Item(type="image", url=url, width=width, height=height)

    if kind == TaskKind.STS:
        items = (Item(type="caption", text=caption_texts[0]), Item(type="caption", text=caption_texts[1]))
    elif kind == TaskKind.SIS:
        items = (image_item(images[0]), image_item(images[1]))
    else:
        items = (Item(type="caption", text=caption_texts[0]), image_item(images[0]))
    return Assignment(
        slot_id=slot_id,
        pair_id=pair_id,
        dataset=dataset,
        kind=kind,
        lease_expires_at=lease_expires_at,
        resumed=bool(resumed),
        items=items,
    )


# --- the slot a request names ----------------------------------------------------------


@dataclass(frozen=True)
class _SlotView:
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


# The pair row is locked inside the materialized CTE, before the outer query's row lock
# on the slot: the only lock order a submission uses. NO KEY UPDATE, because foreign-key
# checks of rows inserted meanwhile (skips, flags) take KEY SHARE on the pair: FOR UPDATE
# would make them wait on the submission while it waits on their slot row.
_LOCK_PAIR_AND_SLOT_SQL = """
WITH p AS MATERIALIZED (
    SELECT id, ratings_done, ratings_required FROM annotation_pair
    WHERE id = (SELECT pair_id FROM annotation_ratingslot WHERE id = %(slot)s)
    FOR NO KEY UPDATE
)
SELECT s.state, s.rater_id, s.previous_rater_id, s.pair_id, s.dataset_id, d.name, s.kind,
       p.ratings_done, p.ratings_required
FROM annotation_ratingslot s
JOIN p ON p.id = s.pair_id
JOIN annotation_dataset d ON d.id = s.dataset_id
WHERE s.id = %(slot)s
FOR UPDATE OF s
"""

_LOCK_PAIR_AND_SLOT = Statement("queue_lock_slot_v1", _LOCK_PAIR_AND_SLOT_SQL, (("slot", "bigint"),))

_SLOT_VIEW_FIELDS = (
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


def _lock_slot(*, slot_id: int, dataset: str, lock_pair: bool) -> _SlotView:
    """Read a slot of ``dataset`` with its pair, locking the slot row (and first the pair
    row when ``lock_pair``: submissions take pair then slot, the one lock order)."""
    if lock_pair and _use_postgres_sql():
        with connection.cursor() as cursor:
            execute(cursor, _LOCK_PAIR_AND_SLOT, {"slot": slot_id})
            values = cursor.fetchone()
        row = dict(zip(_SLOT_VIEW_FIELDS, values, strict=True)) if values is not None else None
    else:
        if lock_pair:
            pair_id = RatingSlot.objects.filter(pk=slot_id).values_list("pair_id", flat=True).first()
            if pair_id is not None:
                list(Pair.objects.select_for_update(no_key=True).filter(pk=pair_id).values_list("id"))
        row = _read_slot_locked(slot_id)
    return _slot_view(slot_id=slot_id, dataset=dataset, row=row)


def _read_slot_locked(slot_id: int) -> dict | None:
    return RatingSlot.objects.select_for_update(of=("self",)).filter(pk=slot_id).values(*_SLOT_VIEW_FIELDS).first()


def _slot_view(*, slot_id: int, dataset: str, row: dict | None) -> _SlotView:
    if row is None:
        raise NotFound(f"no rating slot #{slot_id}")
    if row["dataset__name"] != dataset:
        raise NotFound(f"rating slot #{slot_id} is not in dataset {dataset!r}")
    return _SlotView(
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


def _holds(view: _SlotView, rater_id: int) -> bool:
    """The rater may write on this slot: they hold its lease (expired or not), or their
    lease expired and the slot went back to the queue without anyone taking it since."""
    if view.state == SlotState.LEASED:
        return view.rater_id == rater_id
    return view.state == SlotState.OPEN and view.previous_rater_id == rater_id


def _not_held_error(view: _SlotView, rater_id: int) -> DomainError:
    slot = f"rating slot #{view.slot_id}"
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
    now = _now(now)
    expires = now + lease_ttl()
    try:
        with transaction.atomic():
            view = _lock_slot(slot_id=slot_id, dataset=dataset, lock_pair=False)
            if not _holds(view, rater.pk):
                raise _not_held_error(view, rater.pk)
            RatingSlot.objects.filter(pk=slot_id).update(
                state=SlotState.LEASED,
                rater=rater,
                lease_expires_at=expires,
                leased_at=Case(When(state=SlotState.OPEN, then=Value(now)), default=F("leased_at")),
            )
    except IntegrityError:
        raise Conflict(
            f"your lease on rating slot #{slot_id} expired and you have since claimed another {view.kind} slot "
            "(of this pair, or of this dataset); finish that one"
        ) from None
    return expires


# --- submit ----------------------------------------------------------------------------


def _check_submission(
    *,
    score,
    time_on_item_ms,
    time_to_first_move_ms,
    adjustments,
    idempotency_key,
) -> None:
    if isinstance(score, bool) or not isinstance(score, int | float):
        raise QueueInputError(f"score must be a number, got {type(score).__name__}")
    if not math.isfinite(score):
        raise QueueInputError(f"score must be a finite number, got {score!r}")
    if not SCORE_MIN <= score <= SCORE_MAX:
        raise QueueInputError(f"score must be between {SCORE_MIN:g} and {SCORE_MAX:g}, got {score!r}")
    for name, value, low, high in (
        ("time_on_item_ms", time_on_item_ms, 0, MAX_TIME_ON_ITEM_MS),
        ("adjustments", adjustments, 0, MAX_ADJUSTMENTS),
    ):
        if isinstance(value, bool) or not isinstance(value, int):
            raise QueueInputError(f"{name} must be a whole number, got {value!r}")
        if not low <= value <= high:
            raise QueueInputError(f"{name} must be between {low} and {high}, got {value}")
    if time_to_first_move_ms is not None:
        if isinstance(time_to_first_move_ms, bool) or not isinstance(time_to_first_move_ms, int):
            raise QueueInputError(
                f"time_to_first_move_ms must be a whole number or null, got {time_to_first_move_ms!r}"
            )
        if not 0 <= time_to_first_move_ms <= time_on_item_ms:
            raise QueueInputError(
                f"time_to_first_move_ms must be between 0 and time_on_item_ms ({time_on_item_ms}), "
                f"got {time_to_first_move_ms}"
            )
    if not isinstance(idempotency_key, str) or not idempotency_key.strip():
        raise QueueInputError("idempotency_key must be a non-empty string")
    if len(idempotency_key) > MAX_IDEMPOTENCY_KEY:
        raise QueueInputError(f"idempotency_key must be at most {MAX_IDEMPOTENCY_KEY} characters")


# One statement after the pair and slot rows are locked: the slot becomes done, the
# rating is stored, the pair and its other slots learn the new count, and a pair that
# just completed leaves the open-pairs counter.
_SUBMIT_SQL = """
WITH s AS (
    UPDATE annotation_ratingslot SET
        state = 'done', rater_id = %(rater)s, lease_expires_at = NULL,
        pair_done = %(done)s, pair_complete = %(complete)s
    WHERE id = %(slot)s
    RETURNING id, pair_id
),
r AS (
    INSERT INTO annotation_rating (
        pair_id, slot_id, rater_id, score, time_on_item_ms, time_to_first_move_ms, adjustments,
        idempotency_key, created_at
    )
    SELECT s.pair_id, s.id, %(rater)s, %(score)s, %(time_on_item_ms)s, %(time_to_first_move_ms)s,
           %(adjustments)s, %(key)s, %(now)s
    FROM s
    RETURNING id
),
p AS (
    UPDATE annotation_pair SET ratings_done = %(done)s WHERE id = %(pair)s AND EXISTS (SELECT 1 FROM r)
),
siblings AS (
    UPDATE annotation_ratingslot SET pair_done = %(done)s, pair_complete = %(complete)s
    WHERE pair_id = %(pair)s AND id <> %(slot)s AND EXISTS (SELECT 1 FROM r)
),
counter AS (
    UPDATE annotation_queuecounter SET pairs_open = pairs_open - 1
    WHERE %(complete)s AND dataset_id = %(dataset)s AND kind = %(kind)s AND EXISTS (SELECT 1 FROM r)
)
SELECT id FROM r
"""

_SUBMIT = Statement(
    "queue_submit_v1",
    _SUBMIT_SQL,
    (
        ("rater", "bigint"),
        ("slot", "bigint"),
        ("pair", "bigint"),
        ("dataset", "bigint"),
        ("kind", "varchar"),
        ("done", "integer"),
        ("complete", "boolean"),
        ("score", "double precision"),
        ("time_on_item_ms", "integer"),
        ("time_to_first_move_ms", "integer"),
        ("adjustments", "integer"),
        ("key", "varchar"),
        ("now", "timestamptz"),
    ),
)


# The common case in one statement and one round trip: the pair row is locked first (in
# the materialized CTE, the lock order of every submission), the slot update carries the
# holder check, and the rest follows only if it matched. No row back means "not the
# common case" (not held, a repeat, another dataset): the caller then takes the
# step-by-step path that says why.
_SUBMIT_FAST_SQL = """
WITH p AS MATERIALIZED (
    SELECT pr.id, pr.ratings_done + 1 AS done, pr.ratings_done + 1 >= pr.ratings_required AS complete,
           pr.dataset_id, pr.kind
    FROM annotation_pair pr
    WHERE pr.id = (SELECT pair_id FROM annotation_ratingslot WHERE id = %(slot)s)
      AND pr.dataset_id = (SELECT id FROM annotation_dataset WHERE name = %(dataset_name)s)
    FOR NO KEY UPDATE OF pr
),
s AS (
    UPDATE annotation_ratingslot sl SET
        state = 'done', rater_id = %(rater)s, lease_expires_at = NULL,
        pair_done = p.done, pair_complete = p.complete
    FROM p
    WHERE sl.id = %(slot)s AND sl.pair_id = p.id
      AND ((sl.state = 'leased' AND sl.rater_id = %(rater)s)
           OR (sl.state = 'open' AND sl.previous_rater_id = %(rater)s))
    RETURNING sl.id, sl.pair_id
),
r AS (
    INSERT INTO annotation_rating (
        pair_id, slot_id, rater_id, score, time_on_item_ms, time_to_first_move_ms, adjustments,
        idempotency_key, created_at
    )
    SELECT s.pair_id, s.id, %(rater)s, %(score)s, %(time_on_item_ms)s, %(time_to_first_move_ms)s,
           %(adjustments)s, %(key)s, %(now)s
    FROM s
    RETURNING id, pair_id
),
pu AS (
    UPDATE annotation_pair pr SET ratings_done = p.done FROM p WHERE pr.id = p.id AND EXISTS (SELECT 1 FROM r)
),
siblings AS (
    UPDATE annotation_ratingslot sl SET pair_done = p.done, pair_complete = p.complete
    FROM p
    WHERE sl.pair_id = p.id AND sl.id <> %(slot)s AND EXISTS (SELECT 1 FROM r)
),
counter AS (
    UPDATE annotation_queuecounter qc SET pairs_open = qc.pairs_open - 1
    FROM p
    WHERE p.complete AND qc.dataset_id = p.dataset_id AND qc.kind = p.kind AND EXISTS (SELECT 1 FROM r)
)
SELECT id, pair_id FROM r
"""

_SUBMIT_FAST = Statement(
    "queue_submit_fast_v1",
    _SUBMIT_FAST_SQL,
    (
        ("slot", "bigint"),
        ("dataset_name", "text"),
        ("rater", "bigint"),
        ("score", "double precision"),
        ("time_on_item_ms", "integer"),
        ("time_to_first_move_ms", "integer"),
        ("adjustments", "integer"),
        ("key", "varchar"),
        ("now", "timestamptz"),
    ),
)


def _submit_postgres_fast(values: Mapping) -> tuple[int, int] | None:
    """(rating id, pair id) if the rater held the slot and the rating is stored; None
    when the slot is not simply held (nothing written)."""
    # In autocommit the statement is its own transaction; inside a caller's transaction
    # a savepoint keeps a unique violation from spoiling it.
    scope = transaction.atomic() if connection.in_atomic_block else contextlib.nullcontext()
    with scope, connection.cursor() as cursor:
        execute(cursor, _SUBMIT_FAST, values)
        return cursor.fetchone()


def rating_submit_and_claim_next(
    *, rater, dataset: str, slot_id: int, next_kind: str, **submission
) -> tuple[SubmitResult, Assignment | None]:
    """Store a rating, then claim the rater's next pair of ``next_kind`` (None when none
    is left), so the rating page shows it without another round trip. The rating commits
    first; the claim is its own short transaction, and a failed claim never loses it."""
    result = rating_submit(rater=rater, dataset=dataset, slot_id=slot_id, **submission)
    return result, slot_claim(rater=rater, dataset=dataset, kind=next_kind)


def rating_submit(
    *,
    rater,
    dataset: str,
    slot_id: int,
    score: float,
    time_on_item_ms: int,
    time_to_first_move_ms: int | None,
    adjustments: int,
    idempotency_key: str,
    now: datetime | None = None,
) -> SubmitResult:
    """Store the rater's rating on a slot they hold and mark the slot done.

    ``score`` is a finite number in [0, 5]; ``time_on_item_ms`` is from showing the pair
    to submitting; ``time_to_first_move_ms`` (null if the slider never moved) is at most
    that; ``adjustments`` counts slider moves. Repeating a submission with the same
    ``idempotency_key`` returns the stored rating (``replayed=True``) and stores nothing.
    A lease that expired is still accepted while the slot is free; once another rater
    has taken it the submission is refused with Conflict.
    """
    _check_submission(
        score=score,
        time_on_item_ms=time_on_item_ms,
        time_to_first_move_ms=time_to_first_move_ms,
        adjustments=adjustments,
        idempotency_key=idempotency_key,
    )
    now = _now(now)
    score = float(score)
    try:
        if _use_postgres_sql():
            stored = _submit_postgres_fast(
                {
                    "slot": slot_id,
                    "dataset_name": dataset,
                    "rater": rater.pk,
                    "score": score,
                    "time_on_item_ms": time_on_item_ms,
                    "time_to_first_move_ms": time_to_first_move_ms,
                    "adjustments": adjustments,
                    "key": idempotency_key,
                    "now": now,
                }
            )
            if stored is not None:
                return SubmitResult(
                    rating_id=stored[0], pair_id=stored[1], slot_id=slot_id, created_at=now, replayed=False
                )
        with transaction.atomic():
            view = _lock_slot(slot_id=slot_id, dataset=dataset, lock_pair=True)
            if not _holds(view, rater.pk):
                replay = _replayed(view, rater, idempotency_key)
                if replay is not None:
                    return replay
                raise _not_held_error(view, rater.pk)
            done = view.ratings_done + 1
            complete = done >= view.ratings_required
            params = {
                "rater": rater.pk,
                "slot": slot_id,
                "pair": view.pair_id,
                "dataset": view.dataset_id,
                "kind": view.kind,
                "done": done,
                "complete": complete,
                "score": score,
                "time_on_item_ms": time_on_item_ms,
                "time_to_first_move_ms": time_to_first_move_ms,
                "adjustments": adjustments,
                "key": idempotency_key,
                "now": now,
            }
            if _use_postgres_sql():
                with connection.cursor() as cursor:
                    execute(cursor, _SUBMIT, params)
                    rating_id = cursor.fetchone()[0]
            else:
                rating_id = _submit_portable(params)
    except IntegrityError:
        raise _submit_conflict(rater=rater, slot_id=slot_id, idempotency_key=idempotency_key) from None
    return SubmitResult(rating_id=rating_id, pair_id=view.pair_id, slot_id=slot_id, created_at=now, replayed=False)


def _submit_portable(params: Mapping) -> int:
    slot_id, pair_id = params["slot"], params["pair"]
    progress = {"pair_done": params["done"], "pair_complete": params["complete"]}
    RatingSlot.objects.filter(pk=slot_id).update(
        state=SlotState.DONE, rater_id=params["rater"], lease_expires_at=None, **progress
    )
    rating = Rating.objects.create(
        pair_id=pair_id,
        slot_id=slot_id,
        rater_id=params["rater"],
        score=params["score"],
        time_on_item_ms=params["time_on_item_ms"],
        time_to_first_move_ms=params["time_to_first_move_ms"],
        adjustments=params["adjustments"],
        idempotency_key=params["key"],
    )
    # created_at is auto_now_add; the service clock decides it, as on PostgreSQL.
    Rating.objects.filter(pk=rating.pk).update(created_at=params["now"])
    Pair.objects.filter(pk=pair_id).update(ratings_done=params["done"])
    RatingSlot.objects.filter(pair_id=pair_id).exclude(pk=slot_id).update(**progress)
    if params["complete"]:
        QueueCounter.objects.filter(dataset_id=params["dataset"], kind=params["kind"]).update(
            pairs_open=F("pairs_open") - 1
        )
    return rating.pk


def _replayed(view: _SlotView, rater, idempotency_key: str) -> SubmitResult | None:
    """The stored rating if this is a repeat of the rater's submission on this slot."""
    if view.state != SlotState.DONE or view.rater_id != rater.pk:
        return None
    rating = Rating.objects.filter(slot_id=view.slot_id).values("id", "idempotency_key", "created_at").first()
    if rating is None or rating["idempotency_key"] != idempotency_key:
        return None
    return SubmitResult(
        rating_id=rating["id"],
        pair_id=view.pair_id,
        slot_id=view.slot_id,
        created_at=rating["created_at"],
        replayed=True,
    )


def _submit_conflict(*, rater, slot_id: int, idempotency_key: str) -> DomainError:
    """Name the unique rule a submission broke (read after its transaction rolled back)."""
    used = Rating.objects.filter(rater=rater, idempotency_key=idempotency_key).values_list("slot_id", flat=True).first()
    if used is not None and used != slot_id:
        return Conflict(
            f"idempotency key {idempotency_key!r} was already used for rating slot #{used}; use a new key for each item"
        )
    return Conflict(f"you already hold or rated another slot of the pair of rating slot #{slot_id}")


# --- skip and flag ---------------------------------------------------------------------


def _release_and_skip(*, view: _SlotView, rater, now: datetime) -> None:
    """Give the slot back to the queue and never serve its pair to this rater again."""
    if view.state == SlotState.LEASED:
        RatingSlot.objects.filter(pk=view.slot_id).update(
            state=SlotState.OPEN, rater=None, leased_at=None, lease_expires_at=None
        )
    PairSkip.objects.bulk_create([PairSkip(pair_id=view.pair_id, rater=rater, created_at=now)], ignore_conflicts=True)


def slot_skip(*, rater, dataset: str, slot_id: int, now: datetime | None = None) -> int:
    """Return a held slot to the queue; the rater is not served its pair again. Repeating
    a skip is harmless. Returns the pair id."""
    now = _now(now)
    with transaction.atomic():
        view = _lock_slot(slot_id=slot_id, dataset=dataset, lock_pair=False)
        if not _holds(view, rater.pk):
            if PairSkip.objects.filter(pair_id=view.pair_id, rater=rater).exists():
                return view.pair_id
            raise _not_held_error(view, rater.pk)
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
    now = _now(now)
    with transaction.atomic():
        view = _lock_slot(slot_id=slot_id, dataset=dataset, lock_pair=False)
        rated = view.state == SlotState.DONE and view.rater_id == rater.pk
        if not rated:
            if _holds(view, rater.pk):
                _release_and_skip(view=view, rater=rater, now=now)
            elif not PairSkip.objects.filter(pair_id=view.pair_id, rater=rater).exists():
                raise _not_held_error(view, rater.pk)
        Flag.objects.bulk_create(
            [Flag(pair_id=view.pair_id, rater=rater, reason=reason, note=note.strip())], ignore_conflicts=True
        )
        return Flag.objects.get(pair_id=view.pair_id, rater=rater, reason=reason)


# --- tidy-up and counters --------------------------------------------------------------


def leases_release_expired(*, now: datetime | None = None, batch_size: int = 1000) -> int:
    """Return expired leases to the open queue; returns how many. Not needed for
    correctness (the claim takes expired leases itself); it keeps the claim's look at
    expired leases short and the ``leased`` state honest for monitoring. The former
    holder is kept in ``previous_rater`` so their late submission is still accepted
    while nobody else takes the slot."""
    now = _now(now)
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
                Pair.objects.filter(dataset_id=dataset_id, kind=kind, ratings_done__lt=F("ratings_required"))
                .aggregate(n=Count("id"))
                .get("n")
            )
            QueueCounter.objects.filter(pk=counter.pk).update(pairs_open=open_pairs or 0)
            written += 1
    return written


# --- qualifications --------------------------------------------------------------------


def qualifications_set(*, rater, kinds: list[str]) -> list[str]:
    """Make ``kinds`` exactly the task kinds the rater may be served. The user must be in
    the rater group. Leases the rater holds on a withdrawn kind stay until they end."""
    from annotation.roles import RATER, has_role

    unknown = [k for k in kinds if k not in TaskKind.values]
    if unknown:
        raise QueueInputError(f"unknown task kind(s) {', '.join(map(repr, unknown))}; use {', '.join(TaskKind.values)}")
    if not has_role(rater, RATER):
        raise QueueInputError(f"{rater.get_username()} is not in the rater group; add them to it first")
    with transaction.atomic():
        Qualification.objects.filter(rater=rater).exclude(kind__in=kinds).delete()
        Qualification.objects.bulk_create(
            [Qualification(rater=rater, kind=k) for k in sorted(set(kinds))], ignore_conflicts=True
        )
    return _qualified_kinds(rater)
