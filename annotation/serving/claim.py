"""The claim: lease a rater the next slot, on PostgreSQL in one statement (see
``statements.claim`` and its variants; two when the statement hands over), elsewhere
through the ORM; and say why a claim found nothing when the request itself is the
reason."""

from __future__ import annotations

import random
import time
from datetime import datetime

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Exists, OuterRef, Q

from annotation.core.errors import Conflict, Forbidden, NotFound
from annotation.core.sql import execute, hot_cursor, use_postgres_sql
from annotation.models import NAMED_ONLY_KINDS, Dataset, PairSkip, Qualification, RatingSlot, SlotState
from annotation.serving import statements
from annotation.serving.pauses import is_paused, paused_error
from annotation.serving.shapes import (
    GOLD_TURN,
    Assignment,
    ClaimRead,
    GoldTurn,
    assignment_of,
    check_kind,
    lease_ttl,
    service_now,
)


def slot_claim(
    *,
    rater,
    dataset: str,
    kind: str | None = None,
    now: datetime | None = None,
    yield_to_gold: bool = False,
    read: ClaimRead | None = None,
    no_gold_held: bool = False,
) -> Assignment | GoldTurn | None:
    """Lease the next slot of ``dataset`` for ``rater`` and return it with its items.

    Returns the rater's current lease (renewed, ``resumed=True``) if they hold one for
    these kinds; else the best open or expired slot of a kind the rater is qualified for
    (``kind`` narrows it to one kind), never on a pair they rated, hold or skipped: the
    highest batch priority first, then an expired lease, then a kind at random (so every
    kind advances), within a kind the pair closest to completion. Returns None
    when nothing is left for the rater. Raises NotFound for an unknown dataset,
    RaterPaused (a Forbidden) while the rater is paused in the dataset, and Forbidden when
    the rater lacks the qualification in the dataset.

    With ``yield_to_gold`` (PostgreSQL only) a held gold lease is resumed first, and on
    gold's turn (the rater holds no slot and draws a gold item: drawn by this process at
    the dataset's rate, or by ``statements.claim`` before the process knows it) nothing
    is leased and GOLD_TURN returned.

    With ``read`` (PostgreSQL only) the claim statement also runs that read, in its own
    snapshot, and an assignment carries its row (``Assignment.read_row``); a claim that
    leases nothing answers no row of it. ``no_gold_held``: the caller knows the rater
    holds no gold lease of these kinds (with ``yield_to_gold``, none is looked for unless
    it is gold's turn).

    This is the queue's mechanism only: who may claim (crowd quota, campaign links) and
    whether a gold pair comes first is ``annotation.rating.policy``'s to decide.
    """
    check_kind(kind)
    now = service_now(now)
    expires = now + lease_ttl()
    # A unique violation means a concurrent claim by the same rater won the race for
    # the same pair or lease; the next attempt sees its result.
    for attempt in range(3):
        try:
            if use_postgres_sql() and not connection.in_atomic_block:
                # One statement in one round trip: its own short transaction.
                assignment = _claim_postgres(
                    rater, dataset, kind, now=now, expires=expires, gold=yield_to_gold, read=read, no_gold=no_gold_held
                )
            else:
                with transaction.atomic():
                    if use_postgres_sql():
                        assignment = _claim_postgres(
                            rater,
                            dataset,
                            kind,
                            now=now,
                            expires=expires,
                            gold=yield_to_gold,
                            read=read,
                            no_gold=no_gold_held,
                        )
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


def qualified_kinds(rater, *, dataset: str) -> list[str]:
    """The task kinds ``rater`` may be served in the named dataset, sorted (none in an
    unknown dataset)."""
    dataset_id = Dataset.objects.filter(name=dataset).values_list("id", flat=True).first()
    if dataset_id is None:
        return []
    return Qualification.objects.granted_kinds(rater=rater, dataset_id=dataset_id)


def _explain_nothing_claimed(*, rater, dataset: str, kind: str | None) -> None:
    """Raise if the claim found nothing because of the request itself; return if the
    queue simply has nothing left for this rater."""
    dataset_id = Dataset.objects.filter(name=dataset).values_list("id", flat=True).first()
    if dataset_id is None:
        raise NotFound(f"no dataset named {dataset!r}")
    if is_paused(rater=rater, dataset_id=dataset_id):
        raise paused_error(username=rater.get_username(), dataset=dataset)
    kinds = Qualification.objects.granted_kinds(rater=rater, dataset_id=dataset_id)
    if not kinds:
        raise Forbidden(
            f"{rater.get_username()} has no task qualifications in {dataset!r} yet; an admin grants STS, SIS or SITS"
        )
    if kind is not None and kind not in kinds:
        raise Forbidden(
            f"{rater.get_username()} is not qualified for {kind} pairs in {dataset!r} "
            f"(qualified for: {', '.join(kinds)})"
        )


# When this process last found an active gold pair in a dataset (time.monotonic()).
# Within GOLD_SEEN_SECONDS of that, its claims go straight to a statement with the gold
# half; else they try the one without, which answers for a dataset that has no active
# gold pair and hands over otherwise (statements.claim_ordinary). So a dataset that
# serves gold costs one more statement a minute per process, one that serves none
# never pays for the gold half, and neither can be served wrongly by a stale memory.
GOLD_SEEN_SECONDS = 60.0
_gold_seen: dict[str, float] = {}
# The gold rate (one in so many items, 0 for none) that the last claim with the gold half
# in this process read for a dataset. With it the process draws gold's turn itself, so
# the claims that are not gold's turn (nineteen in twenty at 1 in 20) run the statement
# without it (statements.claim_held_gold; statements.claim_rate_checked when the caller
# knows the rater holds no gold lease), and those that are run statements.claim with
# the turn drawn; without it the statement draws. A rate changed since is never drawn with: the
# statement without the turn then claims nothing and answers the new rate (one more
# statement per process and change), and the statement with it draws again.
_gold_one_in: dict[str, int] = {}
# Where the statements with the gold half answer the dataset's gold rate.
GOLD_ONE_IN_COLUMN = 18


