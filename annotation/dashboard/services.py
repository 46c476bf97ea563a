"""Writes of the campaign dashboard: compute a dataset's snapshot now, or queue it."""

from __future__ import annotations

import logging
import time

from django.db import transaction
from django.utils import timezone

from annotation.dashboard.reads import campaign_inputs, repeatable_read
from annotation.dashboard.snapshot import campaign_numbers
from annotation.models import CampaignSnapshot, Dataset, Rating

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
        details = data.pop("rater_details")
        snapshot = CampaignSnapshot.objects.create(
            dataset=dataset, made_at=now, refresh_seconds=seconds, data=data, rater_details=details
        )
        stale = CampaignSnapshot.objects.filter(dataset=dataset).order_by("-made_at", "-id")[SNAPSHOTS_KEPT:]
        CampaignSnapshot.objects.filter(pk__in=list(stale.values_list("pk", flat=True))).delete()
    logger.info("campaign snapshot of %s in %.2f s", dataset.name, seconds)
    return snapshot


def campaign_refresh_request(dataset: Dataset) -> None:
    """Queue a refresh of ``dataset``'s snapshot once the current transaction commits (in
    the embedded mode the task runs in-process then)."""
    from annotation.tasks import refresh_campaign_snapshot  # tasks import this module

    transaction.on_commit(lambda: refresh_campaign_snapshot.delay(dataset.pk))


def campaign_refresh_all() -> list[int]:
    """Queue a refresh for every dataset that has ratings. Returns their ids."""
    ids = list(
        Dataset.objects.filter(pk__in=Rating.objects.values("pair__dataset_id"))
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    for dataset in Dataset.objects.filter(pk__in=ids):
        campaign_refresh_request(dataset)
    return ids
