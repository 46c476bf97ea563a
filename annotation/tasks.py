import logging
from datetime import datetime

from celery import shared_task

from annotation.dashboard.services import (
    campaign_refresh_all,
    campaign_snapshot_refresh,
    campaign_snapshot_refresh_requested,
)
from annotation.dashboard.speed_floors import speed_floor_marks_refresh
from annotation.errors import NotFound
from annotation.jobs import job_run, jobs_fail_orphaned
from annotation.models import Dataset
from annotation.people.accounts import tokens_prune_expired
from annotation.quality.exclusion.services import exclusions_resume, rating_exclusion_run
from annotation.rater_fits import rater_model_refit
from annotation.rating.queue import leases_release_expired, queue_counters_rebuild, rater_tallies_prune
from annotation.upload_cleanup import uploads_prune

logger = logging.getLogger(__name__)


@shared_task(acks_late=True)
def run_import_job(job_id: int) -> None:
    """Run an import job by id. Idempotent: only the delivery that claims the pending job
    runs it; a repeated delivery finds it taken and does nothing."""
    _run_job(job_id)


@shared_task(acks_late=True)
def run_export_job(job_id: int) -> None:
    """Run an export job by id (idempotent, as run_import_job)."""
    _run_job(job_id)


@shared_task(acks_late=True)
def run_evaluation_job(job_id: int) -> None:
    """Run an evaluation job by id (idempotent, as run_import_job)."""
    _run_job(job_id)


def _run_job(job_id: int) -> None:
    try:
        job_run(job_id=job_id)
    except NotFound:
        logger.warning("job #%s no longer exists; nothing to run", job_id)


@shared_task(acks_late=True)
def release_expired_leases() -> int:
    """Beat: return expired leases to the open queue (tidy-up only; claims take expired
    leases themselves). Idempotent."""
    return leases_release_expired()


@shared_task(acks_late=True)
def remark_speed_floor(dataset_id: int, kind: str) -> int:
    """Mark anew a dataset's ratings of a kind after its speed floor changed (queued by the
    admin). Idempotent: the marks follow the floor stored when each batch runs."""
    return speed_floor_marks_refresh(dataset_id=dataset_id, kind=kind)


@shared_task(acks_late=True)
def recount_open_pairs() -> int:
    """Beat: recount the open-pairs counters from the pairs. Idempotent."""
    return queue_counters_rebuild()


@shared_task(acks_late=True)
def prune_rater_tallies() -> int:
    """Beat: delete the raters' tallies of quarter hours no progress reads. Idempotent."""
    return rater_tallies_prune()


@shared_task(acks_late=True)
def fail_orphaned_jobs() -> list[int]:
    """Beat: mark failed the running jobs whose worker died (pages and the API show them
    as stale meanwhile). Idempotent."""
    return jobs_fail_orphaned()


@shared_task(acks_late=True)
def prune_uploads() -> dict:
    """Beat: remove the uploads of runs that succeeded or failed UPLOAD_KEEP_FAILED_DAYS
    ago, and upload folders no run refers to. Idempotent."""
    summary = uploads_prune()
    return {"runs": summary.runs, "folders": summary.folders}


@shared_task(acks_late=True)
def prune_expired_tokens() -> int:
    """Beat: delete expired API tokens. Idempotent."""
    return tokens_prune_expired()


@shared_task(acks_late=True)
def refresh_campaign_snapshot(dataset_id: int, requested_at: str | None = None) -> None:
    """Compute a dataset's dashboard snapshot by id; with ``requested_at`` (ISO time of the
    request) only when no snapshot was made since. Idempotent."""
    dataset = Dataset.objects.filter(pk=dataset_id).first()
    if dataset is None:
        logger.warning("dataset #%s no longer exists; no snapshot", dataset_id)
        return
    if requested_at is None:
        campaign_snapshot_refresh(dataset)
    else:
        campaign_snapshot_refresh_requested(dataset, requested_at=datetime.fromisoformat(requested_at))


@shared_task(acks_late=True)
def refit_rater_model(dataset_id: int) -> None:
    """Fit the rater-effects model of a dataset by id anew (each task kind). Idempotent."""
    dataset = Dataset.objects.filter(pk=dataset_id).first()
    if dataset is None:
        logger.warning("dataset #%s no longer exists; no rater model", dataset_id)
        return
    rater_model_refit(dataset=dataset)


@shared_task(acks_late=True)
def refresh_campaign_snapshots() -> list[int]:
    """Beat: queue a snapshot refresh of every dataset with ratings. Idempotent."""
    return campaign_refresh_all()


@shared_task(acks_late=True)
def run_rating_exclusion(exclusion_id: int) -> str | None:
    """Apply or undo an exclusion by id, whichever its state asks. Idempotent: each chunk
    only touches ratings not yet handled."""
    exclusion = rating_exclusion_run(exclusion_id=exclusion_id)
    return exclusion.state if exclusion is not None else None


@shared_task(acks_late=True)
def resume_rating_exclusions() -> list[int]:
    """Beat: queue every exclusion still applying or undoing. Idempotent."""
    return exclusions_resume()
