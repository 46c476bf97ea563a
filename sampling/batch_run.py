"""Running a sampling batch: sample (or read its uploaded list) and queue its pairs,
on the run lifecycle of ``annotation.runs``.

A batch's pairs are written in one transaction together with its final status, so a
batch is either done with all its pairs or has none: a failure, or a worker killed
mid-batch, leaves nothing behind, and starting the batch again gives the same pairs.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from django.db import transaction

from annotation.models import METHOD_KIND, Caption, Dataset, EmbeddingSpace, Image, TaskKind
from annotation.rating.pairs import PairSpec, gold_pair_identities, pairs_create_bulk
from annotation.runs import (
    SAMPLING_BATCH_LOCKS,
    Progress,
    RunKind,
    run_is_stale,
    run_once,
    run_succeed,
    runs_fail_orphaned,
)
from sampling import strategies
from sampling.audit import audit_retrievals_write, audit_sample
from sampling.errors import BatchConflict, PairListError, SamplingInputError
from sampling.index import IndexConfig
from sampling.model_topk import MODEL_TOPK
from sampling.models import SamplingBatch
from sampling.pairlist import UPLOADED, PairListFormatError, read_pair_list
from sampling.selectors import KEY_CHUNK, pivots, queued_pairs, space_vectors, split_items


def _orphan_message(batch: SamplingBatch) -> str:
    return (
        f"the process running this batch ({batch.runner or 'unknown'}) stopped before it finished; "
        "no pairs were written. Start the batch again."
    )


BATCH_RUNS = RunKind(
    model=SamplingBatch,
    lock_class=SAMPLING_BATCH_LOCKS,
    noun="sampling batch",
    orphan_message=_orphan_message,
    claim_resets={"stats": {}, "pairs_per_method": {}},
)


def sampling_batches_fail_orphaned() -> list[int]:
    """Mark failed every running batch whose runner is gone. Returns their ids."""
    return runs_fail_orphaned(BATCH_RUNS)


def sampling_batch_is_stale(batch: SamplingBatch) -> bool:
    """Marked running, but its process is gone (read only)."""
    return run_is_stale(BATCH_RUNS, batch)


def index_config() -> IndexConfig:
    """The search configuration from settings.SAMPLING_INDEX (checked at start-up)."""
    from django.conf import settings

    return IndexConfig.from_mapping(settings.SAMPLING_INDEX)


def sampling_batch_run(*, batch_id: int, echo: Progress | None = None) -> SamplingBatch:
    """Run a pending batch once (see ``annotation.runs.run_once``): sample (or read the
    upload), then write every pair with its rating slots and the final status in one
    transaction. Bad input marks the batch failed with the message; an unexpected error
    marks it failed and re-raises."""
    return run_once(BATCH_RUNS, batch_id, _run, echo=echo)


def _run(batch: SamplingBatch, progress: Progress) -> None:
    started = time.perf_counter()
    uploaded = batch.source == SamplingBatch.Source.UPLOADED
    if uploaded:
        total_steps = 2
        progress(0, total_steps, "reading the pair list")
        specs, merged = upload_specs(batch.split, batch.upload_path, repeats=batch.upload_repeats)
        stats: dict = {"pairs_in_file": len(specs), "rows_merged": merged}
        step = 1
        retrievals = []
    else:
        specs, retrievals, stats, step, total_steps = _sample(batch, progress)
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
        if uploaded:
            # Re-rating lists may hold pairs the dataset already has: those are skipped.
            stats["already_queued"] = len(specs) - sum(created.values()) - stats["gold_pairs_left_out"]
        elif created != planned:
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


def _sample(batch: SamplingBatch, progress: Progress) -> tuple[list[PairSpec], list, dict, int, int]:
    """Sample the batch's methods. Returns (specs, audit retrievals, stats, steps done,
    total steps)."""
    methods = {method: budget for method, budget in batch.methods.items() if method != MODEL_TOPK}
    spaces = {space.name: space for space in EmbeddingSpace.objects.filter(dataset=batch.dataset_id)}
    missing = [name for name in batch.spaces if name not in spaces]
    if missing:
        raise SamplingInputError(f"embedding space(s) {', '.join(missing)} no longer exist in the dataset")
    searched = [
        spaces[name]
        for name in batch.spaces
        if any(strategies.SPACE_MODALITY.get(method) == spaces[name].modality for method in methods)
    ]
    total_steps = 1 + len(searched) + len(batch.methods) + 1
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
        result = strategies.sample_split(
            data, methods, k=batch.k, seed=batch.seed, index=index, step=step, cocaption=batch.cocaption_pairs
        )
    except ValueError as exc:
        raise SamplingInputError(str(exc)) from exc
    specs = [spec for method, rows in result.pairs.items() for spec in items.pair_specs(method, rows)]
    stats = {
        "load_s": round(load_s, 3),
        "search_s": round(result.search_seconds, 3),
        "select_s": round(time.perf_counter() - select_started - result.search_seconds, 3),
        "index": result.index_kinds,
        "index_config": index.as_dict(),
        **result.reports,
    }
    retrievals = []
    if MODEL_TOPK in batch.methods:
        step(f"retrieving the top {batch.k} of {len(batch.audit['models'])} audited model(s)")
        audit_started = time.perf_counter()
        # A stream of its own, after every classic method's: adding an audit to a batch
        # never changes the other methods' pairs.
        rng = np.random.default_rng([batch.seed, len(strategies.METHODS)])
        audit_specs, retrievals = audit_sample(batch, items, data.queued, batch.methods[MODEL_TOPK], rng)
        specs += audit_specs
        stats["audit_s"] = round(time.perf_counter() - audit_started, 3)
    return specs, retrievals, stats, done + 1, total_steps


def dataset_writes_lock(dataset_id: int) -> None:
    """One pair writer per dataset at a time (until the transaction ends): two batches
    cannot queue the same pair, and a priority change waits for a batch being written.
    NO KEY: rows that reference the dataset can still be written meanwhile."""
    Dataset.objects.select_for_update(no_key=True).only("pk").get(pk=dataset_id)


def upload_specs(split, path: str | Path, *, repeats: str) -> tuple[list[PairSpec], int]:
    """The pairs of an uploaded list as specs in the list's order and orientation, every
    id resolved in the split, and the number of rows merged as repeats."""
    try:
        pair_list = read_pair_list(path, repeats=repeats)
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
    return specs, pair_list.merged


def _ids_in_split(split, model, keys: list[str]) -> dict[str, int]:
    unique = sorted(set(keys))
    queryset = model.objects.filter(image__split=split) if model is Caption else model.objects.filter(split=split)
    found: dict[str, int] = {}
    for start in range(0, len(unique), KEY_CHUNK):
        found.update(queryset.filter(key__in=unique[start : start + KEY_CHUNK]).values_list("key", "id"))
    return found
