from celery import shared_task

from annotation.jobs import job_run
from annotation.queue import leases_release_expired, queue_counters_rebuild


@shared_task(acks_late=True)
def run_import_job(job_id: int) -> None:
    """Run an import job by id (idempotent: a job that already ran is left alone)."""
    from annotation.models import Job, JobStatus

    if Job.objects.filter(pk=job_id, status=JobStatus.PENDING).exists():
        job_run(job_id=job_id)


@shared_task(acks_late=True)
def run_export_job(job_id: int) -> None:
    """Run an export job by id. Idempotent: only the delivery that claims the pending job
    runs it; a repeated delivery finds it taken and does nothing."""
    from annotation.export import export_job_claim

    if export_job_claim(job_id=job_id):
        job_run(job_id=job_id)


@shared_task(acks_late=True)
def release_expired_leases() -> int:
    """Beat: return expired leases to the open queue (tidy-up only; claims take expired
    leases themselves). Idempotent."""
    return leases_release_expired()


@shared_task(acks_late=True)
def recount_open_pairs() -> int:
    """Beat: recount the open-pairs counters from the pairs. Idempotent."""
    return queue_counters_rebuild()
