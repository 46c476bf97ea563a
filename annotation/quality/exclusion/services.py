"""Excluding a rater's ratings in a dataset, with top-up to N, and undoing it.

An exclusion is recorded first (state ``applying``) and applied by a Celery task queued
on commit, chunk by chunk (``annotation.quality.exclusion.chunks``); undo likewise (``undoing``).
Each chunk only touches ratings not yet handled, so a run that stopped half way is
continued by running it again: ``exclusions_resume`` (beat) queues every exclusion still
applying or undoing, and two runs of one exclusion at once only share the work.
"""

from __future__ import annotations

from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import F

from annotation.core.errors import Conflict, DomainError, NotFound
from annotation.core.task_queue import task_queue
from annotation.models import (
    Dataset,
    ExclusionPause,
    ExclusionState,
    RaterPause,
    Rating,
    RatingExclusion,
    RatingStatus,
)
from annotation.quality.exclusion.chunks import (
    ChunkResult,
    exclude_chunk,
    last_rating_id,
    rating_scope,
    restore_chunk,
    wait_for_submissions_in_flight,
)
from annotation.quality.exclusion.selectors import ExclusionReach, exclusion_reach
from annotation.quality.pauses import pause_refusal, rater_pause_lift, rater_pause_unless_paused
from annotation.serving.shapes import service_now

# Pairs per transaction: long enough to be fast, short enough that a submission on one
# of the pairs waits only milliseconds for the chunk's pair locks.
CHUNK_PAIRS = 500
MAX_REASON = 2000
# The task that applies or undoes an exclusion (annotation.quality.tasks), queued by name.
RUN_RATING_EXCLUSION = "annotation.tasks.run_rating_exclusion"
# A pass that finds pairs and changes none of them happens when a second run of the same
# exclusion handled them first (the next pass then finds none); passes like that in a row
# mean a chunk that cannot do its work, which would otherwise loop for ever.
IDLE_PASSES_BEFORE_STALLED = 3


class ExclusionInputError(DomainError):
    code = "exclusion_invalid"


class ExclusionStalled(RuntimeError):
    """An exclusion's run stopped making progress (a defect, not a user's error)."""


def rating_exclusion_create(
    *,
    dataset: Dataset,
    rater,
    reason: str,
    created_by,
    window_start: datetime | None = None,
    window_end: datetime | None = None,
    keep_active: bool = False,
    now: datetime | None = None,
) -> RatingExclusion:
    """Record the exclusion of ``rater``'s ratings in ``dataset`` (all ratings given before
    now, or those created in [window_start, window_end)) and queue its application.
    Unless ``keep_active``, the rater is paused in the dataset in the same transaction
    (an excluded rater who went on claiming would give ratings nobody trusts); the
    exclusion's ``pause`` says what happened. Raises ExclusionInputError, with nothing
    written, for an empty or too long reason, a window that is empty or reaches into the
    future, no valid rating in scope or an admin to pause; Conflict naming the exclusion
    of the same rater, dataset and window that is not undone (also when it is made at
    the same moment by another request)."""
    now = service_now(now)
    with transaction.atomic():
        exclusion = rating_exclusion_check(
            dataset=dataset,
            rater=rater,
            reason=reason,
            window_start=window_start,
            window_end=window_end,
            keep_active=keep_active,
            now=now,
            ratings_through=last_rating_id(),
        )
        exclusion.created_by = created_by
        exclusion.pause = ExclusionPause.KEPT_ACTIVE if keep_active else ExclusionPause.PAUSED
        try:
            with transaction.atomic():
                exclusion.save()
        except IntegrityError:  # exclusion_one_per_window: a twin committed meanwhile
            raise _twin_conflict(exclusion) from None
        if not keep_active:
            _, paused_now = rater_pause_unless_paused(
                rater=rater,
                dataset=dataset,
                reason=f"excluded (exclusion #{exclusion.pk}): {exclusion.reason}",
                created_by=created_by,
                now=now,
            )
            if not paused_now:
                exclusion.pause = ExclusionPause.ALREADY_PAUSED
                exclusion.save(update_fields=["pause"])
        transaction.on_commit(lambda: task_queue(RUN_RATING_EXCLUSION, exclusion.id))
    return exclusion


