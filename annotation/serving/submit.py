"""Submitting a slot's rating: the checks of a submission, the lock-then-write path that
also explains refusals (a pause since the claim among them), replays of a repeated
submission, and the conflicts a unique rule names. The common case's one statement, for
a slot or a gold lease, is the routing's (``annotation.serving.routing``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime

from django.db import IntegrityError, connection, transaction
from django.db.models import F

from annotation.core.cxc import SCORE_MAX, SCORE_MIN
from annotation.core.errors import Conflict, DomainError
from annotation.core.sql import execute, use_postgres_sql
from annotation.models import (
    DEFAULT_SPEED_FLOORS,
    GoldRating,
    Pair,
    QueueCounter,
    Rating,
    RatingSlot,
    SlotState,
    SpeedFloor,
)
from annotation.serving import submit_statements
from annotation.serving.pauses import is_paused, paused_error
from annotation.serving.shapes import (
    MAX_ADJUSTMENTS,
    MAX_IDEMPOTENCY_KEY,
    MAX_TIME_ON_ITEM_MS,
    SCORE_DECIMALS,
    QueueInputError,
    SubmitResult,
    service_now,
)
from annotation.serving.slots import SlotView, holds, lock_slot, not_held_error


def submission_values(
    *,
    rater,
    score: float,
    time_on_item_ms: int,
    time_to_first_move_ms: int | None,
    adjustments: int,
    idempotency_key: str,
    now: datetime,
) -> dict:
    """A checked submission as the submit statements (and gold serving) name its values:
    rater, score (rounded), time_on_item_ms, time_to_first_move_ms, adjustments, key, now.
    Raises QueueInputError naming the first bad value."""
    _check_submission(
        score=score,
        time_on_item_ms=time_on_item_ms,
        time_to_first_move_ms=time_to_first_move_ms,
        adjustments=adjustments,
        idempotency_key=idempotency_key,
    )
    return {
        "rater": rater.pk,
        "score": round(float(score), SCORE_DECIMALS),
        "time_on_item_ms": time_on_item_ms,
        "time_to_first_move_ms": time_to_first_move_ms,
        "adjustments": adjustments,
        "key": idempotency_key,
        "now": now,
    }


def slot_submit(*, rater, dataset: str, slot_id: int, rating: Mapping, clock_given: bool) -> SubmitResult:
    """Store the rater's rating on a slot they hold and mark the slot done, step by step
    (the routing, ``annotation.serving.routing``, tried the common case's statement
    first on PostgreSQL), saying why not.

    ``rating``: the checked values (``submission_values``). A repeat with the same
    idempotency key returns the stored rating (``replayed=True``) and stores nothing. A
    lease that expired is still accepted while the slot is free; once another rater has
    taken it the submission is refused with Conflict. A rater paused in the dataset since
    the claim is refused with RaterPaused, nothing stored. NotFound for an id that is no
    slot of the dataset. ``clock_given``: the caller chose the time (else SQLite stamps
    the rating with the clock read once the write lock is held).
    """
    try:
        return _submit_stepwise(
            rater=rater, dataset=dataset, slot_id=slot_id, rating=rating, clock_when_locked=not clock_given
        )
    except IntegrityError:
        raise _submit_conflict(rater=rater, slot_id=slot_id, idempotency_key=rating["key"]) from None


def stored_result(row: tuple, *, slot_id: int, now: datetime) -> SubmitResult:
    """The result of a rating the common case stored, from its row (rating id, pair id,
    adaptive pair filled, kind)."""
    rating_id, pair_id, adaptive_full, kind = row
    return SubmitResult(
        rating_id=rating_id,
        pair_id=pair_id,
        slot_id=slot_id,
        created_at=now,
        replayed=False,
        adaptive_full=adaptive_full,
        held_kind=kind,
    )


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


def _submit_stepwise(*, rater, dataset: str, slot_id: int, rating: Mapping, clock_when_locked: bool) -> SubmitResult:
    """Lock the pair then the slot, and store the rating if the rater holds the slot;
    else return the replay of their earlier submission or raise why they may not.
    ``rating``: the rating's values as the submit statements name them (rater, score,
    time_on_item_ms, time_to_first_move_ms, adjustments, key, now). ``clock_when_locked``:
    on SQLite, stamp the rating with the clock read once the write lock is held (no
    caller gave a time)."""
    with transaction.atomic():
        view = lock_slot(slot_id=slot_id, dataset=dataset, lock_pair=True)
        if not holds(view, rater.pk):
            replay = _replayed(view, rater, rating["key"])
            if replay is not None:
                return replay
            raise not_held_error(view, rater.pk)
        # The fast statement stores nothing for a paused rater: the pause may have come
        # between claim and submit (an admin, the gold rule, an exclusion).
        if is_paused(rater=rater, dataset_id=view.dataset_id):
            raise paused_error(username=rater.get_username(), dataset=dataset)
        # The rater's keys are one space across ordinary and gold ratings (the fast
        # statement stores nothing for a key of a gold rating): a key answers alike
        # whichever kind of pair it was used on.
        if GoldRating.objects.filter(rater=rater, idempotency_key=rating["key"]).exists():
            raise key_used_error(rating["key"])
        done = view.ratings_done + 1
        params = {
            **rating,
            "slot": slot_id,
            "pair": view.pair_id,
            "dataset": view.dataset_id,
            "kind": view.kind,
            "done": done,
            "complete": done >= view.ratings_required,
        }
        if use_postgres_sql():
            with connection.cursor() as cursor:
                execute(cursor, submit_statements.submit(), params)
                rating_id = cursor.fetchone()[0]
        else:
            if clock_when_locked:
                # SQLite: this transaction holds the write lock since BEGIN IMMEDIATE, however
                # long it waited for it; the clock read now orders the rating after every
                # exclusion already made, so no exclusion's run can miss it.
                params["now"] = service_now(None)
            rating_id = _submit_portable(params)
        # Rare here (the fast statement takes nearly every submission), so asked apart.
        adaptive_full = params["complete"] and _below_its_maximum(view.pair_id)
    return SubmitResult(
        rating_id=rating_id,
        pair_id=view.pair_id,
        slot_id=slot_id,
        created_at=params["now"],
        replayed=False,
        adaptive_full=adaptive_full,
    )


def _below_its_maximum(pair_id: int) -> bool:
    """An adaptive pair that may still get a slot."""
    return Pair.objects.filter(pk=pair_id, ratings_max__gt=F("ratings_required")).exists()


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
        below_speed_floor=params["time_on_item_ms"] < 1000 * speed_floor_seconds(params["dataset"], params["kind"]),
    )
    # created_at is auto_now_add; the service clock decides it, as on PostgreSQL.
    Rating.objects.filter(pk=rating.pk).update(created_at=params["now"])
    Pair.objects.filter(pk=pair_id).update(ratings_done=params["done"])
    siblings = RatingSlot.objects.filter(pair_id=pair_id).exclude(pk=slot_id)
    if not params["complete"]:
        siblings = siblings.filter(state=SlotState.OPEN)  # as the statements: see RatingSlot.pair_done
    siblings.update(**progress)
    if params["complete"]:
        QueueCounter.objects.filter(dataset_id=params["dataset"], kind=params["kind"]).update(
            pairs_open=F("pairs_open") - 1
        )
    return rating.pk


def speed_floor_seconds(dataset_id: int, kind: str) -> float:
    """The kind's speed floor in a dataset: its own setting, else the default."""
    own = SpeedFloor.objects.filter(dataset_id=dataset_id, kind=kind).values_list("seconds", flat=True).first()
    return float(own) if own is not None else float(DEFAULT_SPEED_FLOORS[kind])


def _replayed(view: SlotView, rater, idempotency_key: str) -> SubmitResult | None:
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
    if (used is not None and used != slot_id) or GoldRating.objects.filter(
        rater=rater, idempotency_key=idempotency_key
    ).exists():
        return key_used_error(idempotency_key)
    return Conflict("you already hold or rated another slot of this pair")


def key_used_error(idempotency_key: str) -> Conflict:
    """The answer to a key the rater already used on another item, ordinary or gold (gold
    serving answers with it too, so the text never tells which)."""
    return Conflict(
        f"idempotency key {idempotency_key!r} was already used for another rating slot; use a new key for each item"
    )
