"""Writes for sampling batches: create (every input checked first), start, run, and
failing batches whose worker died.

A batch's pairs are written in one transaction together with its final status, so a
batch is either done with all its pairs or has none: a failure, or a worker killed
mid-batch, leaves nothing behind, and starting the batch again gives the same pairs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotation.errors import DomainError, NotFound
from annotation.models import METHOD_KIND, Caption, Dataset, EmbeddingSpace, Image, JobStatus, Pair, TaskKind
from annotation.runners import (
    SAMPLING_BATCH_LOCKS,
    previous_runner_gone,
    runner_alive,
    runner_lock,
    runner_name,
)
from annotation.services import PairSpec, pairs_create_bulk, pairs_set_priority
from sampling import strategies
from sampling.errors import BatchConflict, PairListError, SamplingInputError
from sampling.index import IndexConfig
from sampling.models import SamplingBatch
from sampling.pairlist import UPLOADED, PairListFormatError, read_pair_list
from sampling.selectors import (
    KEY_CHUNK,
    SplitSummary,
    pivots,
    queued_pairs,
    space_check_covers,
    space_vectors,
    split_get,
    split_items,
    split_summary,
)

logger = logging.getLogger(__name__)

Progress = Callable[[int, int, str], None]

# Batch priorities: plenty of levels, far inside the column's 32 bits.
PRIORITY_LIMIT = 1_000_000
# Pairs whose priority changes in one transaction.
PRIORITY_CHUNK = 2_000


def index_config() -> IndexConfig:
    """The search configuration from settings.SAMPLING_INDEX (checked at start-up)."""
    return IndexConfig.from_mapping(settings.SAMPLING_INDEX)


# --- create ----------------------------------------------------------------------------


def sampling_batch_create(
    *,
    dataset_name: str,
    split_name: str,
    methods: Mapping[str, int | None],
    k: int = 5,
    spaces: Sequence[str] = (),
    ratings_per_pair: int = 5,
    seed: int = 0,
    priority: int = 0,
    created_by=None,
) -> SamplingBatch:
    """Check a sampling configuration against the split and store it as a pending batch.

    methods: method name -> budget (None: every pair the method gives). spaces: embedding
    space names; empty means every space of the modality a chosen method searches.
    Raises SamplingInputError (nothing stored) for: unknown methods, budgets below 1 or
    above what the split can give, k < 1 or k >= the number of images, spaces that are
    unknown, of a modality no chosen method uses, or without a vector for every item of
    the split, a kNN method without a space, c2i_intrasim without fully rated pivots.
    """
    split = split_get(dataset_name=dataset_name, split_name=split_name)
    _check_settings(k=k, ratings_per_pair=ratings_per_pair, seed=seed)
    _check_priority(priority)
    methods = _check_methods(methods)
    summary = split_summary(split=split)
    if summary.images == 0:
        raise SamplingInputError(f"split {split} has no images")
    knn_methods = [method for method in methods if method in strategies.SPACE_MODALITY]
    if knn_methods and k >= summary.images:
        raise SamplingInputError(
            f"k={k} but split {split} has only {summary.images} images, so at most {summary.images - 1} neighbours"
        )
    chosen = _choose_spaces(split, summary, methods, spaces)
    items = split_items(split=split) if chosen else None
    for space in chosen:
        keys = items.image_keys if space.modality == "image" else items.caption_keys
        space_check_covers(space=space, keys=keys)
    _check_budgets(summary, methods, k=k, spaces=chosen)
    return SamplingBatch.objects.create(
        dataset=split.dataset,
        split=split,
        source=SamplingBatch.Source.SAMPLED,
        methods=methods,
        k=k,
        spaces=[space.name for space in chosen],
        ratings_per_pair=ratings_per_pair,
        seed=seed,
        priority=priority,
        created_by=created_by,
    )


def sampling_batch_create_from_upload(
    *,
    dataset_name: str,
    split_name: str,
    path: str | Path,
    ratings_per_pair: int = 5,
    priority: int = 0,
    created_by=None,
) -> SamplingBatch:
    """Store a pending batch that queues the pairs of an uploaded CSV pair list.

    Every line is checked now (columns, methods, ids known in the split); pairs already
    queued in the dataset will be skipped when the batch runs. Raises PairListError.
    """
    split = split_get(dataset_name=dataset_name, split_name=split_name)
    _check_settings(k=1, ratings_per_pair=ratings_per_pair, seed=0)
    _check_priority(priority)
    specs = _upload_specs(split, path)
    counts: dict[str, int] = {}
    for spec in specs:
        counts[spec.sampling_method] = counts.get(spec.sampling_method, 0) + 1
    return SamplingBatch.objects.create(
        dataset=split.dataset,
        split=split,
        source=SamplingBatch.Source.UPLOADED,
        methods=counts,
        ratings_per_pair=ratings_per_pair,
        priority=priority,
        upload_path=str(path),
        created_by=created_by,
    )


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
    if not isinstance(seed, int) or seed < 0:
        raise SamplingInputError(f"seed must be a whole number, 0 or more; got {seed!r}")


def _check_methods(methods: Mapping[str, int | None]) -> dict[str, int | None]:
    if not methods:
        raise SamplingInputError(f"choose at least one sampling method: {', '.join(strategies.METHODS)}")
    unknown = [name for name in methods if name not in strategies.METHODS]
    if unknown:
        raise SamplingInputError(
            f"unknown sampling method(s) {', '.join(map(repr, unknown))}; use {', '.join(strategies.METHODS)}"
        )
    checked: dict[str, int | None] = {}
    for name in strategies.METHODS:
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


def _check_budgets(summary: SplitSummary, methods, *, k: int, spaces: list[EmbeddingSpace]) -> None:
    if strategies.C2I_INTRASIM in methods and summary.ready_pivots == 0:
        counts = ", ".join(f"{kind}: {c.ready} of {c.total}" for kind, c in summary.pivots.items())
        raise SamplingInputError(
            f"c2i_intrasim derives pairs from rated SIS and STS pivots, but no pair of split {summary.split} has "
            f"all its ratings yet ({counts} fully rated)"
        )
    for method, budget in methods.items():
        if budget is None:
            continue
        n_spaces = sum(1 for s in spaces if s.modality == strategies.SPACE_MODALITY.get(method))
        capacity, exact = summary.capacity(method, k=k, n_spaces=n_spaces)
        if budget > capacity:
            if exact:
                what = f"the {capacity} fresh pairs split {summary.split} has for it"
            elif method == strategies.C2I_INTRASIM:
                what = f"the at most {capacity} pairs its {summary.ready_pivots} fully rated pivots can give"
            else:
                what = (
                    f"the at most {capacity} pairs that k={k} neighbours of {summary.images} images "
                    f"in {n_spaces} space(s) can give"
                )
            raise SamplingInputError(f"{method}: budget {budget} is more than {what}")


def _upload_specs(split, path: str | Path) -> list[PairSpec]:
    """The pairs of an uploaded list as specs, every id resolved in the split."""
    try:
        pair_list = read_pair_list(path)
    except PairListFormatError as exc:
        raise PairListError(str(exc)) from exc
    name = Path(path).name
    for row in pair_list.rows:
        if row.method == UPLOADED:
            continue
        if row.method not in METHOD_KIND:
            known = ", ".join([*strategies.METHODS, "empty"])
            raise PairListError(f"{name}: line {row.line}: unknown sampling_method {row.method!r}; use one of {known}")
        if METHOD_KIND[row.method] != pair_list.kind:
            raise PairListError(
                f"{name}: line {row.line}: {row.method} makes {METHOD_KIND[row.method]} pairs, "
                f"but this is a {pair_list.kind} list"
            )
    kind = pair_list.kind
    model_a = Image if kind == TaskKind.SIS else Caption
    model_b = Caption if kind == TaskKind.STS else Image
    if model_a is model_b:
        ids_a = ids_b = _ids_in_split(split, model_a, [key for row in pair_list.rows for key in (row.key_a, row.key_b)])
    else:
        ids_a = _ids_in_split(split, model_a, [row.key_a for row in pair_list.rows])
        ids_b = _ids_in_split(split, model_b, [row.key_b for row in pair_list.rows])
    unknown = [
        (row.line, key)
        for row in pair_list.rows
        for key, ids in ((row.key_a, ids_a), (row.key_b, ids_b))
        if key not in ids
    ]
    if unknown:
        shown = "; ".join(f"line {line}: {key}" for line, key in unknown[:5])
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        raise PairListError(f"{name}: {len(unknown)} id(s) are not items of split {split}: {shown}{more}")
    specs = []
    for row in pair_list.rows:
        a, b = ids_a[row.key_a], ids_b[row.key_b]
        if kind == TaskKind.SIS:
            specs.append(PairSpec(kind, row.method, image_a=a, image_b=b))
        elif kind == TaskKind.STS:
            specs.append(PairSpec(kind, row.method, caption_a=a, caption_b=b))
        else:
            specs.append(PairSpec(kind, row.method, caption_a=a, image_a=b))
    return specs


def _ids_in_split(split, model, keys: list[str]) -> dict[str, int]:
    unique = sorted(set(keys))
    queryset = model.objects.filter(image__split=split) if model is Caption else model.objects.filter(split=split)
    found: dict[str, int] = {}
    for start in range(0, len(unique), KEY_CHUNK):
        found.update(queryset.filter(key__in=unique[start : start + KEY_CHUNK]).values_list("key", "id"))
    return found


# --- start -----------------------------------------------------------------------------


def sampling_batch_start(*, batch: SamplingBatch, enqueue: bool = True) -> SamplingBatch:
    """Make a pending or failed batch pending again (a running batch whose worker died
    counts as failed) and, with ``enqueue``, send its task when the current transaction
    commits; without, the caller runs it with ``sampling_batch_run``.

    Raises BatchConflict for a batch that is running or already succeeded.
    """
    batch.refresh_from_db()
    if batch.status == JobStatus.RUNNING and runner_alive(SAMPLING_BATCH_LOCKS, batch.pk, batch.runner):
        raise BatchConflict(f"batch #{batch.pk} is running ({batch.runner}); wait for it to finish")
    if batch.status == JobStatus.SUCCEEDED:
        total = sum(batch.pairs_per_method.values())
        raise BatchConflict(f"batch #{batch.pk} already succeeded with {total} pairs; create a new batch for more")
    updated = SamplingBatch.objects.filter(pk=batch.pk, status=batch.status).update(
        status=JobStatus.PENDING,
        error="",
        progress_done=0,
        progress_total=0,
        progress_message="queued",
        started_at=None,
        finished_at=None,
    )
    if not updated:
        raise BatchConflict(f"batch #{batch.pk} changed state meanwhile; look at it again")
    if enqueue:
        from sampling.tasks import run_sampling_batch

        batch_id = batch.pk
        transaction.on_commit(lambda: run_sampling_batch.delay(batch_id))
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
        _lock_dataset_writes(batch.dataset_id)
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


def _lock_dataset_writes(dataset_id: int) -> None:
    """One pair writer per dataset at a time (until the transaction ends): two batches
    cannot queue the same pair, and a priority change waits for a batch being written.
    NO KEY: rows that reference the dataset can still be written meanwhile."""
    Dataset.objects.select_for_update(no_key=True).only("pk").get(pk=dataset_id)


# --- run -------------------------------------------------------------------------------


def sampling_batch_run(*, batch_id: int, echo: Progress | None = None) -> SamplingBatch:
    """Run a pending batch: sample (or read the upload), then write every pair with its
    rating slots and the final status in one transaction.

    Idempotent: a batch that is not pending is returned as it is (one that is marked
    running but whose runner died is marked failed). Bad input marks the batch failed
    with the message and returns it; an unexpected error marks it failed and re-raises.
    """
    with runner_lock(SAMPLING_BATCH_LOCKS, batch_id) as locked:
        batch = SamplingBatch.objects.select_related("dataset", "split").filter(pk=batch_id).first()
        if batch is None:
            raise NotFound(f"no sampling batch #{batch_id}")
        if not locked:
            return batch
        claimed = SamplingBatch.objects.filter(pk=batch_id, status=JobStatus.PENDING).update(
            status=JobStatus.RUNNING,
            runner=runner_name(),
            started_at=timezone.now(),
            finished_at=None,
            error="",
            stats={},
            pairs_per_method={},
            progress_done=0,
            progress_total=0,
            progress_message="starting",
        )
        if not claimed:
            if batch.status == JobStatus.RUNNING and previous_runner_gone(SAMPLING_BATCH_LOCKS, batch.pk, batch.runner):
                _fail(batch.pk, _orphaned_message(batch))
                batch.refresh_from_db()
            return batch
        batch.refresh_from_db()
        try:
            _run(batch, _progress_writer(batch.pk, echo))
        except DomainError as exc:
            _fail(batch.pk, str(exc))
        except Exception as exc:
            logger.exception("sampling batch #%s failed", batch_id)
            _fail(batch.pk, f"unexpected error: {exc!r}")
            raise
        batch.refresh_from_db()
        return batch


def _run(batch: SamplingBatch, progress: Progress) -> None:
    started = time.perf_counter()
    uploaded = batch.source == SamplingBatch.Source.UPLOADED
    if uploaded:
        total_steps = 2
        progress(0, total_steps, "reading the pair list")
        specs = _upload_specs(batch.split, batch.upload_path)
        stats: dict = {"pairs_in_file": len(specs)}
        step = 1
    else:
        specs, stats, step, total_steps = _sample(batch, progress)
    slots = len(specs) * batch.ratings_per_pair
    progress(step, total_steps, f"writing up to {len(specs)} pairs and {slots} rating slots")
    planned = {method: 0 for method in batch.methods}
    for spec in specs:
        planned[spec.sampling_method] = planned.get(spec.sampling_method, 0) + 1
    write_started = time.perf_counter()
    with transaction.atomic():
        _lock_dataset_writes(batch.dataset_id)
        # Read under the lock: a priority set while the batch sampled applies to its pairs.
        batch.priority = SamplingBatch.objects.values_list("priority", flat=True).get(pk=batch.pk)
        created = {method: 0 for method in planned} | pairs_create_bulk(batch=batch, specs=specs)
        if uploaded:
            # Re-rating lists may hold pairs the dataset already has: those are skipped.
            stats["already_queued"] = len(specs) - sum(created.values())
        elif created != planned:
            # Sampling left out queued pairs already, so a shortfall means another batch
            # queued some of them since.
            lost = sum(planned.values()) - sum(created.values())
            raise BatchConflict(
                f"{lost} of the sampled pairs were queued by another batch while this one ran; start it again"
            )
        SamplingBatch.objects.filter(pk=batch.pk).update(
            status=JobStatus.SUCCEEDED,
            pairs_per_method=created,
            stats=stats,
            progress_done=total_steps,
            progress_total=total_steps,
            progress_message=f"done: {sum(created.values())} pairs",
            finished_at=timezone.now(),
        )
    # Timed after the commit, which checks every pair's and slot's foreign keys (about
    # as long as the inserts themselves).
    stats["write_s"] = round(time.perf_counter() - write_started, 3)
    stats["total_s"] = round(time.perf_counter() - started, 3)
    SamplingBatch.objects.filter(pk=batch.pk).update(stats=stats)


def _sample(batch: SamplingBatch, progress: Progress) -> tuple[list[PairSpec], dict, int, int]:
    """Sample the batch's methods. Returns (specs, stats, steps done, total steps)."""
    methods = batch.methods
    spaces = {space.name: space for space in EmbeddingSpace.objects.filter(dataset=batch.dataset_id)}
    missing = [name for name in batch.spaces if name not in spaces]
    if missing:
        raise SamplingInputError(f"embedding space(s) {', '.join(missing)} no longer exist in the dataset")
    searched = [
        spaces[name]
        for name in batch.spaces
        if any(strategies.SPACE_MODALITY.get(method) == spaces[name].modality for method in methods)
    ]
    total_steps = 1 + len(searched) + len(methods) + 1
    done = 0

    def step(message: str) -> None:
        nonlocal done
        done += 1
        progress(done, total_steps, message)

    progress(0, total_steps, "loading the split")
    load_started = time.perf_counter()
    items = split_items(split=batch.split)
    data = strategies.SplitArrays(
        n_images=items.n_images,
        caption_image=items.caption_image,
        image_spaces={s.name: space_vectors(space=s, keys=items.image_keys) for s in searched if s.modality == "image"},
        caption_spaces={
            s.name: space_vectors(space=s, keys=items.caption_keys) for s in searched if s.modality == "caption"
        },
        queued=queued_pairs(split=batch.split, items=items),
        pivots=pivots(split=batch.split, items=items) if strategies.C2I_INTRASIM in methods else strategies.Pivots(),
    )
    load_s = time.perf_counter() - load_started
    index = index_config()
    select_started = time.perf_counter()
    try:
        result = strategies.sample_split(data, methods, k=batch.k, seed=batch.seed, index=index, step=step)
    except ValueError as exc:
        raise SamplingInputError(str(exc)) from exc
    specs = _specs(result.pairs, items)
    stats = {
        "load_s": round(load_s, 3),
        "search_s": round(result.search_seconds, 3),
        "select_s": round(time.perf_counter() - select_started - result.search_seconds, 3),
        "index": result.index_kinds,
        "index_config": index.as_dict(),
    }
    return specs, stats, done + 1, total_steps


