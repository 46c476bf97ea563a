"""Running a sampling batch: sample (or read its uploaded list) and queue its pairs,
on the run lifecycle of ``annotation.runs.lifecycle``.

A batch's pairs are written in one transaction together with its final status, so a
batch is either done with all its pairs or has none: a failure, or a worker killed
mid-batch, leaves nothing behind, and starting the batch again gives the same pairs."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
from django.db import transaction
from django.utils import timezone

from annotation.models import Dataset, EmbeddingSpace, JobStatus
from annotation.quality.adaptive_plans import adaptive_budgets_refresh
from annotation.runs.lifecycle import (
    Progress,
    run_detach,
    run_is_stale,
    run_once,
    run_resume,
    run_succeed,
    runs_fail_orphaned,
)
from annotation.serving.pairs import PairSpec, gold_pair_identities, pairs_create_bulk
from sampling.audit import audit_retrievals_write, audit_sample
from sampling.errors import BatchConflict, SamplingInputError
from sampling.methods import strategies
from sampling.methods.model_topk import MODEL_TOPK
from sampling.models import SamplingBatch, SamplingShard
from sampling.runs.chord import (
    BATCH_RUNS,
    SPLIT_FILE,
    SpaceSearch,
    chord_start,
    index_config,
    run_folder,
    run_folder_remove,
    run_token,
    shards_summary,
    space_folder,
    stored_cells,
    stored_codebook,
    uses_chord,
)
from sampling.runs.upload import UploadSummary, upload_spec_chunks
from sampling.search.index import CELL_KINDS, IndexConfig, IndexConfigError
from sampling.search.neighbours import nearest_neighbours, search_plan
from sampling.search.pq import PqTrainingError
from sampling.search.shards import ASSIGN, SEARCH, folder_neighbours
from sampling.selectors import (
    SplitItems,
    pivots,
    queued_pairs,
    space_vectors,
    split_items,
    split_items_load,
)


def sampling_batches_fail_orphaned() -> list[int]:
    """Mark failed every running batch whose runner is gone. Returns their ids."""
    return runs_fail_orphaned(BATCH_RUNS)


def sampling_batch_is_stale(batch: SamplingBatch) -> bool:
    """Marked running, but its process is gone (read only)."""
    return run_is_stale(BATCH_RUNS, batch)


def sampling_batch_run(*, batch_id: int, echo: Progress | None = None) -> SamplingBatch:
    """Run a pending batch once (see ``annotation.runs.lifecycle.run_once``): sample (or read the
    upload), then write every pair with its rating slots and the final status in one
    transaction. Bad input marks the batch failed with the message; an unexpected error
    marks it failed and re-raises."""
    return run_once(BATCH_RUNS, batch_id, _run, echo=echo)


def _run(batch: SamplingBatch, progress: Progress) -> None:
    started = time.perf_counter()
    if batch.source == SamplingBatch.Source.UPLOADED:
        _write_upload(batch, progress, started=started)
        return
    sampled = _sample(batch, progress)
    if sampled is not None:
        specs, retrievals, stats, step, total_steps = sampled
        _write(batch, specs, retrievals, stats, progress, step=step, total_steps=total_steps, started=started)


def sampling_batch_merge(*, batch_id: int, token: str) -> SamplingBatch | None:
    """Finish the run ``token`` of a batch whose search ran in a chord: read the shards'
    neighbours, select the pairs and write them (``annotation.runs.lifecycle.run_resume``); the
    run's folder goes. A merge of an earlier run of the batch does nothing."""

    def body(batch: SamplingBatch, progress: Progress) -> None:
        if run_token(batch) == token:
            _merge(batch, progress)

    try:
        return run_resume(BATCH_RUNS, batch_id, body)
    finally:
        batch = SamplingBatch.objects.filter(pk=batch_id).first()
        if batch is not None and batch.status != JobStatus.RUNNING and run_token(batch) == token:
            run_folder_remove(batch)


