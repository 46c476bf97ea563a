"""Export a rated dataset for researchers: CxC CSV (+ raw), JSONL, Parquet, agreement
and a manifest.

Only complete pairs are exported (``ratings_done == ratings_required``); the manifest
counts the incomplete ones left out. Ratings stream from the database through a
server-side cursor (``QuerySet.iterator``) ordered by pair, are cut into blocks that
never split a pair, aggregated (:mod:`annotation.aggregation`) and handed to the
writers (:mod:`annotation.exporters`), so memory stays flat with the dataset's size.

Files are written into a hidden staging folder beside the destination, which is
renamed onto the destination only when everything (manifest last) is complete: a
failed export leaves nothing under the final names.

Rater ids are pseudonyms: an HMAC-SHA256 of the user id keyed with ``SECRET_KEY`` and
salted with the dataset id, stable across exports of a dataset, unlinkable across
datasets, and changed if ``SECRET_KEY`` is rotated.
"""

from __future__ import annotations

import glob
import json
import logging
import math
import os
import shutil
import subprocess
import tempfile
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import Count, F, QuerySet, Sum
from django.utils import timezone
from django.utils.crypto import salted_hmac

from annotation.aggregation import (
    CONFIDENCE,
    POSITIVE_THRESHOLDS,
    IntervalAlpha,
    RaterAgreement,
    aggregate_pairs,
    leave_one_out_means,
    pad_ragged,
    ragged_positions,
)
from annotation.errors import Conflict, DomainError, NotFound
from annotation.exporters import (
    FORMATS,
    TASKS,
    ExportBlock,
    ExportFormatError,
    file_stem,
    open_writers,
    parse_formats,
    sha256_file,
)
from annotation.models import Dataset, Job, JobStatus, Pair, Rating, Split
from annotation.services import Progress, job_create
from sampling.models import SamplingBatch

logger = logging.getLogger(__name__)

MANIFEST = "manifest.json"
AGREEMENT = "agreement.json"
FORMAT_NAME = "cxc-annotate export"
FORMAT_VERSION = 1
# Ratings per block: a block is aggregated and written at once, so this bounds memory
# (about 70 MiB above the process's baseline at this size; larger blocks are no faster).
BLOCK_RATINGS = 10_000
# Rows fetched per round trip from the server-side cursor.
FETCH_ROWS = 10_000
_ITEM_KEYS = {
    "STS": ("pair__caption_a__key", "pair__caption_b__key"),
    "SIS": ("pair__image_a__key", "pair__image_b__key"),
    "SITS": ("pair__caption_a__key", "pair__image_a__key"),
}
_PSEUDONYM_SALT = "annotation.export.rater-pseudonym"


class ExportError(DomainError):
    """An export that cannot be carried out as asked. Nothing was written."""

    code = "export_invalid"


def _no_progress(done: int, total: int, message: str) -> None:
    pass


@dataclass(frozen=True)
class ExportSummary:
    out: str
    files: list[dict]
    pairs: int
    ratings: int
    splits: list[str]
    formats: list[str]


# --- validation ------------------------------------------------------------------------


@dataclass(frozen=True)
class ExportPlan:
    dataset: Dataset
    splits: list[Split]
    formats: list[str]


def export_plan(
    *, dataset_name: str, splits: Sequence[str] | None = None, formats: Sequence[str] | str = FORMATS
) -> ExportPlan:
    """Check an export request: the dataset, its splits (default: every split that has
    pairs) and the formats. Raises NotFound / ExportError naming the problem."""
    dataset = Dataset.objects.filter(name=dataset_name).first()
    if dataset is None:
        raise NotFound(f"no dataset named {dataset_name!r}")
    try:
        chosen_formats = parse_formats(formats if isinstance(formats, str) else list(formats))
    except ExportFormatError as exc:
        raise ExportError(str(exc)) from exc
    available = {split.name: split for split in Split.objects.filter(dataset=dataset).order_by("name")}
    if splits:
        names = list(dict.fromkeys(name.strip() for name in splits if name.strip()))
        unknown = [name for name in names if name not in available]
        if unknown:
            raise ExportError(
                f"dataset {dataset_name!r} has no split {unknown[0]!r}; its splits: {', '.join(available) or 'none'}"
            )
    else:
        with_pairs = set(Pair.objects.filter(dataset=dataset).values_list("split__name", flat=True).distinct())
        names = [name for name in available if name in with_pairs]
        if not names:
            raise ExportError(f"dataset {dataset_name!r} has no pairs to export")
    for name in names:
        try:
            file_stem("STS", name)
        except ExportFormatError as exc:
            raise ExportError(str(exc)) from exc
    return ExportPlan(dataset=dataset, splits=[available[name] for name in names], formats=chosen_formats)


