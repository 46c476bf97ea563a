"""Reads of the campaign dashboard: pages read the stored snapshot, never the ratings."""

from __future__ import annotations

from annotation.models import CampaignSnapshot, Dataset


def campaign_snapshot_get(dataset: Dataset) -> CampaignSnapshot | None:
    """The newest snapshot of ``dataset``, or None before its first refresh. At CxC scale
    its ``data`` is about 700 KiB, 600 of them ``rater_details``: a page that needs only
    some parts reads those keys in the database instead (frontend.selectors)."""
    return CampaignSnapshot.objects.filter(dataset=dataset).order_by("-made_at", "-id").first()
