"""Run import and export jobs from their status row: shared by Celery tasks, the CLI and the admin."""

from __future__ import annotations

from collections.abc import Callable

from django.db import transaction

from annotation.errors import DomainError
from annotation.export import run_export_params
from annotation.models import Job
from annotation.services import (
    Progress,
    dataset_import_karpathy,
    embedding_space_import,
    job_create,
    job_finish,
    job_progress,
    job_start,
)


def _run_import_karpathy(params: dict, progress: Progress) -> dict:
    summary = dataset_import_karpathy(
        path=params["path"],
        name=params["name"],
        images_root=params.get("images_root", ""),
        image_url_prefix=params.get("image_url_prefix", ""),
        splits=params.get("splits") or None,
        key_prefix=params.get("key_prefix") or None,
        progress=progress,
    )
    return {
        "dataset_id": summary.dataset_id,
        "splits": summary.splits,
        "images": summary.images,
        "captions": summary.captions,
    }


def _run_import_embeddings(params: dict, progress: Progress) -> dict:
    space = embedding_space_import(
        dataset_name=params["dataset"],
        space_name=params["space"],
        modality=params["modality"],
        vectors_path=params["vectors_path"],
        ids_path=params["ids_path"],
        model_name=params.get("model_name", ""),
        progress=progress,
    )
    return {"space_id": space.id, "count": space.count, "dimension": space.dimension}


RUNNERS: dict[str, Callable[[dict, Progress], dict]] = {
    Job.Kind.IMPORT_KARPATHY: _run_import_karpathy,
    Job.Kind.IMPORT_EMBEDDINGS: _run_import_embeddings,
    Job.Kind.EXPORT_DATASET: run_export_params,
}


def job_run(*, job_id: int, echo: Progress | None = None) -> Job:
    """Run a pending job; bad input marks it failed with the message (no raise),
    anything unexpected marks it failed and re-raises."""
    job = Job.objects.get(pk=job_id)
    runner = RUNNERS[job.kind]
    job_start(job=job)
    write_progress = job_progress(job.id)

    def progress(done: int, total: int, message: str) -> None:
        write_progress(done, total, message)
        if echo is not None:
            echo(done, total, message)

    try:
        result = runner(job.params, progress)
    except DomainError as exc:
        job_finish(job=job, error=str(exc))
        return job
    except Exception as exc:
        job_finish(job=job, error=f"unexpected error: {exc!r}")
        raise
    job_finish(job=job, result=result)
    return job


def import_job_start(*, kind: str, params: dict, created_by=None) -> Job:
    """Create an import job and queue it for a worker once the row is committed."""
    from annotation.tasks import run_import_job  # tasks import this module

    with transaction.atomic():
        job = job_create(kind=kind, params=params, created_by=created_by)
        transaction.on_commit(lambda: run_import_job.delay(job.id))
    return job
