"""Progress lines for management commands, and a job run to its end in the command's process."""

import sys

from django.core.management.base import CommandError

from annotation.jobs.dispatch import job_run
from annotation.models import Job, JobStatus


def print_progress(done: int, total: int, message: str) -> None:
    if total:
        sys.stderr.write(f"\r{message}: {done}/{total} ({100 * done // max(total, 1)}%)   ")
    else:
        sys.stderr.write(f"\r{message} ...   ")
    sys.stderr.flush()


def job_run_here(job: Job) -> Job:
    """Run ``job`` in this process with its progress on stderr; the finished job, or
    CommandError with the job's error when it failed."""
    job = job_run(job_id=job.id, echo=print_progress)
    sys.stderr.write("\n")
    if job.status == JobStatus.FAILED:
        raise CommandError(job.error)
    return job
