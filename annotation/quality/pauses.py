"""Rater pauses, the admin side: pause a rater and lift a pause (``rater_pause``,
``rater_pause_lift``), and who may not be paused. What a pause does to serving (the
claim's and the submit's check, the automatic pause after too large a gold error) is
``annotation.serving.pauses``'."""

from __future__ import annotations

from datetime import datetime

from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.core.errors import Conflict, DomainError, NotFound
from annotation.core.roles import ADMIN, has_role
from annotation.models import RaterPause


class PauseInputError(DomainError):
    code = "pause_invalid"


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
        # The lift's own fields only: saving every field gives the same row here, but could
        # write back a concurrent change, which no single-threaded test can show.
        pause.save(update_fields=["lifted_at", "lifted_by", "lift_note"])  # pragma: no mutate
    return pause
