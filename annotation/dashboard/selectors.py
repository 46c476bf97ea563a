"""Reads of the campaign dashboard: pages read the stored snapshot, never the ratings."""

from __future__ import annotations

from annotation.models import CampaignSnapshot, Dataset


def campaign_snapshot_get(dataset: Dataset) -> CampaignSnapshot | None:
    """The newest snapshot of ``dataset``, or None before its first refresh."""
    return CampaignSnapshot.objects.filter(dataset=dataset).order_by("-made_at", "-id").first()
