"""Celery tasks of the import, export and evaluation jobs (names kept as queued before the
move into this package: ``annotation.tasks.*``)."""

import logging

from celery import shared_task

from annotation.core.errors import NotFound
from annotation.jobs.dispatch import job_run, jobs_fail_orphaned

logger = logging.getLogger(__name__)


@shared_task(name="annotation.tasks.run_import_job", acks_late=True)
def run_import_job(job_id: int) -> None:
    """Run an import job by id. Idempotent: only the delivery that claims the pending job
    runs it; a repeated delivery finds it taken and does nothing."""
    _run_job(job_id)


@shared_task(name="annotation.tasks.run_export_job", acks_late=True)
def run_export_job(job_id: int) -> None:
    """Run an export job by id (idempotent, as run_import_job)."""
    _run_job(job_id)


@shared_task(name="annotation.tasks.run_evaluation_job", acks_late=True)
def run_evaluation_job(job_id: int) -> None:
    """Run an evaluation job by id (idempotent, as run_import_job)."""
    _run_job(job_id)


def _run_job(job_id: int) -> None:
    try:
        job_run(job_id=job_id)
    except NotFound:
        logger.warning("job #%s no longer exists; nothing to run", job_id)


@shared_task(name="annotation.tasks.fail_orphaned_jobs", acks_late=True)
def fail_orphaned_jobs() -> list[int]:
    """Beat: mark failed the running jobs whose worker died (pages and the API show them
    as stale meanwhile). Idempotent."""
    return jobs_fail_orphaned()
