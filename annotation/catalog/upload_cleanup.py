"""Uploaded files do not outlive their runs: a run's uploads go when it succeeds, a
failed run's UPLOAD_KEEP_FAILED_DAYS later (kept meanwhile for diagnosis), and an upload
folder no run refers to (a process that died between storing a file and creating its
job) a day after it was made.

Every model of a background run (``BackgroundRun``: jobs, sampling batches) takes part;
each says which files it reads (``input_paths``; ``uploads.upload_paths`` keeps the stored
uploads among them) and shows ``upload_state``.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from django.apps import apps
from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from annotation.catalog.uploads import FOLDER_NAME, upload_discard, upload_paths, uploads_root
from annotation.core.errors import UploadRemoved
from annotation.models import BackgroundRun, JobStatus, UploadState

logger = logging.getLogger(__name__)

# A folder stored moments ago may belong to a request still creating its job; one this
# old that no run refers to was left by a process that died in between.
UNREFERENCED_GRACE = timedelta(days=1)


@dataclass
class PruneSummary:
    runs: list[str] = field(default_factory=list)  # e.g. "job #3", whose files went
    folders: list[str] = field(default_factory=list)  # unreferenced folders removed


def run_models() -> list[type[BackgroundRun]]:
    return [model for model in apps.get_models() if issubclass(model, BackgroundRun)]


def run_uploads_remove(run: BackgroundRun, *, now: datetime | None = None, only_if: Q | None = None) -> bool:
    """Mark a run's uploads removed and remove them. ``only_if``: a further condition
    on the row, checked in the same UPDATE (so a failed run restarted meanwhile keeps
    its files). False, and nothing removed, when the row did not qualify."""
    now = now or timezone.now()
    rows = type(run).objects.filter(pk=run.pk, upload_state=UploadState.STORED)
    if only_if is not None:
        rows = rows.filter(only_if)
    # Marked first: a process dying between the two leaves files no run refers to,
    # which the prune removes, never a run pointing at files that are gone unannounced.
    if not rows.update(upload_state=UploadState.REMOVED, upload_removed_at=now):
        return False
    for path in upload_paths(run):
        upload_discard(path)
    return True


def uploads_prune(*, now: datetime | None = None) -> PruneSummary:
    """Remove the uploads of runs that succeeded (should their runner have died before
    doing it) or failed at least UPLOAD_KEEP_FAILED_DAYS before ``now``, then the upload
    folders no stored run refers to that are older than a day. Idempotent."""
    now = now or timezone.now()
    failed_before = now - timedelta(days=settings.UPLOAD_KEEP_FAILED_DAYS)
    due = Q(status=JobStatus.SUCCEEDED) | Q(status=JobStatus.FAILED, finished_at__lte=failed_before)
    summary = PruneSummary()
    for model in run_models():
        for run in model.objects.filter(due, upload_state=UploadState.STORED).order_by("pk"):
            if run_uploads_remove(run, now=now, only_if=due):
                summary.runs.append(f"{model._meta.verbose_name} #{run.pk}")
    summary.folders = _remove_unreferenced(now=now)
    if summary.runs or summary.folders:
        logger.info("removed the uploads of %s and %d unreferenced folder(s)", summary.runs, len(summary.folders))
    return summary


def _remove_unreferenced(*, now: datetime) -> list[str]:
    root = uploads_root()
    if not root.is_dir():
        return []
    referenced = {
        _folder_of(path)
        for model in run_models()
        for run in model.objects.filter(upload_state=UploadState.STORED)
        for path in upload_paths(run)
    }
    made_before = (now - UNREFERENCED_GRACE).timestamp()
    removed = []
    for folder in sorted(root.iterdir()):
        if not (folder.is_dir() and FOLDER_NAME.match(folder.name)) or folder.name in referenced:
            continue
        if folder.stat().st_mtime <= made_before:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder.name)
    return removed


def _folder_of(path: str) -> str:
    return Path(path).resolve().parent.name


def run_check_uploads_present(run: BackgroundRun, noun: str) -> None:
    """Before a failed run starts again: raise UploadRemoved if its uploads are gone."""
    if run.upload_state != UploadState.REMOVED:
        return
    days = (run.upload_removed_at - run.finished_at).days if run.finished_at else 0
    names = ", ".join(Path(path).name for path in upload_paths(run))
    raise UploadRemoved(
        f"{noun} #{run.pk} cannot start again: the uploaded file ({names}) was removed after {days} days "
        f"(UPLOAD_KEEP_FAILED_DAYS={settings.UPLOAD_KEEP_FAILED_DAYS}); upload it again"
    )