def process_memory() -> bool:
    """Whether serving's per-process memories are on (settings.SERVING_PROCESS_MEMORY):
    off, they remember nothing and every claim and submit asks the database."""
    return settings.SERVING_PROCESS_MEMORY


def gold_seen_lately(dataset: str) -> bool:
    """Whether this process found an active gold pair in ``dataset`` within GOLD_SEEN_SECONDS."""
    seen = _gold_seen.get(dataset)
    return seen is not None and time.monotonic() - seen <= GOLD_SEEN_SECONDS


def note_gold_seen(dataset: str) -> None:
    """A claim statement found an active gold pair in ``dataset`` (its row of NULLs)."""
    if process_memory():
        _gold_seen[dataset] = time.monotonic()


def _note_gold_one_in(dataset: str, one_in: int) -> None:
    """The gold rate a claim statement answered for ``dataset``."""
    if process_memory():
        _gold_one_in[dataset] = one_in


def draws_gold_turn(one_in: int) -> bool:
    """Gold's turn at a rate of one in ``one_in`` items (never at 0)."""
    return one_in > 0 and random.random() * one_in < 1


def _claim_postgres(
    rater,
    dataset: str,
    kind: str | None,
    *,
    now: datetime,
    expires: datetime,
    gold: bool,
    read: ClaimRead | None,
    no_gold: bool,
) -> Assignment | GoldTurn | None:
    extra, values = claim_values(rater, dataset, kind, now=now, expires=expires, gold=gold, read=read)
    if not gold or not gold_seen_lately(dataset):
        row = _claim_row(statements.claim_ordinary(extra), values)
        if row is None or row[0] is not None:
            return None if row is None else claimed_assignment(row, now=now, read=read)
        note_gold_seen(dataset)  # the row of NULLs: the dataset has an active gold pair
    one_in = _gold_one_in.get(dataset)
    if one_in is not None and not draws_gold_turn(one_in):
        undrawn = statements.claim_rate_checked if no_gold else statements.claim_held_gold
        row = _claim_row(undrawn(extra), {**values, "one_in": one_in})
        if row is None or row[0] is not None:
            return None if row is None else claimed_assignment(row, now=now, read=read)
        # The row of NULLs: the dataset's rate is no longer one_in, and nothing was claimed.
        # The statement with the turn draws it at the new rate (drawn_at NULL): one in
        # one_in of the claims at the old rate came there drawn, and draw again there.
        _note_gold_one_in(dataset, row[GOLD_ONE_IN_COLUMN])
        one_in = None
    if one_in is not None:
        # Gold's turn, drawn: the statement nearly always takes it and leases nothing (it
        # leases when the rater holds an item, or no gold pair of their kinds is left),
        # so it runs without the read, and the caller reads on its own.
        extra, read = None, None
    row = _claim_row(statements.claim(extra), {**values, "drawn_at": one_in})
    if row is None:
        return None
    _note_gold_one_in(dataset, row[GOLD_ONE_IN_COLUMN])
    # The row of NULLs: gold's turn (see statements.claim).
    return GOLD_TURN if row[0] is None else claimed_assignment(row, now=now, read=read)


def claim_values(
    rater, dataset: str, kind: str | None, *, now: datetime, expires: datetime, gold: bool, read: ClaimRead | None
) -> tuple:
    """(the read to run in the claim statement or None, the statement's values: the
    read's, then the claim's own, which win)."""
    extra, also = (None, {}) if read is None else (read.statement, read.values)
    own = {"dataset": dataset, "rater": rater.pk, "kind": kind, "now": now, "expires": expires, "gold": gold}
    return extra, {**also, **own}


def claimed_assignment(row, *, now: datetime, read: ClaimRead | None) -> Assignment:
    """The assignment of a claim statement's row, with when it was leased (``now``, unless
    resumed) and, when the statement ran ``read``, the read's row (its last columns)."""
    read_row = None if read is None else tuple(row[len(row) - read.width :])
    return assignment_from_row(row, leased_at=now, read_row=read_row)


def _claim_row(statement, values: dict):
    with hot_cursor() as cursor:
        execute(cursor, statement, values, prefix=statements.async_commit_prefix())
        return cursor.fetchone()


def assignment_from_row(row, *, leased_at: datetime | None = None, read_row: tuple | None = None) -> Assignment:
    """The assignment of a claim statement's row (slot, pair, expiry, resumed, kind,
    dataset, images root, URL prefix, both captions, both images' key, path and size);
    the gold claim answers in the same columns. ``leased_at``: the claim's time, kept
    unless the lease was resumed; ``read_row`` as ``Assignment``'s."""
    (slot_id, pair_id, lease_expires_at, resumed, pair_kind, name, images_root, url_prefix, *rest) = row
    return assignment_of(
        leased_at=None if resumed else leased_at,
        read_row=read_row,
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
    if dataset_id is None or is_paused(rater=rater, dataset_id=dataset_id):
        return None
    granted = Qualification.objects.granted_kinds(rater=rater, dataset_id=dataset_id)
    kinds = [k for k in granted if k == kind or (kind is None and k not in NAMED_ONLY_KINDS)]
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
    # As the PostgreSQL claim: highest priority, an expired lease first, then one of the
    # kinds at random (each kind's head is its pair closest to completion).
    best = max((priority, src) for priority, _, src, _ in candidates)
    chosen = random.choice([c[3] for c in candidates if (c[0], c[2]) == best])
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
    return assignment_of(
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
