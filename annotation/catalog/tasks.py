"""Celery tasks of the catalog's uploads (beat); names kept as ``annotation.tasks.*``."""

from celery import shared_task

from annotation.catalog.upload_cleanup import uploads_prune


@shared_task(name="annotation.tasks.prune_uploads", acks_late=True)
def prune_uploads() -> dict:
    """Beat: remove the uploads of runs that succeeded or failed UPLOAD_KEEP_FAILED_DAYS
    ago, and upload folders no run refers to. Idempotent."""
    summary = uploads_prune()
    return {"runs": summary.runs, "folders": summary.folders}
