"""Job rows: import, export and evaluation work waiting for a runner. What runs a job is
``annotation.jobs.dispatch``'s; its lifecycle (claim, progress, fail) is
``annotation.runs.lifecycle``'s."""

from annotation.catalog.uploads import upload_paths
from annotation.models import Job, UploadState


def job_create(*, kind: str, params: dict, created_by=None) -> Job:
    """A pending job row; ``annotation.jobs.dispatch.job_run`` (or its Celery task) runs it. Its
    params' stored uploads, if any, are removed when it ends (``annotation.catalog.upload_cleanup``)."""
    job = Job(kind=kind, params=params, created_by=created_by)
    job.upload_state = UploadState.STORED if upload_paths(job) else UploadState.NONE
    job.save()
    return job