def _check_destination(out: Path, overwrite: bool) -> None:
    if out.exists() and not out.is_dir():
        raise ExportError(f"{out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()):
        if not overwrite:
            raise ExportError(f"{out} is not empty; choose a new folder, or overwrite to replace an earlier export")
        if not (out / MANIFEST).is_file():
            raise ExportError(f"{out} is not empty and holds no earlier export ({MANIFEST}); it is left alone")


# --- the export ------------------------------------------------------------------------


def dataset_export(
    *,
    dataset_name: str,
    out_dir: str | Path,
    splits: Sequence[str] | None = None,
    formats: Sequence[str] | str = FORMATS,
    overwrite: bool = False,
    progress: Progress = _no_progress,
    block_ratings: int = BLOCK_RATINGS,
    job_id: int | None = None,
) -> ExportSummary:
    """Export the complete pairs of a dataset's splits into folder ``out_dir``.

    ``out_dir`` must be new or empty, or (with ``overwrite``) hold an earlier export,
    which is replaced only once the new one is complete. Per split and task the chosen
    formats' files, plus ``agreement.json`` and ``manifest.json`` (counts, incomplete
    pairs left out, batch configurations, agreement summary, checksums, code version).
    """
    if block_ratings < 1:
        raise ExportError(f"block size must be positive, got {block_ratings}")
    plan = export_plan(dataset_name=dataset_name, splits=splits, formats=formats)
    out = Path(out_dir).expanduser().resolve()
    _check_destination(out, overwrite)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=_staging_prefix(out, job_id), suffix=".partial", dir=out.parent))
    try:
        os.chmod(staging, 0o755)
        run = _ExportRun(plan=plan, folder=staging, progress=progress, block_ratings=block_ratings)
        run.write_all()
        _publish(staging, out, overwrite)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    logger.info("exported %s to %s: %d pairs, %d ratings", dataset_name, out, run.pairs, run.ratings)
    manifest = out / MANIFEST
    files = [
        *run.files,
        {"name": MANIFEST, "rows": None, "split": None, "task": None, "bytes": manifest.stat().st_size},
    ]
    files[-1]["sha256"] = sha256_file(manifest)
    return ExportSummary(
        out=str(out),
        files=files,
        pairs=run.pairs,
        ratings=run.ratings,
        splits=[split.name for split in plan.splits],
        formats=plan.formats,
    )


def _staging_prefix(out: Path, job_id: int | None) -> str:
    # The job id in the name lets a dead job's folder be told from that of a job writing
    # to the same destination now.
    return f".{out.name}." if job_id is None else f".{out.name}.job{job_id}."


def export_staging_remove(*, out_dir: str | Path, job_id: int) -> list[Path]:
    """Remove the staging folders export job ``job_id`` left half-written in ``out_dir``'s
    parent when its process died (the final folder only ever appears complete).
    Returns them."""
    out = Path(out_dir).expanduser().resolve()
    if not out.parent.is_dir():
        return []
    left = sorted(out.parent.glob(f"{glob.escape(_staging_prefix(out, job_id))}*.partial"))
    for folder in left:
        shutil.rmtree(folder, ignore_errors=True)
    return left


def _publish(staging: Path, out: Path, overwrite: bool) -> None:
    """Move the finished staging folder onto ``out`` (a rename: all files appear at once)."""
    _check_destination(out, overwrite)
    if not out.exists():
        staging.rename(out)
        return
    if not any(out.iterdir()):
        out.rmdir()
        staging.rename(out)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.parent))
    old.rmdir()
    out.rename(old)
    try:
        staging.rename(out)
    except BaseException:
        old.rename(out)
        raise
    shutil.rmtree(old, ignore_errors=True)


@dataclass
class _Tally:
    pairs: int = 0
    ratings: int = 0
    positive: int = 0
    score_sum: float = 0.0

    def as_dict(self) -> dict:
        mean = self.score_sum / self.pairs if self.pairs else None
        return {"pairs": self.pairs, "ratings": self.ratings, "positive": self.positive, "mean_score": mean}