def _merge(batch: SamplingBatch, progress: Progress) -> None:
    # The batch's total time counts from its start, before the chord.
    started = time.perf_counter() - (timezone.now() - batch.started_at).total_seconds()
    stats = dict(batch.stats)
    stats["chord"] = {**stats.get("chord", {}), **shards_summary(batch)}
    stages = [stats["chord"][stage] for stage in (ASSIGN, SEARCH) if stage in stats["chord"]]
    if not all(stage["finished"] == stage["shards"] for stage in stages):
        raise BatchConflict("the chord's merge ran before every shard finished; start the batch again")
    # The rows the shards searched, as the batch's own task read them.
    inputs = _inputs(batch, with_vectors=False, items=split_items_load(run_folder(batch) / SPLIT_FILE))
    total_steps = batch.progress_total
    progress(total_steps - 1, total_steps, "merging the shards' neighbours")
    found = {name: folder_neighbours(space_folder(batch, name)) for name in inputs.searched}
    specs, retrievals, selected = _select(batch, inputs, found, progress, total_steps - 1, total_steps)
    stats.update(selected)
    _write(batch, specs, retrievals, stats, progress, step=total_steps - 1, total_steps=total_steps, started=started)


def _write(
    batch: SamplingBatch,
    specs: list[PairSpec],
    retrievals: list,
    stats: dict,
    progress: Progress,
    *,
    step: int,
    total_steps: int,
    started: float,
) -> None:
    """Write every pair with its rating slots and the batch's final status in one transaction."""
    slots = len(specs) * batch.ratings_per_pair
    progress(step, total_steps, f"writing up to {len(specs)} pairs and {slots} rating slots")
    write_started = time.perf_counter()
    with transaction.atomic():
        dataset_writes_lock(batch.dataset_id)
        # Read under the lock: a priority set while the batch sampled applies to its pairs.
        batch.priority = SamplingBatch.objects.values_list("priority", flat=True).get(pk=batch.pk)
        planned, stats["gold_pairs_left_out"] = _planned(batch, specs)
        created = {method: 0 for method in planned} | pairs_create_bulk(batch=batch, specs=specs)
        if retrievals:
            stats["audit_retrievals"] = audit_retrievals_write(batch=batch, retrievals=retrievals)
        if created != planned:
            # Sampling left out queued pairs already, so a shortfall means another batch
            # queued some of them since.
            lost = sum(planned.values()) - sum(created.values())
            raise BatchConflict(
                f"{lost} of the sampled pairs were queued by another batch while this one ran; start it again"
            )
        run_succeed(
            BATCH_RUNS,
            batch.pk,
            message=f"done: {sum(created.values())} pairs",
            pairs_per_method=created,
            stats=stats,
            progress_done=total_steps,
            progress_total=total_steps,
        )
    _plan_budget(batch)
    _timed(batch, stats, write_started=write_started, started=started)


def _write_upload(batch: SamplingBatch, progress: Progress, *, started: float) -> None:
    """Read the batch's pair list a chunk at a time (``sampling.runs.upload``) and write
    each chunk's pairs with their rating slots as it comes, all in one transaction with
    the batch's final status: a problem found late leaves nothing written."""
    progress(0, 2, "reading the pair list and writing its pairs")
    write_started = time.perf_counter()
    summary = UploadSummary()
    with transaction.atomic():
        dataset_writes_lock(batch.dataset_id)
        batch.priority = SamplingBatch.objects.values_list("priority", flat=True).get(pk=batch.pk)
        gold = gold_pair_identities(batch.dataset_id)
        created: dict[str, int] = dict.fromkeys(batch.methods, 0)
        gold_left_out = 0
        for specs in upload_spec_chunks(batch.split, batch.upload_path, repeats=batch.upload_repeats, summary=summary):
            gold_left_out += sum(1 for spec in specs if spec.canonical().identity() in gold)
            for method, count in pairs_create_bulk(batch=batch, specs=specs).items():
                created[method] = created.get(method, 0) + count
            progress(1, 2, f"{summary.pairs} pairs of the list read and written")
        stats: dict = {
            "pairs_in_file": summary.pairs,
            "rows_merged": summary.merged,
            "gold_pairs_left_out": gold_left_out,
            # Re-rating lists may hold pairs the dataset already has: those are skipped.
            "already_queued": summary.pairs - sum(created.values()) - gold_left_out,
        }
        run_succeed(
            BATCH_RUNS,
            batch.pk,
            message=f"done: {sum(created.values())} pairs",
            pairs_per_method=created,
            stats=stats,
            progress_done=2,
            progress_total=2,
        )
    _plan_budget(batch)
    _timed(batch, stats, write_started=write_started, started=started)


def _plan_budget(batch: SamplingBatch) -> None:
    """A batch with a budget of ratings gets its precision target once its pairs are queued
    (and anew at each refit of the rater model)."""
    if batch.adaptive_budget is not None:
        adaptive_budgets_refresh(dataset_id=batch.dataset_id)