def _specs(pairs: Mapping[str, object], items) -> list[PairSpec]:
    specs: list[PairSpec] = []
    for method, rows in pairs.items():
        kind = METHOD_KIND[method]
        if kind == TaskKind.SIS:
            specs += [
                PairSpec(kind, method, image_a=a, image_b=b)
                for a, b in zip(items.image_ids[rows[:, 0]].tolist(), items.image_ids[rows[:, 1]].tolist(), strict=True)
            ]
        elif kind == TaskKind.STS:
            specs += [
                PairSpec(kind, method, caption_a=a, caption_b=b)
                for a, b in zip(
                    items.caption_ids[rows[:, 0]].tolist(), items.caption_ids[rows[:, 1]].tolist(), strict=True
                )
            ]
        else:
            specs += [
                PairSpec(kind, method, caption_a=c, image_a=i)
                for c, i in zip(
                    items.caption_ids[rows[:, 0]].tolist(), items.image_ids[rows[:, 1]].tolist(), strict=True
                )
            ]
    return specs


def _progress_writer(batch_id: int, echo: Progress | None) -> Progress:
    """Progress goes to the batch row at once (autocommit), where admin, API and CLI read it."""

    def report(done: int, total: int, message: str) -> None:
        SamplingBatch.objects.filter(pk=batch_id).update(
            progress_done=done, progress_total=total, progress_message=message[:255]
        )
        if echo is not None:
            echo(done, total, message)

    return report


def _fail(batch_id: int, message: str) -> bool:
    """Mark a running batch failed; False if it is no longer running (one whose pairs
    committed stays succeeded even if writing its timings afterwards failed)."""
    return bool(
        SamplingBatch.objects.filter(pk=batch_id, status=JobStatus.RUNNING).update(
            status=JobStatus.FAILED, error=message, progress_message="failed", finished_at=timezone.now()
        )
    )


# --- dead runners ----------------------------------------------------------------------


def sampling_batches_fail_orphaned() -> list[int]:
    """Mark failed every running batch whose runner is gone. Returns their ids."""
    return [
        batch.pk
        for batch in SamplingBatch.objects.filter(status=JobStatus.RUNNING)
        if not runner_alive(SAMPLING_BATCH_LOCKS, batch.pk, batch.runner) and _fail(batch.pk, _orphaned_message(batch))
    ]


def _orphaned_message(batch: SamplingBatch) -> str:
    return (
        f"the process running this batch ({batch.runner or 'unknown'}) stopped before it finished; "
        "no pairs were written. Start the batch again."
    )
