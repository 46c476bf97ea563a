"""Reads of the campaign dashboard: pages and the API read the stored snapshot, never the
ratings."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from annotation.models import CampaignSnapshot, Dataset


def campaign_snapshot_get(dataset: Dataset) -> CampaignSnapshot | None:
    """The newest snapshot of ``dataset``, or None before its first refresh. At CxC scale
    its ``data`` is about 700 KiB, 600 of them ``rater_details``: a page that needs only
    some parts reads those keys in the database instead (``campaign_snapshot_part``)."""
    return CampaignSnapshot.objects.filter(dataset=dataset).order_by("-made_at", "-id").first()


@dataclass(frozen=True)
class SnapshotPart:
    """Some top-level keys of a campaign snapshot's ``data`` (the contract's shape), with
    when it was made and how long that took: what a campaign page shows."""

    made_at: datetime
    refresh_seconds: float
    data: dict


def campaign_snapshot_part(*, dataset: Dataset, keys: tuple[str, ...]) -> SnapshotPart | None:
    """The newest snapshot of ``dataset`` (the order of ``campaign_snapshot_get``) with
    only the top-level ``keys`` of its data, taken out by the database's JSON operators;
    None before the first snapshot. At CxC scale ``rater_details`` is most of the snapshot
    (about 600 of 700 KiB for 100 raters): fetching and parsing it would double the
    campaign page's time."""
    fields = [f"data__{key}" for key in keys]
    row = (
        CampaignSnapshot.objects.filter(dataset=dataset)
        .order_by("-made_at", "-id")
        .values("made_at", "refresh_seconds", *fields)
        .first()
    )
    if row is None:
        return None
    return SnapshotPart(
        made_at=row["made_at"],
        refresh_seconds=row["refresh_seconds"],
        data={key: row[field] for key, field in zip(keys, fields, strict=True)},
    )
