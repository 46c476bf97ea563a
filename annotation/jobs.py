"""Run import and export jobs from their status row: shared by Celery tasks, the CLI and the admin."""

from __future__ import annotations

from collections.abc import Callable

from django.db import transaction

from annotation.errors import DomainError, NotFound
from annotation.export import export_staging_remove, run_export_params
from annotation.models import Job, JobStatus
from annotation.runners import JOB_LOCKS, previous_runner_gone, runner_alive, runner_lock, runner_name
from annotation.services import (
    Progress,
    dataset_import_karpathy,
    embedding_space_import,
    job_claim,
    job_create,
    job_fail_if_running,
    job_finish,
    job_progress,
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
    """Run a pending job once, holding its runner lock.

    Idempotent: only the caller that moves the job from pending to running runs it, so a
    repeated task delivery does nothing; a job marked running whose runner died is marked
    failed. Bad input marks the job failed with the message (no raise); anything
    unexpected marks it failed and re-raises.
    """
    with runner_lock(JOB_LOCKS, job_id) as locked:
        job = Job.objects.filter(pk=job_id).first()
        if job is None:
            raise NotFound(f"no job #{job_id}")
        if not locked:
            return job
        if not job_claim(job_id=job_id, runner=runner_name()):
            if job.status == JobStatus.RUNNING and previous_runner_gone(JOB_LOCKS, job.pk, job.runner):
                _fail_orphaned(job)
            job.refresh_from_db()
            return job
        job.refresh_from_db()
        runner = RUNNERS[job.kind]
        write_progress = job_progress(job.id)

        def progress(done: int, total: int, message: str) -> None:
            write_progress(done, total, message)
            if echo is not None:
                echo(done, total, message)

        try:
            # The job id names what a runner leaves behind if it dies (export staging).
            result = runner({**job.params, "job_id": job.pk}, progress)
        except DomainError as exc:
            job_finish(job=job, error=str(exc))
            return job
        except Exception as exc:
            job_finish(job=job, error=f"unexpected error: {exc!r}")
            raise
        job_finish(job=job, result=result)
        return job


def jobs_fail_orphaned() -> list[int]:
    """Mark failed every running job whose runner is gone. Returns their ids."""
    return [
        job.pk
        for job in Job.objects.filter(status=JobStatus.RUNNING)
        if not runner_alive(JOB_LOCKS, job.pk, job.runner) and _fail_orphaned(job)
    ]


def _fail_orphaned(job: Job) -> bool:
    """Imports write in one transaction, which died with the runner; an export's
    half-written staging folder is removed here (its final folder never appeared)."""
    failed = job_fail_if_running(
        job_id=job.pk,
        error=f"the process running this job ({job.runner or 'unknown'}) stopped before it finished; "
        "nothing was kept. Run it again as a new job.",
    )
    if failed and job.kind == Job.Kind.EXPORT_DATASET and job.params.get("out"):
        export_staging_remove(out_dir=job.params["out"], job_id=job.pk)
    return failed


def import_job_start(*, kind: str, params: dict, created_by=None) -> Job:
    """Create an import job and queue it for a worker once the row is committed."""
    from annotation.tasks import run_import_job  # tasks import this module

    with transaction.atomic():
        job = job_create(kind=kind, params=params, created_by=created_by)
        transaction.on_commit(lambda: run_import_job.delay(job.id))
    return job
