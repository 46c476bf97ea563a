"""Export jobs: an export run in the background from a status row (API and Celery), and
the files a finished one offers."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from django.conf import settings
from django.db import transaction

from annotation.core.errors import Conflict, NotFound
from annotation.core.progress import Progress
from annotation.export.archive import zip_chunks
from annotation.export.formats import FORMATS
from annotation.export.plan import export_plan
from annotation.export.run import dataset_export
from annotation.models import Job, JobStatus
from annotation.runs.jobs import job_create


def export_job_create(
    *, dataset_name: str, splits: Sequence[str] | None, formats: Sequence[str] | str, created_by
) -> Job:
    """Check the request and create a pending export job writing to its own folder
    under ``EXPORT_DIR``. The caller queues it once the transaction commits (see
    ``annotation.jobs.dispatch.export_job_start``, which does both)."""
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


def export_archive_name(*, job: Job) -> str:
    """``<dataset>-export-<job id>``: the zip's name without ``.zip`` and its one folder."""
    return f"{job.params.get('dataset', 'dataset')}-export-{job.id}"


def export_archive(*, job: Job) -> tuple[str, Iterator[bytes]]:
    """The file name and the bytes (made as they are read) of one zip of every file of a
    finished export job. Every file is checked before the first byte, so a missing one is
    a NotFound (as :func:`export_file_path`) rather than a cut-off download."""
    paths = [(entry["name"], export_file_path(job=job, name=entry["name"])) for entry in export_files(job=job)]
    if not paths:
        raise Conflict(f"export job #{job.id} is {job.status}; its zip can be downloaded once it has succeeded")
    folder = export_archive_name(job=job)
    return f"{folder}.zip", zip_chunks(paths, folder=folder)
