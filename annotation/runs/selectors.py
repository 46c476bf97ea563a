"""Reads of job rows: one job, the export jobs of a dataset."""

from __future__ import annotations

from django.db.models import QuerySet

from annotation.core.errors import NotFound
from annotation.models import (
    Job,
)


def job_get(*, job_id: int) -> Job:
    job = Job.objects.filter(pk=job_id).first()
    if job is None:
        raise NotFound(f"no job #{job_id}")
    return job


def export_job_list(*, dataset_name: str | None = None) -> QuerySet[Job]:
    """Export jobs, newest first; only those of ``dataset_name`` when given."""
    jobs = Job.objects.filter(kind=Job.Kind.EXPORT_DATASET).order_by("-created_at", "-id")
    if dataset_name:
        jobs = jobs.filter(params__dataset=dataset_name)
    return jobs


def export_job_get(*, job_id: int) -> Job:
    """The export job ``job_id``; NotFound for a missing id or a job of another kind."""
    job = Job.objects.filter(pk=job_id, kind=Job.Kind.EXPORT_DATASET).first()
    if job is None:
        raise NotFound(f"no export job #{job_id}")
    return job
