"""Celery tasks of the campaign dashboard and the speed floor's marks; names kept as
``annotation.tasks.*``."""

import logging
from datetime import datetime

from celery import shared_task

from annotation.dashboard.services import (
    campaign_refresh_all,
    campaign_snapshot_refresh,
    campaign_snapshot_refresh_requested,
)
from annotation.dashboard.speed_floors import speed_floor_marks_refresh
from annotation.models import Dataset

logger = logging.getLogger(__name__)


@shared_task(name="annotation.tasks.remark_speed_floor", acks_late=True)
def remark_speed_floor(dataset_id: int, kind: str) -> int:
    """Mark anew a dataset's ratings of a kind after its speed floor changed (queued by the
    admin). Idempotent: the marks follow the floor stored when each batch runs."""
    return speed_floor_marks_refresh(dataset_id=dataset_id, kind=kind)


@shared_task(name="annotation.tasks.refresh_campaign_snapshot", acks_late=True)
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


@shared_task(name="annotation.tasks.refresh_campaign_snapshots", acks_late=True)
def refresh_campaign_snapshots() -> list[int]:
    """Beat: queue a snapshot refresh of every dataset with ratings. Idempotent."""
    return campaign_refresh_all()
