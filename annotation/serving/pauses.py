"""Pause state as serving meets it: whether a rater is paused in a dataset (the claim's and
the submit's check), the error that says so, and the automatic pause after too large a
gold error. Admins pause and lift through ``annotation.quality.pauses``."""

from __future__ import annotations

from datetime import datetime

from django.db import IntegrityError, transaction

from annotation.core.errors import Forbidden
from annotation.models import GoldPurpose, GoldRating, QualitySettings, RaterPause


class RaterPaused(Forbidden):
    """The rater is paused in this dataset and may claim nothing until an admin lifts it."""

    code = "rater_paused"


def is_paused(*, rater, dataset_id: int) -> bool:
    """The rater has an active pause in the dataset."""
    return RaterPause.objects.filter(rater=rater, dataset_id=dataset_id, lifted_at__isnull=True).exists()


def paused_error(*, username: str, dataset: str) -> RaterPaused:
    return RaterPaused(
        f"{username} is paused in {dataset}: an admin will review your ratings and lift the pause; "
        "nothing more is served until then"
    )


def pause_if_gold_error_high(*, rater_id: int, dataset_id: int, now: datetime) -> RaterPause | None:
    """After a gold rating: with the dataset's automatic pause on, pause the rater when
    the mean absolute error of their last K queue gold ratings (K = pause_window, and
    only once they have K) exceeds pause_max_error. Returns the new pause, else None
    (also when the rater is already paused). Call inside the transaction that stored the
    gold rating."""
    settings_row = QualitySettings.objects.filter(dataset_id=dataset_id, auto_pause=True).first()
    if settings_row is None:
        return None
    window = settings_row.pause_window
    latest = list(
        GoldRating.objects.filter(rater_id=rater_id, dataset_id=dataset_id, purpose=GoldPurpose.QUEUE)
        .order_by("-created_at", "-id")
        .values_list("score", "gold_score")[:window]
    )
    if len(latest) < window:
        return None
    error = sum(abs(score - gold) for score, gold in latest) / window
    if error <= settings_row.pause_max_error:
        return None
    reason = f"gold error {error:.2f} over the last {window} gold items (limit {settings_row.pause_max_error:.2f})"
    try:
        with transaction.atomic():
            return RaterPause.objects.create(
                rater_id=rater_id, dataset_id=dataset_id, reason=reason, automatic=True, created_at=now
            )
    except IntegrityError:  # already paused (pause_one_active)
        return None


def active_pause(*, rater, dataset_id: int) -> RaterPause | None:
    return RaterPause.objects.filter(rater=rater, dataset_id=dataset_id, lifted_at__isnull=True).first()
