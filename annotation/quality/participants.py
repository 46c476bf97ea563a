"""The participants of one campaign link as a CSV, to approve and reject them on the
crowd platform: external id, how the run stands, the items they rated and the figures
the rater flags read (annotation.quality.flags), flagged or not and why.

Figures are computed now from the participant's items in the link's dataset (ratings of
any status, since an excluded rating was still work done, and queue gold ratings), by
the dashboard's own pure functions; the LOO r needs every rating of the dataset and
comes from the dataset's newest campaign snapshot (empty before the first, or for a
participant who joined after it).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from annotation.core import spreadsheet_csv
from annotation.core.errors import NotFound
from annotation.models import (
    CampaignLink,
    CampaignSnapshot,
    Dataset,
    GoldLease,
    GoldLeaseState,
    GoldPurpose,
    GoldRating,
    ParticipantOutcome,
    Rating,
)
from annotation.quality import group_stats as stats
from annotation.quality.aggregation import group_medians
from annotation.quality.flag_settings import flag_thresholds_get
from annotation.quality.flags import FlagThresholds, RaterFigures, flag_reasons

# The CSV's status is the run's outcome as the admin lists it ("completed", never a
# synonym), or "started" while the run goes on.
STATUS = {"": "started", **{outcome.value: outcome.value for outcome in ParticipantOutcome}}
HEADER = [
    "external_id",
    "status",
    "started_at",
    "finished_at",
    "items_rated",
    "gold_items",
    "gold_error",
    "median_seconds_per_item",
    "share_under_speed_floor",
    "gold_skip_share",
    "loo_r",
    "flagged",
    "flag_reasons",
]


def campaign_link_of(*, dataset: Dataset, link_id: int) -> CampaignLink:
    """The dataset's link of that id; NotFound naming both."""
    link = CampaignLink.objects.filter(dataset=dataset, pk=link_id).select_related("dataset").first()
    if link is None:
        raise NotFound(f"no campaign link #{link_id} in {dataset.name}")
    return link


@dataclass(frozen=True)
class ParticipantRow:
    external_id: str
    status: str
    started_at: datetime
    finished_at: datetime | None
    figures: RaterFigures
    median_seconds: float | None
    reasons: list[str]


def _items(link: CampaignLink, users: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every item of the users in the link's dataset: (rater id, ms, under the floor)."""
    ratings = Rating.objects.filter(rater_id__in=users, pair__dataset_id=link.dataset_id)
    gold = GoldRating.objects.filter(rater_id__in=users, dataset_id=link.dataset_id, purpose=GoldPurpose.QUEUE)
    rows = [
        *ratings.values_list("rater_id", "time_on_item_ms", "below_speed_floor"),
        *gold.values_list("rater_id", "time_on_item_ms", "below_speed_floor"),
    ]
    table = np.array(rows, dtype=np.int64).reshape(-1, 3)
    return table[:, 0], table[:, 1], table[:, 2].astype(bool)


def _snapshot_loo(link: CampaignLink) -> dict[int, dict]:
    """The newest snapshot's rater rows by rater id (only that key of its data)."""
    row = (
        CampaignSnapshot.objects.filter(dataset_id=link.dataset_id)
        .order_by("-made_at", "-id")
        .values("data__raters")
        .first()
    )
    return {rater["rater_id"]: rater for rater in (row["data__raters"] or [])} if row else {}


def participant_rows(link: CampaignLink, thresholds: FlagThresholds) -> list[ParticipantRow]:
    """One row per participant of ``link``, in the order they joined."""
    participants = list(link.participants.order_by("started_at", "id"))
    users = [participant.user_id for participant in participants]
    index = {user: i for i, user in enumerate(users)}
    n = len(users)
    rater, time_ms, under = _items(link, users)
    group = np.array([index[r] for r in rater.tolist()], dtype=np.int64)
    count = np.bincount(group, minlength=n)
    medians = group_medians(group, time_ms, n) / 1000.0
    fast = stats.group_shares(group, under, n)
    gold = np.array(
        GoldRating.objects.filter(rater_id__in=users, dataset_id=link.dataset_id, purpose=GoldPurpose.QUEUE)
        .values_list("rater_id", "score", "gold_score")
        .order_by("id"),
        dtype=np.float64,
    ).reshape(-1, 3)
    gold_group = np.array([index[int(r)] for r in gold[:, 0].tolist()], dtype=np.int64)
    gold_n, gold_mae, _ = stats.gold_errors(gold_group, gold[:, 1] - gold[:, 2], n)
    passed = GoldLease.objects.filter(rater_id__in=users, dataset_id=link.dataset_id, state=GoldLeaseState.SKIPPED)
    gold_passed = np.bincount([index[r] for r in passed.values_list("rater_id", flat=True)], minlength=n)
    snapshot = _snapshot_loo(link)
    rows = []
    for i, participant in enumerate(participants):
        seen = snapshot.get(participant.user_id, {})
        figures = RaterFigures(
            loo_correlation=seen.get("loo_correlation"),
            shared_pairs=seen.get("shared_pairs", 0),
            fast_share=_number(fast[i]),
            ratings=int(count[i]),
            gold_error=_number(gold_mae[i]),
            gold_items=int(gold_n[i]),
            gold_passed=int(gold_passed[i]),
            quota=link.quota,
        )
        rows.append(
            ParticipantRow(
                external_id=participant.external_id,
                status=STATUS[participant.outcome],
                started_at=participant.started_at,
                finished_at=participant.finished_at,
                figures=figures,
                median_seconds=_number(medians[i]),
                reasons=flag_reasons(figures, thresholds),
            )
        )
    return rows


def _number(value: float) -> float | None:
    return None if np.isnan(value) else float(value)


def _cell(value: float | None, digits: int) -> object:
    return "" if value is None else round(value, digits)


def participants_csv(link: CampaignLink) -> str:
    """The CSV of :func:`participant_rows` under the dataset's flag thresholds. External
    ids come from the platform's URL: formula-like ones are escaped for spreadsheets."""
    rows = participant_rows(link, flag_thresholds_get(dataset_id=link.dataset_id))
    out = io.StringIO()
    writer = spreadsheet_csv.writer(out, lineterminator="\n")
    writer.writerow(HEADER)
    for row in rows:
        figures = row.figures
        writer.writerow(
            [
                row.external_id,
                row.status,
                row.started_at.isoformat(),
                row.finished_at.isoformat() if row.finished_at else "",
                figures.ratings,
                figures.gold_items,
                _cell(figures.gold_error, 4),
                _cell(row.median_seconds, 2),
                _cell(figures.fast_share, 4),
                _cell(figures.gold_skip_share, 4),
                _cell(figures.loo_correlation, 4),
                "yes" if row.reasons else "no",
                "; ".join(row.reasons),
            ]
        )
    return out.getvalue()


def participants_csv_name(link: CampaignLink) -> str:
    return f"{link.dataset.name}-link-{link.pk}-participants.csv"
