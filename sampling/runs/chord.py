"""A batch's search as a Celery chord of shards, for spaces too large for one worker.

The batch's own task prepares a run folder per searched space under
DATA_DIR/sampling/runs (the vectors every worker maps, the IVF cells, the plan), records
a row per shard and hands the batch on (``annotation.runs.lifecycle.run_detach``). A chord of
assign shards then starts a chord of search shards, whose callback merges the results,
selects the pairs and writes them in one transaction (``sampling.runs.batch``). Workers
on several hosts need DATA_DIR on shared storage, one PostgreSQL and one Redis.

A shard is idempotent (its result file appears complete or not at all) and acks late:
a worker that dies mid-shard leaves the task to run again. Each delivery counts as an
attempt; past ``shard_max_attempts`` the batch fails with the shard named and nothing
written. The same seed gives the same pairs whatever the number of workers or the order
the shards finish in (``sampling.search.shards``).
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import NamedTuple

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Max
from django.utils import timezone

from annotation.core.task_queue import task_signature
from annotation.models import EmbeddingSpace, JobStatus
from annotation.runs.lifecycle import DETACHED, SAMPLING_BATCH_LOCKS, RunKind, run_fail, runner_name
from sampling.models import SamplingBatch, SamplingShard
from sampling.search.index import IndexConfig, ivf_train, ivf_training_sample
from sampling.search.pq import PQ_CENTROIDS, pq_codebook_rows, pq_train
from sampling.search.shards import ASSIGN, SEARCH, SHARDED_KINDS, SearchPlan, atomic_save, folder_prepare, shard_run
from sampling.selectors import SplitItems, split_items_save

logger = logging.getLogger(__name__)

SPLIT_FILE = "split.npz"
# What a shard's delivery came to (the task retries on RETRY).
DONE, SKIPPED, RETRY, FAILED = "done", "skipped", "retry", "failed"


def uses_chord(n: int, config: IndexConfig) -> bool:
    """Whether a batch whose searched spaces have ``n`` rows searches in a chord: tasks
    on workers, PostgreSQL (its runner locks) and a result backend (the chord counts
    its shards there), for exact, IVF or IVF-PQ search, from ``chord_min_rows`` rows on."""
    return (
        not settings.CELERY_TASK_ALWAYS_EAGER
        and bool(settings.CELERY_RESULT_BACKEND)
        and connection.vendor == "postgresql"
        and config.kind_for(n) in SHARDED_KINDS
        and n >= config.chord_min_rows
    )


def run_token(batch: SamplingBatch) -> str:
    """Which run of a batch this is: its start. A batch started again is a new run, and
    tasks of an earlier run (late, redelivered) find the token changed and do nothing."""
    return batch.started_at.isoformat()


def run_folder(batch: SamplingBatch) -> Path:
    stamp = int(batch.started_at.timestamp() * 1_000_000)
    return Path(settings.DATA_DIR) / "sampling" / "runs" / f"batch-{batch.pk}-{stamp}"


def space_folder(batch: SamplingBatch, space: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", space)[:40]
    return run_folder(batch) / f"{safe}-{hashlib.sha1(space.encode()).hexdigest()[:8]}"


def run_folder_remove(batch: SamplingBatch) -> None:
    """The run's folder goes once the run ended (unless SAMPLING_KEEP_RUN_FOLDERS)."""
    if settings.SAMPLING_KEEP_RUN_FOLDERS or batch.started_at is None:
        return
    shutil.rmtree(run_folder(batch), ignore_errors=True)


class SpaceSearch(NamedTuple):
    """One space's search as a chord prepares it: its vectors float32 (n, d), plan, and
    the IVF cells and IVF-PQ codebook it needs (None when it does not)."""

    vectors: np.ndarray
    plan: SearchPlan
    cells: np.ndarray | None = None
    codebook: np.ndarray | None = None