def rating_exclusion_check(
    *,
    dataset: Dataset,
    rater,
    reason: str,
    window_start: datetime | None,
    window_end: datetime | None,
    now: datetime,
    keep_active: bool = False,
    ratings_through: int | None = None,
) -> RatingExclusion:
    """The unsaved exclusion these values make, or ExclusionInputError (Conflict for a
    twin) naming what is wrong with them (forms call this to show the error beside the
    fields). ``ratings_through``: the last rating id it covers (None: every one so far)."""
    reason = (reason or "").strip()
    if not reason:
        raise ExclusionInputError("an exclusion needs a reason (it is kept with the excluded ratings)")
    if len(reason) > MAX_REASON:
        raise ExclusionInputError(f"reason must be at most {MAX_REASON} characters")
    for name, value in (("window_start", window_start), ("window_end", window_end)):
        if value is not None and value > now:
            raise ExclusionInputError(f"{name} {value.isoformat()} is in the future")
    if window_start is not None and window_end is not None and window_start >= window_end:
        raise ExclusionInputError("window_start must be before window_end")
    if not keep_active and (refusal := pause_refusal(rater)):
        raise ExclusionInputError(f"{refusal}; exclude with keep_active to leave them unpaused")
    exclusion = RatingExclusion(
        dataset=dataset,
        rater=rater,
        reason=reason,
        window_start=window_start,
        window_end=window_end,
        created_at=now,
        ratings_through=ratings_through,
    )
    if twin := _twin(exclusion):
        raise _twin_conflict(exclusion, twin)
    if not Rating.objects.filter(rating_scope(exclusion), status=RatingStatus.VALID).exists():
        window = "" if window_start is None and window_end is None else " in that time window"
        raise ExclusionInputError(f"{rater.get_username()} has no valid ratings in {dataset.name}{window}")
    return exclusion


def _twin(exclusion: RatingExclusion) -> RatingExclusion | None:
    """The exclusion not undone of the same rater, dataset and window."""
    return (
        RatingExclusion.objects.filter(
            rater_id=exclusion.rater_id,
            dataset_id=exclusion.dataset_id,
            window_start=exclusion.window_start,
            window_end=exclusion.window_end,
        )
        .exclude(state=ExclusionState.UNDONE)
        .first()
    )


def _twin_conflict(exclusion: RatingExclusion, twin: RatingExclusion | None = None) -> Conflict:
    twin = twin or _twin(exclusion)
    name = exclusion.rater.get_username()
    window = (
        "all ratings"
        if exclusion.window_start is None and exclusion.window_end is None
        else f"ratings from {_when(exclusion.window_start, 'the first')} to {_when(exclusion.window_end, 'now')}"
    )
    which = f"exclusion #{twin.pk} ({twin.state})" if twin is not None else "another exclusion"
    return Conflict(
        f"{name}'s {window} in {exclusion.dataset.name} are already excluded by {which}; "
        "undo it first, or give a window that starts after it"
    )


def _when(value: datetime | None, default: str) -> str:
    return default if value is None else value.isoformat()


def rating_exclusion_undo(
    *, exclusion_id: int, undone_by, reason: str = "", lift_pause: bool = False, now: datetime | None = None
) -> RatingExclusion:
    """Mark an applied exclusion for undoing and queue it. The rater's pause in the
    dataset (the exclusion's own, or one from before) stays unless ``lift_pause``, which
    lifts it in the same transaction. Raises NotFound or Conflict (still applying,
    already undone or undoing)."""
    now = service_now(now)
    with transaction.atomic():
        exclusion = RatingExclusion.objects.select_for_update().filter(pk=exclusion_id).first()
        if exclusion is None:
            raise NotFound(f"no exclusion #{exclusion_id}")
        if exclusion.state != ExclusionState.APPLIED:
            raise Conflict(f"exclusion #{exclusion_id} is {exclusion.state}; only an applied exclusion can be undone")
        RatingExclusion.objects.filter(pk=exclusion_id).update(
            state=ExclusionState.UNDOING, undone_by=undone_by, undone_at=now, undo_reason=(reason or "").strip()
        )
        if lift_pause:
            _lift_rater_pause(exclusion, lifted_by=undone_by, now=now)
        transaction.on_commit(lambda: task_queue(RUN_RATING_EXCLUSION, exclusion_id))
    exclusion.refresh_from_db()
    return exclusion


def _lift_rater_pause(exclusion: RatingExclusion, *, lifted_by, now: datetime) -> None:
    active = RaterPause.objects.filter(rater_id=exclusion.rater_id, dataset_id=exclusion.dataset_id)
    pause = active.filter(lifted_at__isnull=True).first()
    if pause is not None:
        note = f"lifted with the undo of exclusion #{exclusion.pk}"
        rater_pause_lift(pause_id=pause.pk, lifted_by=lifted_by, note=note, now=now)