@dataclass
class _ExportRun:
    plan: ExportPlan
    folder: Path
    progress: Progress
    block_ratings: int
    pairs: int = 0
    ratings: int = 0
    files: list[dict] = field(default_factory=list)
    _tallies: dict[tuple[str, str, str], _Tally] = field(default_factory=dict)
    _alpha_task: dict[str, IntervalAlpha] = field(default_factory=dict)
    _alpha_batch: dict[tuple[int, str], IntervalAlpha] = field(default_factory=dict)
    _raters: dict[str, RaterAgreement] = field(default_factory=dict)
    _pseudonyms: dict[int, str] = field(default_factory=dict)

    def write_all(self) -> None:
        expected = _complete_pair_counts(self.plan)
        total = sum(expected.values())
        self.progress(0, total, "exporting")
        for split in self.plan.splits:
            for task in TASKS:
                streamed = self._write_task(split, task, total)
                if streamed < expected.get((split.id, task), 0):
                    raise ExportError(
                        f"{task} pairs of split {split.name!r}: {expected[(split.id, task)]} are marked complete "
                        f"but only {streamed} have their ratings; the pair counters are inconsistent "
                        "(or ratings were removed during the export)"
                    )
        self._write_json(AGREEMENT, self._agreement())
        self._checksum_files()
        self._write_json(MANIFEST, self._manifest())
        self.progress(self.pairs, total, "done")

    def _write_task(self, split: Split, task: str, total: int) -> int:
        writers = open_writers(self.folder, task, split.name, self.plan.formats)
        streamed = 0
        try:
            for rows in _blocks(_rating_rows(self.plan.dataset, split, task), self.block_ratings):
                block, batch_ids = self._block(rows, task)
                for writer in writers:
                    writer.write(block)
                self._account(split.name, task, block, batch_ids)
                streamed += block.pairs
                self.pairs += block.pairs
                self.ratings += block.ratings
                self.progress(self.pairs, total, f"writing {task} pairs of {split.name}")
        finally:
            for writer in writers:
                writer.close()
        for writer in writers:
            self.files.append({"name": writer.name, "rows": writer.rows, "split": split.name, "task": task})
        return streamed

    def _block(self, rows: list[tuple], task: str) -> tuple[ExportBlock, np.ndarray]:
        pair_id, required, batch, method, key1, key2, rater, score, time_ms = zip(*rows, strict=True)
        pair_ids = np.array(pair_id, dtype=np.int64)
        starts = np.flatnonzero(np.concatenate(([True], pair_ids[1:] != pair_ids[:-1])))
        counts = np.diff(np.append(starts, pair_ids.shape[0]))
        wanted = np.array(required, dtype=np.int64)[starts]
        wrong = np.flatnonzero(counts != wanted)
        if wrong.size:
            at = int(wrong[0])
            raise ExportError(
                f"pair #{int(pair_ids[starts[at]])} is marked complete with {int(wanted[at])} ratings "
                f"but has {int(counts[at])}; the pair counters are inconsistent"
            )
        first = starts.tolist()
        for rater_id in set(rater) - self._pseudonyms.keys():
            self._pseudonyms[rater_id] = self._pseudonym(rater_id)
        scores = np.array(score, dtype=np.float64)
        padded = pad_ragged(scores, counts)
        stats = aggregate_pairs(padded, task=task)
        batch_ids = np.array(batch, dtype=np.int64)[starts]
        block = ExportBlock(
            item1=[key1[i] for i in first],
            item2=[key2[i] for i in first],
            sampling_method=[method[i] for i in first],
            batch_id=batch_ids,
            stats=stats,
            pair_index=np.repeat(np.arange(starts.shape[0]), counts),
            rater_id=[self._pseudonyms[r] for r in rater],
            score=scores,
            time_on_item_ms=np.array(time_ms, dtype=np.int64),
        )
        self._agree(task, padded, batch_ids, counts, np.array(rater, dtype=np.int64), block)
        return block, batch_ids

    def _agree(
        self,
        task: str,
        padded: np.ndarray,
        batch_ids: np.ndarray,
        counts: np.ndarray,
        raters: np.ndarray,
        block: ExportBlock,
    ) -> None:
        """Feed one block into the agreement accumulators: ``padded: float (n, r)``
        NaN-padded scores, ``batch_ids``/``counts: int (n,)`` per pair, ``raters: int (m,)``."""
        self._alpha_task.setdefault(task, IntervalAlpha()).add(padded)
        for batch_id in np.unique(batch_ids).tolist():
            self._alpha_batch.setdefault((batch_id, task), IntervalAlpha()).add(padded[batch_ids == batch_id])
        rows, cols = ragged_positions(counts)
        others = leave_one_out_means(padded)[rows, cols]
        self._raters.setdefault(task, RaterAgreement()).add(raters, block.score, others, block.time_on_item_ms)

    def _account(self, split: str, task: str, block: ExportBlock, batch_ids: np.ndarray) -> None:
        stats = block.stats
        for method, count, positive, score, batch_id in zip(
            block.sampling_method,
            stats.count.tolist(),
            stats.positive.tolist(),
            stats.agg_score.tolist(),
            batch_ids.tolist(),
            strict=True,
        ):
            for key in ((split, task, method), ("batch", str(batch_id), method)):
                tally = self._tallies.get(key)
                if tally is None:
                    tally = self._tallies[key] = _Tally()
                tally.pairs += 1
                tally.ratings += count
                tally.positive += positive
                tally.score_sum += score

    def _pseudonym(self, rater_id: int) -> str:
        digest = salted_hmac(
            _PSEUDONYM_SALT, f"{self.plan.dataset.id}:{rater_id}", secret=settings.SECRET_KEY, algorithm="sha256"
        )
        return "r" + digest.hexdigest()[:16]

    def _write_json(self, name: str, payload: dict) -> None:
        with (self.folder / name).open("w", encoding="utf-8") as handle:
            json.dump(_json_safe(payload), handle, indent=2, ensure_ascii=False, allow_nan=False)
            handle.write("\n")

    def _checksum_files(self) -> None:
        self.files.append({"name": AGREEMENT, "rows": None, "split": None, "task": None})
        for entry in self.files:
            path = self.folder / entry["name"]
            entry["bytes"] = path.stat().st_size
            entry["sha256"] = sha256_file(path)

    def _agreement(self) -> dict:
        by_task = {task: _alpha_dict(self._alpha_task[task]) for task in TASKS if task in self._alpha_task}
        by_batch = [
            {"batch_id": batch_id, "task": task, **_alpha_dict(alpha)}
            for (batch_id, task), alpha in sorted(self._alpha_batch.items())
        ]
        raters = {
            task: [
                {
                    "rater_id": self._pseudonyms[summary.rater],
                    "ratings": summary.ratings,
                    "compared": summary.compared,
                    "loo_correlation": summary.loo_correlation,
                    "mean_bias": summary.mean_bias,
                    "median_time_ms": summary.median_time_ms,
                }
                for summary in sorted(self._raters[task].summaries(), key=lambda s: self._pseudonyms[s.rater])
            ]
            for task in TASKS
            if task in self._raters
        }
        return {
            "definitions": {
                "alpha_interval": "Krippendorff's alpha, interval metric, over complete pairs",
                "loo_correlation": "Pearson r of a rater's scores with the mean of the other raters on the same pairs",
                "mean_bias": "mean of (rater's score - mean of the other raters on the same pair)",
                "median_time_ms": "median time on item of the rater's exported ratings",
            },
            "by_task": by_task,
            "by_batch": by_batch,
            "raters": raters,
        }

    def _manifest(self) -> dict:
        plan = self.plan
        split_names = [split.name for split in plan.splits]
        counts: dict = {}
        for split in split_names:
            counts[split] = {}
            for task in TASKS:
                methods = {
                    method: tally.as_dict()
                    for (s, t, method), tally in sorted(self._tallies.items())
                    if s == split and t == task
                }
                total = _Tally()
                for (s, t, _), tally in self._tallies.items():
                    if s == split and t == task:
                        total.pairs += tally.pairs
                        total.ratings += tally.ratings
                        total.positive += tally.positive
                        total.score_sum += tally.score_sum
                counts[split][task] = {**total.as_dict(), "methods": methods}
        batches = []
        for batch in SamplingBatch.objects.filter(dataset=plan.dataset, split__in=plan.splits).select_related("split"):
            exported = {
                method: tally.as_dict()
                for (kind, batch_id, method), tally in sorted(self._tallies.items())
                if kind == "batch" and batch_id == str(batch.id)
            }
            batches.append(
                {
                    "id": batch.id,
                    "split": batch.split.name,
                    "source": batch.source,
                    "methods": batch.methods,
                    "k": batch.k,
                    "spaces": batch.spaces,
                    "ratings_per_pair": batch.ratings_per_pair,
                    "seed": batch.seed,
                    "priority": batch.priority,
                    "status": batch.status,
                    "pairs_per_method": batch.pairs_per_method,
                    "created_at": batch.created_at.isoformat(),
                    "exported": exported,
                }
            )
        batches.sort(key=lambda entry: entry["id"])
        agreement = {task: _alpha_dict(self._alpha_task[task]) for task in TASKS if task in self._alpha_task}
        return {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "dataset": plan.dataset.name,
            "splits": split_names,
            "formats": plan.formats,
            "created_at": timezone.now().isoformat(),
            "code_version": code_version(),
            "scoring": {
                "scale": [0, 5],
                "agg_score": "mean of the pair's ratings, rounded to two decimals",
                "positive_thresholds": POSITIVE_THRESHOLDS,
                "positive": "agg_score >= the task's threshold",
                "std": "sample standard deviation (ddof=1)",
                "interval": f"{CONFIDENCE:.0%} Student t interval of the mean",
                "rater_id": "HMAC-SHA256 pseudonym of the rater, stable across exports of this dataset",
                "exported_pairs": "complete pairs only: every required rating present",
            },
            "totals": {"pairs": self.pairs, "ratings": self.ratings},
            "counts": counts,
            "left_out": _incomplete_counts(plan),
            "batches": batches,
            "agreement": agreement,
            "files": self.files,
        }


