"""Writes for sampling batches: create (every input checked first), start, and change
their priority. Running a batch is ``sampling.runs.batch``'s."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from annotation.catalog.upload_cleanup import run_check_uploads_present
from annotation.catalog.uploads import upload_discard, upload_paths
from annotation.core.errors import DomainError, NotFound
from annotation.core.inputs import BIGINT_MAX
from annotation.core.task_queue import task_queue_on_commit
from annotation.models import EmbeddingSpace, JobStatus, Pair, UploadState
from annotation.serving.pairs import pairs_set_priority
from sampling.audit import audit_check
from sampling.errors import BatchConflict, PairListError, SamplingInputError
from sampling.methods import strategies
from sampling.methods.model_topk import MODEL_TOPK
from sampling.methods.pairlist import MERGE_REPEATS, REPEATS
from sampling.models import SamplingBatch
from sampling.runs.batch import dataset_writes_lock, sampling_batches_fail_orphaned
from sampling.runs.upload import upload_check
from sampling.selectors import (
    SplitSummary,
    space_check_covers,
    split_get,
    split_items,
    split_summary,
)

logger = logging.getLogger(__name__)

# Batch priorities: plenty of levels, far inside the column's 32 bits.
PRIORITY_LIMIT = 1_000_000
# Pairs whose priority changes in one transaction.
PRIORITY_CHUNK = 2_000


# --- create ----------------------------------------------------------------------------


@transaction.atomic
def sampling_batch_create(
    *,
    dataset_name: str,
    split_name: str,
    methods: Mapping[str, int | None],
    k: int = 5,
    spaces: Sequence[str] = (),
    ratings_per_pair: int = 5,
    adaptive: AdaptiveN | None = None,
    seed: int = 0,
    priority: int = 0,
    cocaption: str = strategies.COCAPTION_CYCLE,
    audit: Mapping | None = None,
    created_by=None,
    start: bool = False,
) -> SamplingBatch:
    """Check a sampling configuration against the split and store it as a pending batch
    (with ``start``, queued to run once the transaction commits). ``cocaption``: which
    co-caption pairs c2c_cocaption draws from (strategies.COCAPTION_MODES). ``adaptive``:
    adaptive N, ``ratings_per_pair`` then the minimum (``AdaptiveN``); None: exactly
    ``ratings_per_pair`` ratings a pair, as CxC.

    methods: method name -> budget (None: every pair the method gives). spaces: embedding
    space names; empty means every space of the modality a chosen method searches.
    Raises SamplingInputError (nothing stored) for: unknown methods, budgets below 1 or
    above what the split can give, k < 1 or k >= the number of images, spaces that are
    unknown, of a modality no chosen method uses, or without a vector for every item of
    the split, a kNN method without a space, c2i_intrasim without fully rated pivots,
    model_topk without a valid ``audit`` (see ``sampling.audit.audit_check``) or an
    ``audit`` without model_topk.
    """
    split = split_get(dataset_name=dataset_name, split_name=split_name)
    _check_settings(k=k, ratings_per_pair=ratings_per_pair, seed=seed)
    _check_adaptive(adaptive, minimum=ratings_per_pair)
    _check_priority(priority)
    methods = _check_methods(methods)
    if cocaption not in strategies.COCAPTION_MODES:
        modes = " or ".join(strategies.COCAPTION_MODES)
        raise SamplingInputError(f"c2c_cocaption pairs are {modes}; got {cocaption!r}")
    summary = split_summary(split=split)
    if summary.images == 0:
        raise SamplingInputError(f"split {split} has no images")
    knn_methods = [method for method in methods if method in strategies.SPACE_MODALITY]
    if knn_methods and k >= summary.images:
        raise SamplingInputError(
            f"k={k} but split {split} has only {summary.images} images, so at most {summary.images - 1} neighbours"
        )
    if (MODEL_TOPK in methods) != bool(audit):
        raise SamplingInputError(
            f"{MODEL_TOPK} needs an audit configuration" if MODEL_TOPK in methods else f"an audit needs {MODEL_TOPK}"
        )
    checked_audit = audit_check(split=split, audit=audit, k=k, budget=methods[MODEL_TOPK]) if audit else {}
    chosen = _choose_spaces(split, summary, methods, spaces)
    items = split_items(split=split) if chosen else None
    for space in chosen:
        keys = items.image_keys if space.modality == "image" else items.caption_keys
        space_check_covers(space=space, keys=keys)
    _check_budgets(summary, methods, k=k, spaces=chosen, cocaption=cocaption)
    batch = SamplingBatch.objects.create(
        dataset=split.dataset,
        split=split,
        source=SamplingBatch.Source.SAMPLED,
        methods=methods,
        k=k,
        spaces=[space.name for space in chosen],
        ratings_per_pair=ratings_per_pair,
        **_adaptive_fields(adaptive),
        seed=seed,
        priority=priority,
        cocaption_pairs=cocaption,
        audit=checked_audit,
        created_by=created_by,
    )
    return sampling_batch_start(batch=batch) if start else batch


def sampling_batch_create_from_upload(
    *,
    dataset_name: str,
    split_name: str,
    path: str | Path,
    ratings_per_pair: int = 5,
    adaptive: AdaptiveN | None = None,
    priority: int = 0,
    repeats: str = MERGE_REPEATS,
    created_by=None,
    start: bool = False,
) -> SamplingBatch:
    """Store a pending batch that queues the pairs of a stored pair list (see
    ``annotation.catalog.uploads``), with ``start`` queued to run once the transaction commits.

    Every line is checked now, the file read as a stream (columns, methods, ids known in
    the split: ``sampling.runs.upload``); pairs already
    queued in the dataset are skipped when the batch runs, and a pair the list names
    twice is queued once (``repeats="merge"``) or refused (``"refuse"``). Raises
    PairListError; a refused list is removed from the upload folder.
    """
    try:
        with transaction.atomic():
            return _create_from_upload(
                dataset_name=dataset_name,
                split_name=split_name,
                path=path,
                ratings_per_pair=ratings_per_pair,
                adaptive=adaptive,
                priority=priority,
                repeats=repeats,
                created_by=created_by,
                start=start,
            )
    except DomainError:
        upload_discard(path)
        raise


def _create_from_upload(
    *, dataset_name, split_name, path, ratings_per_pair, adaptive, priority, repeats, created_by, start
):
    if repeats not in REPEATS:
        raise PairListError(f"repeats must be one of {', '.join(REPEATS)}; got {repeats!r}")
    split = split_get(dataset_name=dataset_name, split_name=split_name)
    _check_settings(k=1, ratings_per_pair=ratings_per_pair, seed=0)
    _check_adaptive(adaptive, minimum=ratings_per_pair)
    _check_priority(priority)
    counts = upload_check(split, path, repeats=repeats).counts
    batch = SamplingBatch(
        dataset=split.dataset,
        split=split,
        source=SamplingBatch.Source.UPLOADED,
        methods=counts,
        ratings_per_pair=ratings_per_pair,
        **_adaptive_fields(adaptive),
        priority=priority,
        upload_path=str(path),
        upload_repeats=repeats,
        created_by=created_by,
    )
    # A stored upload goes when the batch ends (annotation.catalog.upload_cleanup); a file a
    # caller named in place is left alone.
    batch.upload_state = UploadState.STORED if upload_paths(batch) else UploadState.NONE
    batch.save()
    return sampling_batch_start(batch=batch) if start else batch


@dataclass(frozen=True)
class AdaptiveN:
    """Adaptive N: a pair starts with the batch's ratings_per_pair slots (the minimum) and
    gets one more at a time, up to ``maximum``, while its next rating is worth it against
    the precision target ``half_width`` (half a 95% interval; annotation.rating.adaptive),
    or, given ``budget`` instead (ratings for all the batch's pairs), against the target
    that meets it (``annotation.quality.adaptive_plans``)."""

    maximum: int
    half_width: float | None = None
    budget: int | None = None


# A batch with a budget holds this target until its pairs are queued, when the target
# that meets the budget replaces it (no pair can be rated before).
PROVISIONAL_HALF_WIDTH = 1.0


def _check_adaptive(adaptive: AdaptiveN | None, *, minimum: int) -> None:
    if adaptive is None:
        return
    maximum, half_width, budget = adaptive.maximum, adaptive.half_width, adaptive.budget
    if isinstance(maximum, bool) or not isinstance(maximum, int) or not minimum < maximum <= 100:
        raise SamplingInputError(
            f"adaptive N: the maximum must be a whole number above ratings_per_pair ({minimum}) and at most 100; "
            f"got {maximum!r}"
        )
    if (half_width is None) == (budget is None):
        raise SamplingInputError("adaptive N needs either a precision target (half-width) or a budget, not both")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
        raise SamplingInputError(f"adaptive N: the budget must be a whole number of ratings, 1 or more; got {budget!r}")
    if half_width is not None and (
        isinstance(half_width, bool) or not isinstance(half_width, int | float) or not 0 < half_width <= 5
    ):
        raise SamplingInputError(
            f"adaptive N: the interval half-width must be above 0 and at most 5 (the scale); got {half_width!r}"
        )


def _adaptive_fields(adaptive: AdaptiveN | None) -> dict:
    if adaptive is None:
        return {"ratings_max": None, "adaptive_half_width": None, "adaptive_budget": None}
    half_width = PROVISIONAL_HALF_WIDTH if adaptive.half_width is None else float(adaptive.half_width)
    return {"ratings_max": adaptive.maximum, "adaptive_half_width": half_width, "adaptive_budget": adaptive.budget}


def _check_priority(priority: int) -> None:
    if isinstance(priority, bool) or not isinstance(priority, int) or abs(priority) > PRIORITY_LIMIT:
        raise SamplingInputError(
            f"priority must be a whole number from -{PRIORITY_LIMIT:,} to {PRIORITY_LIMIT:,}; got {priority!r}"
        )


def _check_settings(*, k: int, ratings_per_pair: int, seed: int) -> None:
    if not isinstance(k, int) or k < 1:
        raise SamplingInputError(f"k must be a whole number of neighbours, at least 1; got {k!r}")
    if k > 1000:
        raise SamplingInputError(f"k={k} is more neighbours per item than sampling supports (at most 1000)")
    if not isinstance(ratings_per_pair, int) or not 1 <= ratings_per_pair <= 100:
        raise SamplingInputError(f"ratings per pair must be between 1 and 100; got {ratings_per_pair!r}")
    if not isinstance(seed, int) or not 0 <= seed <= BIGINT_MAX:
        raise SamplingInputError(
            f"seed must be a whole number, 0 or more and at most {BIGINT_MAX:,} (64 bits); got {seed!r}"
        )


def _check_methods(methods: Mapping[str, int | None]) -> dict[str, int | None]:
    known = (*strategies.METHODS, MODEL_TOPK)
    if not methods:
        raise SamplingInputError(f"choose at least one sampling method: {', '.join(known)}")
    unknown = [name for name in methods if name not in known]
    if unknown:
        raise SamplingInputError(f"unknown sampling method(s) {', '.join(map(repr, unknown))}; use {', '.join(known)}")
    checked: dict[str, int | None] = {}
    for name in known:
        if name not in methods:
            continue
        budget = methods[name]
        if budget is not None and (not isinstance(budget, int) or isinstance(budget, bool) or budget < 1):
            raise SamplingInputError(
                f"{name}: budget must be a whole number of pairs, at least 1 (or none); got {budget!r}"
            )
        checked[name] = budget
    return checked


def _choose_spaces(split, summary: SplitSummary, methods, names: Sequence[str]) -> list[EmbeddingSpace]:
    needed = {strategies.SPACE_MODALITY[m]: m for m in methods if m in strategies.SPACE_MODALITY}
    available = {space.name: space for space in EmbeddingSpace.objects.filter(dataset=split.dataset_id)}
    if names:
        unknown = [name for name in names if name not in available]
        if unknown:
            known = ", ".join(sorted(available)) or "none"
            raise SamplingInputError(
                f"dataset {summary.dataset!r} has no embedding space {', '.join(map(repr, unknown))} (it has: {known})"
            )
        chosen = [available[name] for name in dict.fromkeys(names)]
        for space in chosen:
            if space.modality not in needed:
                uses = ", ".join(f"{method} uses {modality} spaces" for modality, method in needed.items())
                raise SamplingInputError(
                    f"space {space.name!r} holds {space.modality} embeddings, which none of the chosen methods "
                    f"searches ({uses or 'the chosen methods use no embeddings'})"
                )
    else:
        chosen = sorted((s for s in available.values() if s.modality in needed), key=lambda s: (s.modality, s.name))
    for modality, method in needed.items():
        if not any(space.modality == modality for space in chosen):
            given = f" among {', '.join(repr(n) for n in names)}" if names else f" in dataset {summary.dataset!r}"
            raise SamplingInputError(
                f"{method} searches {modality} embeddings, but there is no {modality} embedding space{given}; "
                "import one first"
            )
    return chosen


def _check_budgets(summary: SplitSummary, methods, *, k: int, spaces: list[EmbeddingSpace], cocaption: str) -> None:
    if strategies.C2I_INTRASIM in methods and summary.ready_pivots == 0:
        counts = ", ".join(f"{kind}: {c.ready} of {c.total}" for kind, c in summary.pivots.items())
        raise SamplingInputError(
            f"c2i_intrasim derives pairs from rated SIS and STS pivots, but no pair of split {summary.split} has "
            f"all its ratings yet ({counts} fully rated)"
        )
    for method, budget in methods.items():
        if budget is None or method == MODEL_TOPK:
            continue
        n_spaces = sum(1 for s in spaces if s.modality == strategies.SPACE_MODALITY.get(method))
        capacity, exact = summary.capacity(method, k=k, n_spaces=n_spaces, cocaption=cocaption)
        if budget > capacity:
            if exact:
                what = f"the {capacity} fresh pairs split {summary.split} has for it"
            elif method == strategies.C2C_COCAPTION:
                what = f"the at most {capacity} pairs that cycles through the co-caption groups of {summary.split} give"
            elif method == strategies.C2I_INTRASIM:
                what = f"the at most {capacity} pairs its {summary.ready_pivots} fully rated pivots can give"
            else:
                what = (
                    f"the at most {capacity} pairs that k={k} neighbours of {summary.images} images "
                    f"in {n_spaces} space(s) can give"
                )
            raise SamplingInputError(f"{method}: budget {budget} is more than {what}")


# --- start -----------------------------------------------------------------------------


@transaction.atomic
def sampling_batch_start(*, batch: SamplingBatch, enqueue: bool = True) -> SamplingBatch:
    """Make a pending or failed batch pending again (a running batch whose worker died
    counts as failed) and, with ``enqueue``, send its task when the current transaction
    commits; without, the caller runs it with ``sampling_batch_run``.

    Raises BatchConflict for a batch that is running or already succeeded, UploadRemoved
    for a failed uploaded batch whose pair list was pruned.
    """
    sampling_batches_fail_orphaned()
    batch.refresh_from_db()
    if batch.status == JobStatus.RUNNING:
        raise BatchConflict(f"batch #{batch.pk} is running ({batch.runner}); wait for it to finish")
    if batch.status == JobStatus.SUCCEEDED:
        total = sum(batch.pairs_per_method.values())
        raise BatchConflict(f"batch #{batch.pk} already succeeded with {total} pairs; create a new batch for more")
    run_check_uploads_present(batch, "batch")
    # The upload state is checked again in the UPDATE: a prune removing the list now
    # either happens first (no update) or finds the batch pending and keeps the list.
    rows = SamplingBatch.objects.filter(pk=batch.pk, status=batch.status).exclude(upload_state=UploadState.REMOVED)
    updated = rows.update(
        status=JobStatus.PENDING,
        error="",
        progress_done=0,
        progress_total=0,
        progress_message="queued",
        started_at=None,
        finished_at=None,
    )
    if not updated:
        batch.refresh_from_db()
        run_check_uploads_present(batch, "batch")
        raise BatchConflict(f"batch #{batch.pk} changed state meanwhile; look at it again")
    if enqueue:
        task_queue_on_commit("sampling.tasks.run_sampling_batch", batch.pk)
    batch.refresh_from_db()
    return batch


# --- priority --------------------------------------------------------------------------


def sampling_batch_set_priority(*, batch_id: int, priority: int) -> SamplingBatch:
    """Change a batch's priority and, with it, the queue order of its pairs: claims take
    higher priorities first. A batch still being written gets the new priority too.
    Its pairs change in short transactions (see _apply_batch_priority); if that is cut
    short, setting the priority again completes it."""
    _check_priority(priority)
    with transaction.atomic():
        batch = SamplingBatch.objects.filter(pk=batch_id).first()
        if batch is None:
            raise NotFound(f"no sampling batch #{batch_id}")
        # Waits for a batch being written; one written later reads the new priority.
        dataset_writes_lock(batch.dataset_id)
        SamplingBatch.objects.filter(pk=batch_id).update(priority=priority)
    _apply_batch_priority(batch_id)
    batch.refresh_from_db()
    return batch


def _apply_batch_priority(batch_id: int) -> None:
    """Bring the batch's pairs and slots to the batch's priority, PRIORITY_CHUNK pairs a
    transaction: claims skip locked slots, so one transaction over a large batch would
    hide its work from raters until it committed.

    Each chunk reads the batch's priority under a row lock that a concurrent change's
    update waits for, so when two changes overlap, the later one's value ends up on
    every pair, whichever loop finishes last.
    """
    pair_ids = list(Pair.objects.filter(batch_id=batch_id).order_by("id").values_list("id", flat=True))
    for start in range(0, len(pair_ids), PRIORITY_CHUNK):
        with transaction.atomic():
            current = (
                SamplingBatch.objects.select_for_update(no_key=True).values_list("priority", flat=True).get(pk=batch_id)
            )
            pairs_set_priority(pair_ids=pair_ids[start : start + PRIORITY_CHUNK], priority=current)