def rating_exclusion_run(*, exclusion_id: int) -> RatingExclusion | None:
    """Apply or undo an exclusion to the end, chunk by chunk (whichever its state asks);
    an exclusion already applied or undone is left as it is. Returns it (None if gone)."""
    exclusion = RatingExclusion.objects.filter(pk=exclusion_id).first()
    if exclusion is None:
        return None
    if exclusion.state == ExclusionState.APPLYING:
        _run_chunks(exclusion, _pairs_to_exclude, exclude_chunk)
        # Ratings the exclusion covers whose submissions were still writing, in pairs no
        # chunk locked, are committed after this wait; the next passes exclude them.
        wait_for_submissions_in_flight(exclusion)
        _run_chunks(exclusion, _pairs_to_exclude, exclude_chunk)
        _finish(exclusion, ExclusionState.APPLYING, ExclusionState.APPLIED, applied_at=service_now(None))
    elif exclusion.state == ExclusionState.UNDOING:
        _run_chunks(exclusion, _pairs_to_restore, restore_chunk)
        _finish(exclusion, ExclusionState.UNDOING, ExclusionState.UNDONE)
    exclusion.refresh_from_db()
    return exclusion


def exclusions_resume() -> list[int]:
    """Queue every exclusion still applying or undoing (beat; a run that died is
    continued, a live one only shares its work). Returns their ids."""
    ids = list(
        RatingExclusion.objects.filter(state__in=[ExclusionState.APPLYING, ExclusionState.UNDOING]).values_list(
            "id", flat=True
        )
    )
    for exclusion_id in ids:
        task_queue(RUN_RATING_EXCLUSION, exclusion_id)
    return ids


def _pairs_to_exclude(exclusion: RatingExclusion, after: int) -> list[int]:
    return list(
        Rating.objects.filter(rating_scope(exclusion), status=RatingStatus.VALID, pair_id__gt=after)
        .order_by("pair_id")
        .values_list("pair_id", flat=True)[:CHUNK_PAIRS]
    )


def _pairs_to_restore(exclusion: RatingExclusion, after: int) -> list[int]:
    return list(
        Rating.objects.filter(exclusion=exclusion, status=RatingStatus.EXCLUDED, pair_id__gt=after)
        .order_by("pair_id")
        .values_list("pair_id", flat=True)[:CHUNK_PAIRS]
    )


def _run_chunks(exclusion: RatingExclusion, next_pairs, write_chunk) -> None:
    """Pass over the pairs in id order until a pass finds nothing more to do. A chunk sees
    every rating up to the exclusion's ``ratings_through`` (RatingExclusion); a second
    pass finds what one without it (made before it was kept) missed: a submission whose
    clock read a time before the exclusion, committed while a chunk waited for its pair.
    A run that cannot progress raises ExclusionStalled instead of holding a worker for
    ever; the exclusion stays applying or undoing, for the next resume."""
    idle_passes = 0
    while True:
        after, chunks, changed = 0, 0, 0
        while pair_ids := next_pairs(exclusion, after):
            if pair_ids[0] <= after:
                raise ExclusionStalled(f"exclusion #{exclusion.pk}: the pairs after {after} began at {pair_ids[0]}")
            with transaction.atomic():
                result: ChunkResult = write_chunk(exclusion=exclusion, pair_ids=pair_ids)
                RatingExclusion.objects.filter(pk=exclusion.pk).update(
                    ratings_excluded=F("ratings_excluded") + result.excluded,
                    slots_reopened=F("slots_reopened") + result.reopened,
                    ratings_restored=F("ratings_restored") + result.restored,
                    ratings_superseded=F("ratings_superseded") + result.superseded,
                )
            after, chunks = pair_ids[-1], chunks + 1
            changed += result.excluded + result.restored + result.superseded
        if chunks == 0:
            return
        idle_passes = 0 if changed else idle_passes + 1
        if idle_passes == IDLE_PASSES_BEFORE_STALLED:
            raise ExclusionStalled(
                f"exclusion #{exclusion.pk}: {idle_passes} passes in a row found pairs to handle and changed none"
            )


def _finish(exclusion: RatingExclusion, from_state: str, to_state: str, **fields) -> None:
    RatingExclusion.objects.filter(pk=exclusion.pk, state=from_state).update(state=to_state, **fields)


def rating_exclusion_preview(
    *, dataset: Dataset, rater, reason: str, keep_active: bool = False, now: datetime | None = None
) -> tuple[RatingExclusion, ExclusionReach]:
    """What excluding all of ``rater``'s ratings in ``dataset`` now would do, before an
    admin confirms it: the unsaved exclusion (``rating_exclusion_check``'s errors
    propagate: no valid rating, a twin, an admin to pause) and the ratings and pairs it
    would hit. Writes nothing."""
    exclusion = rating_exclusion_check(
        dataset=dataset,
        rater=rater,
        reason=reason,
        window_start=None,
        window_end=None,
        keep_active=keep_active,
        now=service_now(now),
    )
    return exclusion, exclusion_reach(exclusion)
