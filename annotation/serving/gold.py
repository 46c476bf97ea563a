"""Gold pairs in the queue: leased, renewed, rated, skipped and flagged through the same
services and URLs as any slot, with the same answers and error texts, so neither the
page nor the API tells them apart. A gold lease's id comes from the slots' sequence and a
gold rating's from the ratings' (``annotation.serving.gold_ids``); a gold rating never touches a
pair, a slot, a rating or a counter of the dataset.

The routing (``annotation.serving.routing``) calls ``gold_claim`` when the queue's claim
statement drew gold's turn (before it on the portable paths), ``gold_stored`` when the
submit statement stored a gold rating, and the other ``gold_*`` actions for an id it
found to be a gold lease.
This module imports the queue's shapes; of the queue's own modules only ``pairs_left``
(the pairs left for a rater, gold owed among them) imports it.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from datetime import datetime

from django.db import IntegrityError, connection, transaction
from django.db.models import Exists, OuterRef, Q, QuerySet

from annotation.core.errors import Conflict, Forbidden, NotFound
from annotation.core.sql import execute, use_postgres_sql
from annotation.models import (
    DEFAULT_GOLD_ONE_IN,
    NAMED_ONLY_KINDS,
    Dataset,
    Flag,
    GoldLease,
    GoldLeaseState,
    GoldPair,
    GoldPurpose,
    GoldRating,
    PairSkip,
    QualitySettings,
    QuizAttempt,
    Rating,
    RatingSlot,
    SlotState,
)
from annotation.serving import gold_sql as serving_sql
from annotation.serving.claim import assignment_from_row
from annotation.serving.gold_ids import ids_reserve
from annotation.serving.pauses import is_paused, pause_if_gold_error_high, paused_error
from annotation.serving.shapes import Assignment, SubmitResult, assignment_of
from annotation.serving.statements import async_commit_prefix
from annotation.serving.submit import key_used_error, speed_floor_seconds


def gold_claim(
    *,
    rater,
    dataset: str,
    kinds: list[str] | None,
    kind: str | None,
    now,
    expires,
    drawn: bool = False,  # pragma: no mutate (the PostgreSQL path's caller passes it; the portable path ignores it)
) -> Assignment | None:
    """The rater's gold lease (renewed), or with probability 1/gold_one_in a new one, or
    None. ``kinds``: the rater's qualified kinds (portable path only). ``drawn``
    (PostgreSQL): the queue's claim drew gold's turn already, so no second draw."""
    if use_postgres_sql():
        values = {
            "dataset": dataset,
            "rater": rater.pk,
            "kind": kind,
            "now": now,
            "expires": expires,
            "slot_table": connection.ops.quote_name(RatingSlot._meta.db_table),
            "slot_pk": RatingSlot._meta.pk.column,
            "drawn": drawn,
        }
        # One statement: outside a transaction it is its own, with no BEGIN and COMMIT
        # around it; a lease need not outlive a crash (as the queue's claim).
        with connection.cursor() as cursor:
            execute(cursor, serving_sql.gold_claim(), values, prefix=async_commit_prefix())
            row = cursor.fetchone()
        return assignment_from_row(row) if row is not None else None
    return _gold_claim_portable(rater=rater, dataset=dataset, kinds=kinds or [], kind=kind, now=now, expires=expires)


def _gold_claim_portable(*, rater, dataset: str, kinds: list[str], kind: str | None, now, expires):
    kinds = [k for k in kinds if k == kind or (kind is None and k not in NAMED_ONLY_KINDS)]
    ds = Dataset.objects.filter(name=dataset).first()
    if ds is None or not kinds or is_paused(rater=rater, dataset_id=ds.pk):
        return None
    with transaction.atomic():
        held = (
            GoldLease.objects.select_for_update(of=("self",))
            .filter(rater=rater, dataset=ds, state=GoldLeaseState.LEASED, kind__in=kinds, gold_pair__active=True)
            .order_by("leased_at")
            .first()
        )
        if held is not None:
            GoldLease.objects.filter(pk=held.pk).update(lease_expires_at=expires)
            return _lease_assignment(held.pk, resumed=True)
        if RatingSlot.objects.filter(rater=rater, dataset=ds, state=SlotState.LEASED, kind__in=kinds).exists():
            return None
        one_in = QualitySettings.objects.filter(dataset=ds).values_list("gold_one_in", flat=True).first()
        one_in = DEFAULT_GOLD_ONE_IN if one_in is None else one_in
        if one_in <= 0 or random.random() * one_in >= 1:
            return None
        if not _ordinary_work_left(rater=rater, dataset_id=ds.pk, kinds=kinds, now=now):
            return None
        eligible = list(gold_unmet(rater=rater, dataset_id=ds.pk, kinds=kinds).values_list("pk", "kind"))
        if not eligible:
            return None
        pair_id, pair_kind = random.choice(eligible)
        (lease_id,) = ids_reserve(RatingSlot, 1)
        try:
            with transaction.atomic():
                GoldLease.objects.create(
                    id=lease_id,
                    gold_pair_id=pair_id,
                    rater=rater,
                    dataset=ds,
                    kind=pair_kind,
                    leased_at=now,
                    lease_expires_at=expires,
                )
        except IntegrityError:  # a concurrent claim of the same rater leased one first
            return None
        return _lease_assignment(lease_id, resumed=False)


def _ordinary_work_left(*, rater, dataset_id: int, kinds: list[str], now) -> bool:
    """The ordinary claim could serve the rater a slot of ``kinds`` now: an open slot, or
    one whose lease expired, of a pair they neither rated, hold nor skipped."""
    mine = RatingSlot.objects.filter(pair_id=OuterRef("pair_id"), rater=rater)
    skipped = PairSkip.objects.filter(pair_id=OuterRef("pair_id"), rater=rater)
    claimable = Q(state=SlotState.OPEN) | Q(state=SlotState.LEASED, lease_expires_at__lt=now)
    return (
        RatingSlot.objects.filter(claimable, dataset_id=dataset_id, kind__in=kinds)
        .filter(~Exists(mine), ~Exists(skipped))
        .exists()
    )


def gold_met_in_quiz(*, rater, dataset_id: int | None = None) -> set[int]:
    """Ids of the gold pairs ``rater`` met in a quiz: asked in any attempt (answered or
    not) or answered, whether or not the pair is in the quiz now."""
    attempts = QuizAttempt.objects.filter(rater=rater)
    answers = GoldRating.objects.filter(rater=rater, purpose=GoldPurpose.QUIZ)
    if dataset_id is not None:
        attempts, answers = attempts.filter(dataset_id=dataset_id), answers.filter(dataset_id=dataset_id)
    met = {int(pk) for order in attempts.values_list("order", flat=True) for pk in order}
    return met | set(answers.values_list("gold_pair_id", flat=True))


def gold_unmet(*, rater, dataset_id: int | None, kinds: list[str]) -> QuerySet[GoldPair]:
    """The gold pairs the queue may still serve ``rater`` (of ``kinds``, in one dataset
    or all): active, not in the quiz, never met in the queue or a quiz, and not made from
    a pair the rater rated, held or skipped. The PostgreSQL statement
    (``serving_sql.gold_claim``) states the same rules."""
    met = GoldLease.objects.filter(gold_pair_id=OuterRef("pk"), rater=rater)
    rated_source = RatingSlot.objects.filter(pair_id=OuterRef("source_pair_id"), rater=rater)
    skipped_source = PairSkip.objects.filter(pair_id=OuterRef("source_pair_id"), rater=rater)
    pairs = GoldPair.objects.filter(active=True, in_quiz=False, kind__in=kinds)
    if dataset_id is not None:
        pairs = pairs.filter(dataset_id=dataset_id)
    return pairs.filter(~Exists(met), ~Exists(rated_source), ~Exists(skipped_source)).exclude(
        # A pair met in another dataset's quiz is not one of these: the dataset is not mutated.
        pk__in=gold_met_in_quiz(rater=rater, dataset_id=dataset_id)  # pragma: no mutate
    )


def _lease_assignment(lease_id: int, *, resumed: bool) -> Assignment:
    lease = GoldLease.objects.select_related(
        "gold_pair__dataset",
        "gold_pair__caption_a",
        "gold_pair__caption_b",
        "gold_pair__image_a",
        "gold_pair__image_b",
    ).get(pk=lease_id)
    return gold_pair_assignment(
        lease.gold_pair, slot_id=lease.pk, lease_expires_at=lease.lease_expires_at, resumed=resumed
    )


def gold_pair_assignment(pair: GoldPair, *, slot_id: int, lease_expires_at: datetime, resumed: bool) -> Assignment:
    """A gold pair as the rating page shows it (its dataset, captions and images joined)."""
    images = [
        (img.key, img.file_path, img.width, img.height) if img is not None else (None, None, None, None)
        for img in (pair.image_a, pair.image_b)
    ]
    return assignment_of(
        slot_id=slot_id,
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


# --- actions on a gold lease ------------------------------------------------------------


def _locked_lease(*, lease_id: int, dataset: str) -> GoldLease:
    """The lease, locked; NotFound (as for a slot) when it is gone or of another dataset."""
    # Only the lease's row: the joined dataset row locked FOR UPDATE would stall every
    # rating stored in the dataset meanwhile (its foreign key check shares that row).
    lease = (
        GoldLease.objects.select_for_update(of=("self",))
        .select_related("dataset", "gold_pair")
        .filter(pk=lease_id)
        .first()
    )
    if lease is None:
        raise NotFound("no such rating slot")
    if lease.dataset.name != dataset:
        raise NotFound(f"this rating slot is not in dataset {dataset!r}")
    return lease


def _not_held(lease: GoldLease, rater) -> Exception:
    """The error a slot in the same position answers (annotation.serving.slots.not_held_error)."""
    slot = "this rating slot"
    if lease.rater_id == rater.pk and lease.state == GoldLeaseState.DONE:
        return Conflict(f"{slot} is already rated by you")
    if lease.rater_id == rater.pk:
        return Forbidden(f"you do not hold {slot}; claim a pair first")
    return Forbidden(f"you do not hold {slot}: it belongs to another rater")


def gold_stored(*, rater, lease_id: int, row: tuple, now: datetime) -> SubmitResult:
    """The result of a gold rating the submit statement stored (``submit_statements.stored_row``'s
    gold row), after the automatic pause where the dataset has it on."""
    _, rating_id, gold_pair_id, dataset_id, auto_pause = row
    if auto_pause:
        with transaction.atomic():
            pause_if_gold_error_high(rater_id=rater.pk, dataset_id=dataset_id, now=now)
    return SubmitResult(rating_id=rating_id, pair_id=gold_pair_id, slot_id=lease_id, created_at=now, replayed=False)


def gold_submit(*, rater, dataset: str, lease_id: int, rating: Mapping, now: datetime) -> SubmitResult:
    """Store the rater's score on a gold lease they hold, step by step, saying why not:
    NotFound for a lease of another dataset, RaterPaused, the queue's answers otherwise.
    ``rating``: the values as ``rating_submit`` names them (score, time_on_item_ms,
    time_to_first_move_ms, adjustments, key)."""
    try:
        with transaction.atomic():
            lease = _locked_lease(lease_id=lease_id, dataset=dataset)
            if lease.rater_id != rater.pk or lease.state != GoldLeaseState.LEASED:
                replay = _replayed(lease, rater, rating["key"])
                if replay is not None:
                    return replay
                raise _not_held(lease, rater)
            # As the queue's: a pause may have come between claim and submit, and a repeat
            # was answered before it (a paused rater re-sending old submissions must not
            # learn which of them were gold from the answers).
            if is_paused(rater=rater, dataset_id=lease.dataset_id):
                raise paused_error(username=rater.get_username(), dataset=dataset)
            # One key space per rater across gold and ordinary ratings, answered alike.
            if Rating.objects.filter(rater=rater, idempotency_key=rating["key"]).exists():
                raise key_used_error(rating["key"])
            (rating_id,) = ids_reserve(Rating, 1)
            gold = lease.gold_pair
            GoldRating.objects.create(
                id=rating_id,
                gold_pair=gold,
                lease=lease,
                rater=rater,
                dataset_id=lease.dataset_id,
                purpose=GoldPurpose.QUEUE,  # pragma: no mutate (the default: a mutant dropping it is the same)
                score=rating["score"],
                gold_score=gold.gold_score,
                time_on_item_ms=rating["time_on_item_ms"],
                time_to_first_move_ms=rating["time_to_first_move_ms"],
                adjustments=rating["adjustments"],
                idempotency_key=rating["key"],
                below_speed_floor=rating["time_on_item_ms"] < 1000 * speed_floor_seconds(lease.dataset_id, gold.kind),
                created_at=now,
            )
            GoldLease.objects.filter(pk=lease.pk).update(state=GoldLeaseState.DONE)
            pause_if_gold_error_high(rater_id=rater.pk, dataset_id=lease.dataset_id, now=now)
    except IntegrityError:
        raise key_used_error(rating["key"]) from None
    return SubmitResult(rating_id=rating_id, pair_id=gold.pk, slot_id=lease_id, created_at=now, replayed=False)


def _replayed(lease: GoldLease, rater, key: str) -> SubmitResult | None:
    if lease.rater_id != rater.pk or lease.state != GoldLeaseState.DONE:
        return None
    stored = GoldRating.objects.filter(lease=lease).values("id", "idempotency_key", "created_at").first()
    if stored is None or stored["idempotency_key"] != key:
        return None
    return SubmitResult(
        rating_id=stored["id"],
        pair_id=lease.gold_pair_id,
        slot_id=lease.pk,
        created_at=stored["created_at"],
        replayed=True,
    )


def gold_heartbeat(*, rater, dataset: str, lease_id: int, expires: datetime) -> datetime:
    with transaction.atomic():
        lease = _locked_lease(lease_id=lease_id, dataset=dataset)
        if lease.rater_id != rater.pk or lease.state != GoldLeaseState.LEASED:
            raise _not_held(lease, rater)
        GoldLease.objects.filter(pk=lease.pk).update(lease_expires_at=expires)
    return expires


def gold_skip(*, rater, dataset: str, lease_id: int) -> int:
    """Skip a held gold lease (never served again); returns the gold pair id."""
    with transaction.atomic():
        lease = _locked_lease(lease_id=lease_id, dataset=dataset)
        if lease.rater_id == rater.pk and lease.state == GoldLeaseState.SKIPPED:
            return lease.gold_pair_id
        if lease.rater_id != rater.pk or lease.state != GoldLeaseState.LEASED:
            raise _not_held(lease, rater)
        GoldLease.objects.filter(pk=lease.pk).update(state=GoldLeaseState.SKIPPED)
    return lease.gold_pair_id


def gold_flag(*, rater, dataset: str, lease_id: int, reason: str, note: str, now: datetime) -> Flag:
    """Record a flag on a gold lease the rater holds or rated; a held one is skipped. The
    answer looks like a slot's flag (an id from the flags' sequence, once)."""
    with transaction.atomic():
        lease = _locked_lease(lease_id=lease_id, dataset=dataset)
        if lease.rater_id != rater.pk:
            raise _not_held(lease, rater)
        if lease.flag_id is None:
            (lease.flag_id,) = ids_reserve(Flag, 1)
            lease.flag_reason, lease.flag_note = reason, note.strip()
        if lease.state == GoldLeaseState.LEASED:
            lease.state = GoldLeaseState.SKIPPED
        # The lease was read whole and is locked: saving every field would store the same.
        lease.save(update_fields=["flag_id", "flag_reason", "flag_note", "state"])  # pragma: no mutate
    return Flag(
        id=lease.flag_id,
        pair_id=lease.gold_pair_id,
        rater=rater,
        reason=lease.flag_reason,
        note=lease.flag_note,
        created_at=now,
    )
