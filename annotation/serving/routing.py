"""Queue or gold: the one place that decides which of serving's two kinds of item a claim,
a submit, a heartbeat, a skip or a flag goes to. An ordinary slot and a gold lease look
alike to the rater, and their ids come from one sequence (``gold_ids``), so an id is at
most one of them.

- Claim. On PostgreSQL the queue's claim statement also decides gold's turn (drawn by the
  process or by the statement, ``claim``), so a claim that serves no gold is one
  statement; on gold's turn the gold claim leases the item, and when gold serves nothing
  (no work left, every gold pair met) the queue claims without the turn. On the portable
  paths the gold claim comes first, as they have no single statement.
- Submit. On PostgreSQL one statement stores a slot's or a gold lease's rating in the
  common case (``submit_statements.submit_fast``, which tries the id as both); when it
  stores nothing, the stepwise path of the id's kind says why. So storing a rating tries
  at most two statements, and the stepwise path alone runs off PostgreSQL.
- Heartbeat, skip, flag: the id's kind is looked up, then the queue's or gold's path runs.

No path is chosen by trying one and catching its miss. This module is a mechanism, as
the rest of the package: who may claim or submit is ``annotation.rating.policy``'s.
"""

from __future__ import annotations

import contextlib
from datetime import datetime

from django.db import IntegrityError, connection, transaction

from annotation.core.sql import execute, hot_cursor, use_postgres_sql
from annotation.models import Flag, GoldLease
from annotation.serving import gold, slots, submit_statements
from annotation.serving.claim import qualified_kinds, slot_claim
from annotation.serving.shapes import GOLD_TURN, Assignment, ClaimRead, SubmitResult, lease_ttl, service_now
from annotation.serving.submit import slot_submit, stored_result, submission_values


def is_gold_lease(item_id: int) -> bool:
    """Whether ``item_id`` names a gold lease rather than a slot (or nothing)."""
    return GoldLease.objects.filter(pk=item_id).exists()


# --- claim -------------------------------------------------------------------------------


def claim(
    *,
    rater,
    dataset: str,
    kind: str | None,
    now: datetime | None,
    read: ClaimRead | None = None,
    no_gold_held: bool = False,
) -> Assignment | None:
    """A gold pair now and then, looking like any other, else the queue's next slot (which
    also says why nothing came: unknown dataset, pause, qualification). ``read`` and
    ``no_gold_held``: as ``slot_claim``'s."""
    now = service_now(now)
    if use_postgres_sql():
        claimed = slot_claim(
            rater=rater, dataset=dataset, kind=kind, now=now, yield_to_gold=True, read=read, no_gold_held=no_gold_held
        )
        if claimed is not GOLD_TURN:
            return claimed
        expires = now + lease_ttl()
        assignment = gold.gold_claim(
            rater=rater, dataset=dataset, kinds=None, kind=kind, now=now, expires=expires, drawn=True
        )
        return assignment or slot_claim(rater=rater, dataset=dataset, kind=kind, now=now, read=read)
    kinds = qualified_kinds(rater, dataset=dataset)
    assignment = gold.gold_claim(
        rater=rater, dataset=dataset, kinds=kinds, kind=kind, now=now, expires=now + lease_ttl()
    )
    if assignment is not None:
        return assignment
    return slot_claim(rater=rater, dataset=dataset, kind=kind, now=now)


# --- submit ------------------------------------------------------------------------------


def rating_submit(
    *, rater, dataset: str, slot_id: int, now: datetime | None = None, tried_fast: bool = False, **submission
) -> SubmitResult:
    """Store the rater's rating of the slot or gold lease ``slot_id`` they hold.

    ``submission``: score (a finite number in [0, 5], stored to SCORE_DECIMALS decimals),
    time_on_item_ms (from showing the pair to submitting), time_to_first_move_ms (null if
    the slider never moved; at most the former), adjustments (slider moves) and
    idempotency_key; a bad one raises QueueInputError naming it. A repeat with the same
    key answers the stored rating (``replayed=True``). Refusals (an item not held, taken
    over, paused since the claim, a key used before) raise the queue's errors, alike for
    both kinds of item; NotFound for an id that is neither. ``tried_fast``: the caller ran
    the common case's statement already (``submit_then_claim``), and it stored nothing.
    """
    at = service_now(now)
    rating = submission_values(rater=rater, now=at, **submission)
    if use_postgres_sql() and not tried_fast:
        stored = _submit_fast(rater=rater, dataset=dataset, slot_id=slot_id, rating=rating)
        if stored is not None:
            return stored
    if is_gold_lease(slot_id):
        return gold.gold_submit(rater=rater, dataset=dataset, lease_id=slot_id, rating=rating, now=at)
    return slot_submit(rater=rater, dataset=dataset, slot_id=slot_id, rating=rating, clock_given=now is not None)


def _submit_fast(*, rater, dataset: str, slot_id: int, rating: dict) -> SubmitResult | None:
    """The common case's one statement; None when it stored nothing (nothing written)."""
    values = submit_statements.submit_fast_values(slot_id=slot_id, dataset=dataset, rating=rating)
    # In autocommit the statement is its own transaction; inside a caller's transaction
    # a savepoint keeps a unique violation from spoiling it.
    scope = transaction.atomic() if connection.in_atomic_block else contextlib.nullcontext()
    try:
        with scope, hot_cursor() as cursor:
            execute(cursor, submit_statements.submit_fast(), values)
            row = cursor.fetchone()
    except IntegrityError:
        return None  # a key used before: the stepwise path names it
    if row is None:
        return None
    return stored_of(submit_statements.stored_row(row[0]), rater=rater, slot_id=slot_id, now=rating["now"])


def stored_of(row: tuple, *, rater, slot_id: int, now: datetime) -> SubmitResult:
    """The result of what the common case's statement stored (``submit_statements.stored_row``)."""
    if row[0] == submit_statements.GOLD_STORED:
        return gold.gold_stored(rater=rater, lease_id=slot_id, row=row, now=now)
    return stored_result(row, slot_id=slot_id, now=now)


# --- heartbeat, skip, flag ---------------------------------------------------------------


def heartbeat(*, rater, dataset: str, slot_id: int, now: datetime | None = None) -> datetime:
    """Extend the lease on a held slot or gold lease; see ``slots.slot_heartbeat``."""
    if is_gold_lease(slot_id):
        expires = service_now(now) + lease_ttl()
        return gold.gold_heartbeat(rater=rater, dataset=dataset, lease_id=slot_id, expires=expires)
    return slots.slot_heartbeat(rater=rater, dataset=dataset, slot_id=slot_id, now=now)


def skip(*, rater, dataset: str, slot_id: int, now: datetime | None = None) -> int:
    """Pass on a held slot or gold lease; the pair's id. See ``slots.slot_skip``."""
    if is_gold_lease(slot_id):
        return gold.gold_skip(rater=rater, dataset=dataset, lease_id=slot_id)
    return slots.slot_skip(rater=rater, dataset=dataset, slot_id=slot_id, now=now)


def flag(*, rater, dataset: str, slot_id: int, reason: str, note: str, now: datetime | None = None) -> Flag:
    """Report the pair of a held or rated slot or gold lease; see ``slots.slot_flag``."""
    if is_gold_lease(slot_id):
        return gold.gold_flag(
            rater=rater, dataset=dataset, lease_id=slot_id, reason=reason, note=note, now=service_now(now)
        )
    return slots.slot_flag(rater=rater, dataset=dataset, slot_id=slot_id, reason=reason, note=note, now=now)