def _alpha_dict(alpha: IntervalAlpha) -> dict:
    return {"alpha_interval": alpha.alpha, "units": alpha.units, "values": alpha.values}


def _json_safe(value):
    """NaN has no JSON spelling: a statistic that does not exist is written as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(item) for item in value]
    return value


# --- reads for the export --------------------------------------------------------------


def _complete_pairs(plan: ExportPlan) -> QuerySet[Pair]:
    return Pair.objects.filter(dataset=plan.dataset, split__in=plan.splits, ratings_done=F("ratings_required"))


def _complete_pair_counts(plan: ExportPlan) -> dict[tuple[int, str], int]:
    rows = _complete_pairs(plan).order_by().values("split_id", "kind").annotate(n=Count("id"))
    return {(row["split_id"], row["kind"]): row["n"] for row in rows}


def _incomplete_counts(plan: ExportPlan) -> dict:
    """Pairs left out because some of their ratings are still missing, per split, task
    and method, with the ratings they hold so far."""
    rows = (
        Pair.objects.filter(dataset=plan.dataset, split__in=plan.splits, ratings_done__lt=F("ratings_required"))
        .order_by()
        .values("split__name", "kind", "sampling_method")
        .annotate(pairs=Count("id"), ratings=Sum("ratings_done"))
    )
    out: dict = {split.name: {} for split in plan.splits}
    for row in sorted(rows, key=lambda r: (r["split__name"], r["kind"], r["sampling_method"])):
        task = out[row["split__name"]].setdefault(row["kind"], {})
        task[row["sampling_method"]] = {"pairs": row["pairs"], "ratings": row["ratings"] or 0}
    return out


def _rating_rows(dataset: Dataset, split: Split, task: str) -> Iterator[tuple]:
    """Ratings of the complete pairs of one split and task, ordered by pair, as tuples
    (pair id, ratings required, batch id, method, item1 key, item2 key, rater id, score,
    time on item ms), from a server-side cursor on PostgreSQL."""
    first, second = _ITEM_KEYS[task]
    return (
        Rating.objects.filter(
            pair__dataset=dataset,
            pair__split=split,
            pair__kind=task,
            pair__ratings_done=F("pair__ratings_required"),
        )
        .order_by("pair_id", "id")
        .values_list(
            "pair_id",
            "pair__ratings_required",
            "pair__batch_id",
            "pair__sampling_method",
            first,
            second,
            "rater_id",
            "score",
            "time_on_item_ms",
        )
        .iterator(chunk_size=FETCH_ROWS)
    )


def _blocks(rows: Iterator[tuple], size: int) -> Iterator[list[tuple]]:
    """Cut rows ordered by pair id (first field) into lists of about ``size`` rows that
    never split a pair."""
    carry: list[tuple] = []
    while True:
        chunk = list(islice(rows, size))
        if len(chunk) < size:
            if carry or chunk:
                yield carry + chunk
            return
        buffered = carry + chunk
        last = buffered[-1][0]
        cut = len(buffered)
        while cut > 0 and buffered[cut - 1][0] == last:
            cut -= 1
        if cut == 0:
            carry = buffered
            continue
        yield buffered[:cut]
        carry = buffered[cut:]


# --- code version ----------------------------------------------------------------------


def code_version() -> dict:
    """The project version (pyproject.toml) and, when the code runs from a git checkout,
    the commit and whether the working tree had changes. ``None`` where unknown."""
    base = Path(settings.BASE_DIR)
    version = None
    pyproject = base / "pyproject.toml"
    if pyproject.is_file():
        with pyproject.open("rb") as handle:
            version = tomllib.load(handle).get("project", {}).get("version")
    commit, dirty = None, None
    try:
        head = subprocess.run(
            ["git", "-C", str(base), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=False
        )
        if head.returncode == 0:
            commit = head.stdout.strip()
            status = subprocess.run(
                ["git", "-C", str(base), "status", "--porcelain", "--untracked-files=no"],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
            dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired):
        commit = None
    return {"version": version, "git_commit": commit, "git_dirty": dirty}


# --- export jobs (API and Celery) ------------------------------------------------------


def export_job_create(
    *, dataset_name: str, splits: Sequence[str] | None, formats: Sequence[str] | str, created_by
) -> Job:
    """Check the request and create a pending export job writing to its own folder
    under ``EXPORT_DIR``. The caller queues it once the transaction commits."""
    plan = export_plan(dataset_name=dataset_name, splits=splits, formats=formats)
    with transaction.atomic():
        job = job_create(
            kind=Job.Kind.EXPORT_DATASET,
            params={
                "dataset": plan.dataset.name,
                "splits": [split.name for split in plan.splits],
                "formats": plan.formats,
            },
            created_by=created_by,
        )
        job.params["out"] = str(Path(settings.EXPORT_DIR).resolve() / f"export-{job.id}")
        job.save(update_fields=["params"])
    return job


def run_export_params(params: dict, progress: Progress) -> dict:
    """The job runner: export as the job's params say; returns the job's result."""
    summary = dataset_export(
        dataset_name=params["dataset"],
        out_dir=params["out"],
        splits=params.get("splits") or None,
        formats=params.get("formats") or FORMATS,
        overwrite=bool(params.get("overwrite")),
        progress=progress,
        job_id=params.get("job_id"),
    )
    return {
        "out": summary.out,
        "files": summary.files,
        "pairs": summary.pairs,
        "ratings": summary.ratings,
        "splits": summary.splits,
        "formats": summary.formats,
    }


def export_job_list(*, dataset_name: str | None = None) -> QuerySet[Job]:
    jobs = Job.objects.filter(kind=Job.Kind.EXPORT_DATASET).order_by("-created_at", "-id")
    if dataset_name:
        jobs = jobs.filter(params__dataset=dataset_name)
    return jobs


def export_job_get(*, job_id: int) -> Job:
    job = Job.objects.filter(pk=job_id, kind=Job.Kind.EXPORT_DATASET).first()
    if job is None:
        raise NotFound(f"no export job #{job_id}")
    return job


def export_files(*, job: Job) -> list[dict]:
    """Files a finished export job offers (data files, agreement, manifest) with their
    size and checksum; empty until the job has succeeded."""
    if job.status != JobStatus.SUCCEEDED:
        return []
    return list(job.result.get("files", []))


def export_file_path(*, job: Job, name: str) -> Path:
    """The path of one file of a finished export job. Raises Conflict while the job has
    not succeeded and NotFound for a name the job did not write or a removed file."""
    if job.status != JobStatus.SUCCEEDED:
        raise Conflict(f"export job #{job.id} is {job.status}; files can be downloaded once it has succeeded")
    if name not in {entry["name"] for entry in export_files(job=job)}:
        raise NotFound(f"export job #{job.id} has no file {name!r}")
    path = Path(job.result["out"]) / name
    if not path.is_file():
        raise NotFound(f"file {name!r} of export job #{job.id} is no longer on disk")
    return path
