"""Writes of the campaign dashboard: compute a dataset's snapshot now, or queue it."""

from __future__ import annotations

import logging
import time
from datetime import datetime

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from annotation.core.task_queue import task_queue_on_commit
from annotation.dashboard.reads import campaign_inputs, repeatable_read
from annotation.dashboard.snapshot import campaign_numbers
from annotation.models import CampaignSnapshot, Dataset, Pair

logger = logging.getLogger(__name__)

# Snapshots kept per dataset: the newest is what pages show, the others are only history.
SNAPSHOTS_KEPT = 3


def campaign_snapshot_refresh(dataset: Dataset) -> CampaignSnapshot:
    """Compute ``dataset``'s dashboard numbers from its current ratings and store them as
    its newest CampaignSnapshot (older ones beyond SNAPSHOTS_KEPT go)."""
    started = time.perf_counter()
    with transaction.atomic():
        repeatable_read()
        # Taken inside the transaction, so no rating the reads see is later than it.
        now = timezone.now()
        inputs = campaign_inputs(dataset, now=now)
    data = campaign_numbers(inputs)
    seconds = time.perf_counter() - started
    with transaction.atomic():
        snapshot = CampaignSnapshot.objects.create(dataset=dataset, made_at=now, refresh_seconds=seconds, data=data)
        stale = CampaignSnapshot.objects.filter(dataset=dataset).order_by("-made_at", "-id")[SNAPSHOTS_KEPT:]
        CampaignSnapshot.objects.filter(pk__in=list(stale.values_list("pk", flat=True))).delete()
    logger.info("campaign snapshot of %s in %.2f s", dataset.name, seconds)
    return snapshot


def campaign_snapshot_refresh_requested(dataset: Dataset, *, requested_at: datetime) -> CampaignSnapshot | None:
    """The refresh a request made at ``requested_at`` asked for, unless a snapshot made
    since then exists already: None then. Repeated clicks and beat ticks that queued up
    behind one refresh are answered by it instead of each reading every rating again."""
    if CampaignSnapshot.objects.filter(dataset=dataset, made_at__gte=requested_at).exists():
        logger.info("campaign snapshot of %s is newer than its request (%s); not refreshed", dataset.name, requested_at)
        return None
    return campaign_snapshot_refresh(dataset)


def campaign_refresh_request(dataset: Dataset) -> None:
    """Queue a refit of ``dataset``'s rater-effects model and a refresh of its snapshot
    once the current transaction commits (in the embedded mode the tasks run in-process
    then, the refit first, so the snapshot shows it)."""
    requested_at = timezone.now().isoformat()
    task_queue_on_commit("annotation.tasks.refit_rater_model", dataset.pk)
    task_queue_on_commit("annotation.tasks.refresh_campaign_snapshot", dataset.pk, requested_at)


def campaign_refresh_all() -> list[int]:
    """Queue a refit and a refresh (``campaign_refresh_request``) for every dataset that
    has ratings. Returns their ids."""
    # A pair's count says whether it has ratings: one indexed probe per dataset, not a
    # scan of the ratings every few minutes.
    rated = Exists(Pair.objects.filter(dataset=OuterRef("pk"), ratings_done__gt=0))
    datasets = list(Dataset.objects.filter(rated).order_by("pk"))
    for dataset in datasets:
        campaign_refresh_request(dataset)
    return [dataset.pk for dataset in datasets]