def _timed(batch: SamplingBatch, stats: dict, *, write_started: float, started: float) -> None:
    # Timed after the commit, which checks every pair's and slot's foreign keys (about
    # as long as the inserts themselves).
    stats["write_s"] = round(time.perf_counter() - write_started, 3)
    stats["total_s"] = round(time.perf_counter() - started, 3)
    SamplingBatch.objects.filter(pk=batch.pk).update(stats=stats)


def _planned(batch: SamplingBatch, specs: list[PairSpec]) -> tuple[dict[str, int], int]:
    """(pairs per method the batch will queue unless another batch queued some since,
    pairs left out as equal to an active gold pair of the dataset). A pair two methods
    chose is queued once, under the first (as pairs_create_bulk does); an audit's pairs
    count under their directions' names (topk_c2i ...), not model_topk."""
    planned = {method: 0 for method in batch.methods if method != MODEL_TOPK}
    gold = gold_pair_identities(batch.dataset_id)
    seen: set[tuple] = set()
    gold_left_out = 0
    for spec in specs:
        identity = spec.canonical().identity()
        if identity in seen:
            continue
        seen.add(identity)
        if identity in gold:
            gold_left_out += 1
        else:
            planned[spec.sampling_method] = planned.get(spec.sampling_method, 0) + 1
    return planned, gold_left_out


@dataclass
class _Inputs:
    """What selection reads of a batch's split: the split's items and arrays, the
    classic methods with their budgets, and the spaces searched (name -> space)."""

    items: SplitItems
    data: strategies.SplitArrays
    methods: dict
    searched: dict[str, EmbeddingSpace]
    load_s: float


def _inputs(batch: SamplingBatch, *, with_vectors: bool, items: SplitItems | None = None) -> _Inputs:
    started = time.perf_counter()
    methods = {method: budget for method, budget in batch.methods.items() if method != MODEL_TOPK}
    spaces = {space.name: space for space in EmbeddingSpace.objects.filter(dataset=batch.dataset_id)}
    missing = [name for name in batch.spaces if name not in spaces]
    if missing:
        raise SamplingInputError(f"embedding space(s) {', '.join(missing)} no longer exist in the dataset")
    searched = {
        name: spaces[name]
        for name in batch.spaces
        if any(strategies.SPACE_MODALITY.get(method) == spaces[name].modality for method in methods)
    }
    items = items or split_items(split=batch.split)
    vectors = {
        name: space_vectors(space=space, keys=items.image_keys if space.modality == "image" else items.caption_keys)
        for name, space in searched.items()
        if with_vectors
    }
    data = strategies.SplitArrays(
        n_images=items.n_images,
        caption_image=items.caption_image,
        image_spaces={name: x for name, x in vectors.items() if searched[name].modality == "image"},
        caption_spaces={name: x for name, x in vectors.items() if searched[name].modality == "caption"},
        queued=queued_pairs(split=batch.split, items=items),
        pivots=pivots(split=batch.split, items=items) if strategies.C2I_INTRASIM in methods else strategies.Pivots(),
    )
    return _Inputs(items, data, methods, searched, time.perf_counter() - started)


def _sample(batch: SamplingBatch, progress: Progress) -> tuple[list[PairSpec], list, dict, int, int] | None:
    """Sample the batch's methods. Returns (specs, audit retrievals, stats, steps done,
    total steps), or None when the search went on to a chord of shards (sampling.runs.chord)."""
    total_steps = 1 + len(batch.spaces) + len(batch.methods) + 1
    progress(0, total_steps, "loading the split")
    inputs = _inputs(batch, with_vectors=True)
    total_steps = 1 + len(inputs.searched) + len(batch.methods) + 1
    index = index_config()
    queries = {name: strategies.search_vectors(inputs.data, name) for name in inputs.searched}
    cells, codebooks, stats = _trained(inputs, queries, index, progress, total_steps)
    if queries and uses_chord(inputs.items.n_images, index):
        plans = {}
        for name, x in queries.items():
            plan = search_plan(len(x), x.shape[1], batch.k, index, cells.get(name))
            # An image space stored in the split's order is mapped by the workers as it is.
            stored = getattr(inputs.data.image_spaces.get(name), "filename", None)
            plan = replace(plan, vectors_file=str(stored or ""))
            plans[name] = SpaceSearch(x, plan, cells.get(name), codebooks.get(name))
        # Rows of an earlier run of the batch go first (their late tasks then do nothing).
        SamplingShard.objects.filter(batch=batch).delete()
        run_detach(BATCH_RUNS, batch.pk, "handing the search to a chord of shards")
        try:
            stats["chord"] = chord_start(batch, plans, inputs.items)
        except BaseException:
            run_folder_remove(batch)
            raise
        SamplingBatch.objects.filter(pk=batch.pk).update(stats=stats)
        return None
    found = {}
    search_started = time.perf_counter()
    for done, (name, x) in enumerate(queries.items(), start=1):
        progress(done, total_steps, f"searching {inputs.searched[name].modality} space {name}")
        found[name] = nearest_neighbours(x, batch.k, index, cells.get(name), codebooks.get(name))[0]
    stats["search_s"] = round(time.perf_counter() - search_started, 3)
    specs, retrievals, selected = _select(batch, inputs, found, progress, len(queries), total_steps)
    return specs, retrievals, stats | selected, total_steps - 1, total_steps


