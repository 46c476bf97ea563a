"""Reads of the campaign dashboard: pages read the stored snapshot, never the ratings."""

from __future__ import annotations

from annotation.models import CampaignSnapshot, Dataset


def campaign_snapshot_get(dataset: Dataset) -> CampaignSnapshot | None:
    """The newest snapshot of ``dataset``, or None before its first refresh. Its
    ``rater_details`` are not loaded (most of the bytes; see campaign_rater_detail_get)."""
    return CampaignSnapshot.objects.filter(dataset=dataset).defer("rater_details").order_by("-made_at", "-id").first()


def campaign_rater_detail_get(snapshot: CampaignSnapshot, rater_id: int) -> dict | None:
    """One rater's page numbers from ``snapshot`` (``rater_details[str(rater_id)]``), or
    None when the snapshot has no such rater."""
    return snapshot.rater_details.get(str(rater_id))
