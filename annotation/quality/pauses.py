"""Rater pauses: the automatic one after too large a gold error, and the check the claim
makes. Admins pause and lift through ``rater_pause`` and ``rater_pause_lift`` below."""

from __future__ import annotations

from datetime import datetime

from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.errors import Conflict, DomainError, Forbidden, NotFound
from annotation.models import GoldPurpose, GoldRating, QualitySettings, RaterPause
from annotation.people.roles import ADMIN, has_role


class PauseInputError(DomainError):
    code = "pause_invalid"


class RaterPaused(Forbidden):
    """The rater is paused in this dataset and may claim nothing until an admin lifts it."""

    code = "rater_paused"


def is_paused(*, rater, dataset_id: int) -> bool:
    """The rater has an active pause in the dataset."""
    return RaterPause.objects.filter(rater=rater, dataset_id=dataset_id, lifted_at__isnull=True).exists()


def is_paused_in(*, rater, dataset: str) -> bool:
    """The rater has an active pause in the dataset named ``dataset`` (one query)."""
    return RaterPause.objects.filter(rater=rater, dataset__name=dataset, lifted_at__isnull=True).exists()


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


MAX_PAUSE_TEXT = 2000


def pause_refusal(rater) -> PauseInputError | None:
    """Why ``rater`` may not be paused (admins, staff and superusers: a pause would lock
    the people who lift pauses out of their own review), else None."""
    if has_role(rater, ADMIN):
        return PauseInputError(
            f"{rater.get_username()} is an admin (or staff or superuser) and cannot be paused; "
            "take the admin role away first if they should stop rating"
        )
    return None


def rater_pause(*, rater, dataset, reason: str, created_by, now: datetime | None = None) -> RaterPause:
    """An admin pauses a rater in a dataset: they claim nothing there until the pause is
    lifted (a rating already being given is still accepted). Raises Conflict when they
    are paused already, PauseInputError for an empty reason or an admin as the rater."""
    reason = (reason or "").strip()
    if not reason or len(reason) > MAX_PAUSE_TEXT:
        raise PauseInputError(f"a pause needs a reason of 1 to {MAX_PAUSE_TEXT} characters")
    if refusal := pause_refusal(rater):
        raise refusal
    pause, created = rater_pause_unless_paused(
        rater=rater, dataset=dataset, reason=reason, created_by=created_by, now=now
    )
    if not created:
        raise Conflict(f"{rater.get_username()} is already paused in {dataset.name}")
    return pause


def rater_pause_unless_paused(
    *, rater, dataset, reason: str, created_by, now: datetime | None = None
) -> tuple[RaterPause, bool]:
    """Pause the rater in the dataset, or find the pause they are under: (pause, whether
    it is new). The caller has checked ``reason`` and ``pause_refusal``."""
    try:
        with transaction.atomic():
            pause = RaterPause.objects.create(
                rater=rater, dataset=dataset, reason=reason, created_by=created_by, created_at=now or timezone.now()
            )
            return pause, True
    except IntegrityError:  # pause_one_active: paused already (perhaps a moment ago)
        return RaterPause.objects.get(rater=rater, dataset=dataset, lifted_at__isnull=True), False


def rater_pause_lift(*, pause_id: int, lifted_by, note: str = "", now: datetime | None = None) -> RaterPause:
    """Lift an active pause; the rater may claim again. Raises NotFound or Conflict
    (already lifted)."""
    if len(note or "") > MAX_PAUSE_TEXT:
        raise PauseInputError(f"a note must be at most {MAX_PAUSE_TEXT} characters")
    with transaction.atomic():
        pause = RaterPause.objects.select_for_update().filter(pk=pause_id).first()
        if pause is None:
            raise NotFound(f"no pause #{pause_id}")
        if pause.lifted_at is not None:
            raise Conflict(f"pause #{pause_id} was already lifted at {pause.lifted_at.isoformat()}")
        pause.lifted_at, pause.lifted_by, pause.lift_note = now or timezone.now(), lifted_by, (note or "").strip()
        pause.save(update_fields=["lifted_at", "lifted_by", "lift_note"])
    return pause


def active_pause(*, rater, dataset_id: int) -> RaterPause | None:
    return RaterPause.objects.filter(rater=rater, dataset_id=dataset_id, lifted_at__isnull=True).first()
