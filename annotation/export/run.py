"""The export run: rating rows of each split and task stream from the database, are cut
into blocks that never split a pair, aggregated (:mod:`annotation.export.blocks`) and
handed to the writers, so memory stays flat with the dataset's size. Files go into a
staging folder (:mod:`annotation.export.staging`), published only once complete.

Rater ids are pseudonyms: an HMAC-SHA256 of the user id keyed with ``SECRET_KEY`` and
salted with the dataset id, stable across exports of a dataset, unlinkable across
datasets, and changed if ``SECRET_KEY`` is rotated.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.utils.crypto import salted_hmac

from annotation.core.progress import Progress, no_progress
from annotation.export.blocks import ExportAgreement, ExportCounts, block_build, cut_blocks
from annotation.export.formats import AGREEMENT, FORMATS, MANIFEST, TASKS, ExportError
from annotation.export.gold import write_gold_file
from annotation.export.manifest import (
    agreement_payload,
    exclusion_entries,
    files_checksum,
    json_write,
    manifest_payload,
    sha256_file,
)
from annotation.export.plan import ExportPlan, complete_pair_counts, destination_check, export_plan, rating_rows
from annotation.export.rater_model import RATER_MODEL_FILE, ExportRaterModel
from annotation.export.staging import publish, staging_create
from annotation.export.study import write_study_answers
from annotation.export.writers import open_writers
from annotation.models import Split

logger = logging.getLogger(__name__)

# Ratings per block: a block is aggregated and written at once, so this bounds memory
# (about 70 MiB above the process's baseline at this size; larger blocks are no faster).
BLOCK_RATINGS = 10_000
_PSEUDONYM_SALT = "annotation.export.rater-pseudonym"


@dataclass(frozen=True)
class ExportSummary:
    out: str
    files: list[dict]
    pairs: int
    ratings: int
    splits: list[str]
    formats: list[str]


def dataset_export(
    *,
    dataset_name: str,
    out_dir: str | Path,
    splits: Sequence[str] | None = None,
    formats: Sequence[str] | str = FORMATS,
    overwrite: bool = False,
    progress: Progress = no_progress,
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
    destination_check(out, overwrite)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = staging_create(out, job_id)
    try:
        run = _ExportRun(plan=plan, folder=staging, progress=progress, block_ratings=block_ratings)
        run.write_all()
        publish(staging, out, overwrite)
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


@dataclass
class _Pseudonyms:
    """Rater id -> pseudonym for one dataset, computed once per rater."""

    dataset_id: int
    names: dict[int, str] = field(default_factory=dict)

    def cover(self, raters: set[int]) -> dict[int, str]:
        """The mapping, grown to cover ``raters``."""
        for rater_id in raters - self.names.keys():
            digest = salted_hmac(
                _PSEUDONYM_SALT, f"{self.dataset_id}:{rater_id}", secret=settings.SECRET_KEY, algorithm="sha256"
            )
            self.names[rater_id] = "r" + digest.hexdigest()[:16]
        return self.names


@dataclass
class _ExportRun:
    """Writes one plan's files into ``folder``: data files per split and task, then
    ``agreement.json``, checksums, and ``manifest.json`` last."""

    plan: ExportPlan
    folder: Path
    progress: Progress
    block_ratings: int
    pairs: int = 0
    ratings: int = 0
    files: list[dict] = field(default_factory=list)
    not_written: list[dict] = field(default_factory=list)
    counts: ExportCounts = field(default_factory=ExportCounts)
    agreement: ExportAgreement = field(default_factory=ExportAgreement)

    def __post_init__(self) -> None:
        self.pseudonyms = _Pseudonyms(dataset_id=self.plan.dataset.id)
        self.rater_model = ExportRaterModel.fit(self.plan.dataset.id, TASKS)

    def write_all(self) -> None:
        expected = complete_pair_counts(self.plan)
        total = sum(expected.values())
        self.progress(0, total, "exporting")
        for split in self.plan.splits:
            for task in TASKS:
                if not expected.get((split.id, task)):
                    # No empty files: a reader would take them for a task rated to nothing.
                    self.not_written.append({"split": split.name, "task": task, "reason": "no complete pairs"})
                    continue
                streamed = self._write_task(split, task, total)
                if streamed < expected.get((split.id, task), 0):
                    raise ExportError(
                        f"{task} pairs of split {split.name!r}: {expected[(split.id, task)]} are marked complete "
                        f"but only {streamed} have their ratings; the pair counters are inconsistent "
                        "(or ratings were removed during the export)"
                    )
            gold = write_gold_file(self.folder, self.plan.dataset, split, self.pseudonyms.cover)
            if gold is not None:
                self.files.append(gold)
        answers = write_study_answers(self.folder, self.plan.dataset, self.pseudonyms.cover)
        if answers is not None:
            self.files.append(answers)
        json_write(self.folder / AGREEMENT, agreement_payload(self.agreement, self.pseudonyms.names))
        self.files.append({"name": AGREEMENT, "rows": None, "split": None, "task": None})
        json_write(self.folder / RATER_MODEL_FILE, self.rater_model.payload(self.pseudonyms.cover))
        self.files.append({"name": RATER_MODEL_FILE, "rows": None, "split": None, "task": None})
        files_checksum(self.folder, self.files)
        manifest = manifest_payload(
            plan=self.plan,
            counts=self.counts,
            agreement=self.agreement,
            pairs=self.pairs,
            ratings=self.ratings,
            files=self.files,
            not_written=self.not_written,
            exclusions=exclusion_entries(self.plan, self.pseudonyms.cover),
            rater_model=self.rater_model.manifest_entry(),
        )
        json_write(self.folder / MANIFEST, manifest)
        self.progress(self.pairs, total, "done")

    def _write_task(self, split: Split, task: str, total: int) -> int:
        """Write one split and task's files; returns the pairs written."""
        writers = open_writers(self.folder, task, split.name, self.plan.formats)
        streamed = 0
        try:
            for rows in cut_blocks(rating_rows(self.plan.dataset, split, task), self.block_ratings):
                rated = self.rater_model.with_scores(
                    task, block_build(rows, task=task, rater_names=self.pseudonyms.cover)
                )
                for writer in writers:
                    writer.write(rated.block)
                self.counts.add(split=split.name, task=task, block=rated.block)
                self.agreement.add(task=task, rated=rated)
                streamed += rated.block.pairs
                self.pairs += rated.block.pairs
                self.ratings += rated.block.ratings
                self.progress(self.pairs, total, f"writing {task} pairs of {split.name}")
        finally:
            for writer in writers:
                writer.close()
        for writer in writers:
            self.files.append({"name": writer.name, "rows": writer.rows, "split": split.name, "task": task})
        return streamed