def stored_cells(space: EmbeddingSpace, x: np.ndarray, config: IndexConfig) -> tuple[np.ndarray, dict]:
    """IVF cells for ``x`` (a space's vectors for a split, or their caption means),
    trained once and kept beside the space's vectors under a digest of the training
    sample and the training settings: the cells are a function of those alone.
    Returns (cells float32 (nlist, d), what was done: file, trained, seconds)."""
    sample = ivf_training_sample(x, config)
    nlist = config.nlist_for(x.shape[0])
    key = _digest(sample, f"{nlist}:{config.ivf_niter}:{config.seed}")
    return _stored(
        Path(space.vectors_path).parent / "ivf-cells" / f"{key}.npy",
        (nlist, x.shape[1]),
        lambda: ivf_train(sample, nlist, config),
    )


def stored_codebook(
    space: EmbeddingSpace, x: np.ndarray, cells: np.ndarray, config: IndexConfig
) -> tuple[np.ndarray, dict]:
    """The IVF-PQ codebook for ``x`` in ``cells``, trained once and kept beside the
    space's vectors under a digest of its training rows, the cells and the settings.
    Returns (codebook float32 (m, 256, d // m), what was done: file, trained, seconds)."""
    m = config.pq_m_for(x.shape[1])
    rows = pq_codebook_rows(x, config)
    key = _digest(rows, f"{m}:{config.seed}", cells)
    return _stored(
        Path(space.vectors_path).parent / "ivfpq-codebooks" / f"{key}.npy",
        (m, PQ_CENTROIDS, x.shape[1] // m),
        lambda: pq_train(rows, cells, m, config.seed),
    )


def _digest(*parts) -> str:
    key = hashlib.blake2b(digest_size=16)
    for part in parts:
        key.update(part.encode() if isinstance(part, str) else np.ascontiguousarray(part).tobytes())
    return key.hexdigest()


def _stored(path: Path, shape: tuple, train) -> tuple[np.ndarray, dict]:
    """The array stored at ``path`` if it has ``shape``, else ``train()``'s, stored there."""
    started = time.perf_counter()
    if path.is_file():
        array = np.load(path)
        if array.shape == shape:
            return array, {"file": path.name, "trained": False, "seconds": round(time.perf_counter() - started, 3)}
    array = train()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_save(path, array)
    return array, {"file": path.name, "trained": True, "seconds": round(time.perf_counter() - started, 3)}


def chord_start(batch: SamplingBatch, plans: dict[str, SpaceSearch], items: SplitItems) -> dict:
    """Write each space's run folder, the split's items (the merge selects from the
    same rows) and the shard rows, then queue the first stage's chord. plans: space
    name -> its search. Returns what the batch records of the chord."""
    run_folder(batch).mkdir(parents=True, exist_ok=True)
    split_items_save(items, run_folder(batch) / SPLIT_FILE)
    rows = []
    for name, (vectors, plan, cells, codebook) in plans.items():
        folder_prepare(space_folder(batch, name), vectors, plan, cells, codebook)
        for stage in plan.stages():
            for number, (start, stop) in enumerate(plan.ranges()):
                rows.append(
                    SamplingShard(batch=batch, space=name, stage=stage, number=number, row_start=start, row_stop=stop)
                )
    SamplingShard.objects.bulk_create(rows)
    first = ASSIGN if any(row.stage == ASSIGN for row in rows) else SEARCH
    token = run_token(batch)
    transaction.on_commit(lambda: stage_launch(batch.pk, first, token))
    return {
        "mode": "chord",
        "vectors": {name: search.plan.vectors_file or "copied to the run folder" for name, search in plans.items()},
        "shards": {stage: sum(row.stage == stage for row in rows) for stage in (ASSIGN, SEARCH)},
        "shard_rows": next(iter(plans.values())).plan.shard_rows,
    }


def stage_launch(batch_id: int, stage: str, token: str) -> None:
    """Queue one stage's shards as a chord (once: a repeated call finds them queued):
    after assign comes search, after search the merge."""
    from celery import chord

    if not SamplingShard.objects.filter(batch_id=batch_id, stage=stage, queued_at__isnull=True).update(
        queued_at=timezone.now()
    ):
        return
    shard_ids = list(
        SamplingShard.objects.filter(batch_id=batch_id, stage=stage)
        .order_by("space", "number")
        .values_list("pk", flat=True)
    )
    then = (
        task_signature("sampling.tasks.next_sampling_stage", batch_id, SEARCH, token)
        if stage == ASSIGN
        else task_signature("sampling.tasks.merge_sampling_batch", batch_id, token)
    )
    chord([task_signature("sampling.tasks.run_sampling_shard", shard_id) for shard_id in shard_ids], then).delay()


def stage_next(batch_id: int, stage: str, token: str) -> bool:
    """Queue ``stage`` if the batch's run ``token`` still runs in a chord and the stage
    before it finished; False otherwise (a failed or restarted batch stops here)."""
    if not _chord_running(batch_id, token):
        return False
    if SamplingShard.objects.filter(batch_id=batch_id, finished_at__isnull=True).exclude(stage=stage).exists():
        return False
    stage_launch(batch_id, stage, token)
    return True


def shard_work(shard_id: int) -> str:
    """One delivery of a shard: count the attempt, run it from the run folder, record it.

    An error asks for a retry (RETRY) until the attempt limit; past it, the batch fails
    with the shard named and its run folder removed (none of it reached the database).
    """
    max_attempts = index_config().shard_max_attempts
    with transaction.atomic():
        # A restarted batch's new run deleted its earlier run's shard rows.
        shard = SamplingShard.objects.select_for_update().select_related("batch").filter(pk=shard_id).first()
        if shard is None or shard.finished_at is not None or not _chord_running(shard.batch_id, run_token(shard.batch)):
            return SKIPPED
        shard.attempts += 1
        shard.worker = runner_name()
        shard.started_at = timezone.now()
        shard.save(update_fields=["attempts", "worker", "started_at"])
    if shard.attempts > max_attempts:
        _fail(shard, f"was taken {shard.attempts - 1} times without finishing (its worker died each time?)")
        return FAILED
    started = time.perf_counter()
    measured = _peak_rss_reset()
    try:
        shard_run(space_folder(shard.batch, shard.space), shard.stage, shard.number)
    except Exception as exc:
        logger.exception("%s failed", shard)
        if shard.attempts >= max_attempts:
            _fail(shard, f"failed on attempt {shard.attempts}: {type(exc).__name__}: {exc}")
            return FAILED
        return RETRY
    SamplingShard.objects.filter(pk=shard_id).update(
        finished_at=timezone.now(),
        seconds=round(time.perf_counter() - started, 3),
        peak_rss_mib=process_memory_mib("VmHWM") if measured else None,
    )
    _progress(shard.batch_id)
    return DONE


def _peak_rss_reset() -> bool:
    """Start this process's peak resident memory afresh from what it holds now (Linux),
    so that a shard's peak is its own, not the largest of all this pool process ran:
    its start's resident memory plus what it added. False where it cannot (then the
    shard records no peak rather than the process's)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def process_memory_mib(field: str, pid: int | str = "self") -> int | None:
    """A memory line of /proc/<pid>/status in MiB (VmHWM: peak resident memory since the
    last reset; RssAnon: anonymous memory now); None off Linux or for a gone process."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    found = re.search(rf"^{field}:\s+(\d+) kB", status, re.MULTILINE)
    return int(found.group(1)) // 1024 if found else None


def chord_alive(batch: SamplingBatch) -> bool:
    """A batch handed on to its chord still works while a shard started or finished
    within SAMPLING_CHORD_STALL_SECONDS (a task lost with its worker returns to the
    queue within Celery's visibility timeout, which that setting exceeds)."""
    last = SamplingShard.objects.filter(batch=batch).aggregate(
        queued=Max("queued_at"), started=Max("started_at"), finished=Max("finished_at")
    )
    moments = [moment for moment in (batch.started_at, *last.values()) if moment is not None]
    if not moments:
        return False
    return timezone.now() - max(moments) < timedelta(seconds=settings.SAMPLING_CHORD_STALL_SECONDS)


def shards_summary(batch: SamplingBatch) -> dict:
    """Per stage: shards, finished, attempts beyond the first, slowest seconds; workers."""
    shards = list(
        SamplingShard.objects.filter(batch=batch).values(
            "stage", "attempts", "finished_at", "seconds", "worker", "peak_rss_mib"
        )
    )
    summary: dict = {}
    for stage in (ASSIGN, SEARCH):
        mine = [shard for shard in shards if shard["stage"] == stage]
        if mine:
            seconds = [shard["seconds"] for shard in mine if shard["seconds"] is not None]
            memory = [shard["peak_rss_mib"] for shard in mine if shard["peak_rss_mib"] is not None]
            summary[stage] = {
                "shards": len(mine),
                "finished": sum(shard["finished_at"] is not None for shard in mine),
                "retried": sum(max(0, shard["attempts"] - 1) for shard in mine),
                "shard_s_max": round(max(seconds), 3) if seconds else None,
                "shard_s_sum": round(sum(seconds), 3),
                "peak_rss_mib_max": max(memory) if memory else None,
            }
    summary["workers"] = sorted({shard["worker"].rpartition(":")[0] or "?" for shard in shards if shard["worker"]})
    return summary


def _chord_running(batch_id: int, token: str) -> bool:
    """The batch runs in a chord, and it is the run ``token`` (not a later one)."""
    return SamplingBatch.objects.filter(
        pk=batch_id,
        status=JobStatus.RUNNING,
        runner__startswith=DETACHED,
        started_at=datetime.fromisoformat(token),
    ).exists()


def _progress(batch_id: int) -> None:
    total = SamplingShard.objects.filter(batch_id=batch_id).count()
    done = SamplingShard.objects.filter(batch_id=batch_id, finished_at__isnull=False).count()
    SamplingBatch.objects.filter(pk=batch_id, status=JobStatus.RUNNING).update(
        progress_done=1 + done,
        progress_total=total + 2,
        progress_message=f"searching in a chord: {done} of {total} shards done",
    )


def _fail(shard: SamplingShard, problem: str) -> None:
    # Only the shard's own run: a later run of the batch goes on.
    if _chord_running(shard.batch_id, run_token(shard.batch)) and run_fail(
        BATCH_RUNS,
        shard.batch_id,
        f"{shard.stage} shard {shard.number} of space {shard.space!r} {problem}; "
        "no pairs were written. Start the batch again.",
    ):
        run_folder_remove(shard.batch)


def shards_lines(batch: SamplingBatch) -> list[str]:
    """A chord-run batch's shards in words, a line per stage (none for other batches)."""
    summary = shards_summary(batch)
    lines = []
    for stage in (ASSIGN, SEARCH):
        if stage in summary:
            part = summary[stage]
            retried = f", {part['retried']} retried" if part["retried"] else ""
            slowest = f", slowest {part['shard_s_max']} s" if part["shard_s_max"] is not None else ""
            memory = f", peak memory {part['peak_rss_mib_max']:,} MiB" if part["peak_rss_mib_max"] is not None else ""
            lines.append(f"{stage} shards: {part['finished']} of {part['shards']} done{retried}{slowest}{memory}")
    if lines and summary["workers"]:
        lines.append(f"worker hosts: {', '.join(summary['workers'])}")
    return lines


def _orphan_message(batch: SamplingBatch) -> str:
    if batch.runner.startswith(DETACHED):
        return (
            f"no shard of this batch's chord started or finished for {settings.SAMPLING_CHORD_STALL_SECONDS} s "
            "(its workers gone, or its tasks lost); no pairs were written. Start the batch again."
        )
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
    detached_alive=chord_alive,
    after_orphaned=run_folder_remove,
)


def index_config() -> IndexConfig:
    """The search configuration from settings.SAMPLING_INDEX (checked at start-up)."""
    from django.conf import settings

    return IndexConfig.from_mapping(settings.SAMPLING_INDEX)