def _trained(inputs: _Inputs, queries: dict, index: IndexConfig, progress: Progress, total_steps: int):
    """The IVF cells and IVF-PQ codebooks of the searched spaces (stored beside each
    space, trained the first time). Returns (cells, codebooks: space name -> array,
    the batch's stats so far)."""
    kind = index.kind_for(inputs.items.n_images)
    made: dict[str, dict] = {"ivf_cells": {}, "ivfpq_codebooks": {}}
    cells, codebooks = {}, {}
    for name, x in queries.items() if kind in CELL_KINDS else ():
        space = inputs.searched[name]
        progress(1, total_steps, f"training or finding the IVF cells of space {name}")
        cells[name], made["ivf_cells"][name] = stored_cells(space, x, index)
        if kind == "ivfpq":
            progress(1, total_steps, f"training or finding the IVF-PQ codebook of space {name}")
            try:
                codebooks[name], made["ivfpq_codebooks"][name] = stored_codebook(space, x, cells[name], index)
            except (IndexConfigError, PqTrainingError) as exc:
                raise SamplingInputError(f"space {name}: {exc}") from exc
    stats = {"load_s": round(inputs.load_s, 3), "index_config": index.as_dict(), "ivf_cells": made["ivf_cells"]}
    if codebooks:
        stats["ivfpq_codebooks"] = made["ivfpq_codebooks"]
    stats["index"] = {name: index.kind_for(len(x)) for name, x in queries.items()}
    return cells, codebooks, stats


def _select(
    batch: SamplingBatch, inputs: _Inputs, found: dict[str, np.ndarray], progress: Progress, done: int, total: int
) -> tuple[list[PairSpec], list, dict]:
    """The batch's pairs from the split and each searched space's neighbours (int64
    (n_images, k)). Returns (specs, audit retrievals, stats of the selection)."""
    steps = iter(range(done + 1, total))
    select_started = time.perf_counter()
    inputs.data.neighbours = {
        modality: {name: ids for name, ids in found.items() if inputs.searched[name].modality == modality}
        for modality in ("image", "caption")
    }
    try:
        result = strategies.sample_split(
            inputs.data,
            inputs.methods,
            k=batch.k,
            seed=batch.seed,
            index=index_config(),
            step=lambda message: progress(next(steps, total - 1), total, message),
            cocaption=batch.cocaption_pairs,
        )
    except ValueError as exc:
        raise SamplingInputError(str(exc)) from exc
    specs = [spec for method, rows in result.pairs.items() for spec in inputs.items.pair_specs(method, rows)]
    stats = {"select_s": round(time.perf_counter() - select_started, 3), **result.reports}
    retrievals = []
    if MODEL_TOPK in batch.methods:
        progress(
            next(steps, total - 1),
            total,
            f"retrieving the top {batch.k} of {len(batch.audit['models'])} audited model(s)",
        )
        audit_started = time.perf_counter()
        # A stream of its own, after every classic method's: adding an audit to a batch
        # never changes the other methods' pairs.
        rng = np.random.default_rng([batch.seed, len(strategies.METHODS)])
        audit_specs, retrievals = audit_sample(batch, inputs.items, inputs.data.queued, batch.methods[MODEL_TOPK], rng)
        specs += audit_specs
        stats["audit_s"] = round(time.perf_counter() - audit_started, 3)
    return specs, retrievals, stats


def dataset_writes_lock(dataset_id: int) -> None:
    """One pair writer per dataset at a time (until the transaction ends): two batches
    cannot queue the same pair, and a priority change waits for a batch being written.
    NO KEY: rows that reference the dataset can still be written meanwhile."""
    Dataset.objects.select_for_update(no_key=True).only("pk").get(pk=dataset_id)
