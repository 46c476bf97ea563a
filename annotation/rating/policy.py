"""The one rating policy: every claim and every submit, from the API, the rating page, the
quiz and the join flow, passes here, in this order:

1. WHO: an authenticated rater, or a crowd participant of this dataset (a participant
   acts only in the dataset and the kinds of their campaign link).
2. MAY THEY: the role; the qualification for this dataset and kind and the pause (both
   checked inside the claim statement itself, so a plain rater's claim costs no extra
   round trip); for a participant, the quota (``annotation.rating.quota``: ratings,
   queue gold ratings and leases held, over the link's kinds since joining) and no claim
   once the completion code was shown.
3. WHAT: a gold pair now and then (``annotation.gold.serving.gold_claim``), else the
   queue's next slot (``annotation.queue.slot_claim``).

A submit re-checks what can change since the claim: the pause (folded into the submit
statement; the queue's stepwise path raises RaterPaused), and for a participant the quota
and the link's kinds. An id that is no slot is tried as a gold lease (submit, heartbeat,
skip, flag). A participant's claims and submits take a lock on their participation row,
so two tabs cannot both take the last item of a quota.

The queue and gold serving are mechanisms: they import nothing from here, from the
crowd or from the quiz.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from annotation import queue
from annotation.crowd import participation_in
from annotation.errors import Forbidden, NotFound
from annotation.gold import serving as gold
from annotation.gold.pause import RaterPaused, is_paused, paused_error
from annotation.models import (
    Dataset,
    Flag,
    GoldLease,
    GoldLeaseState,
    Participant,
    Qualification,
    RatingSlot,
    SlotState,
)
from annotation.queue.claim import qualified_kinds
from annotation.queue.shapes import Assignment, SubmitResult, check_kind, lease_ttl, service_now
from annotation.queue.submit import submission_values
from annotation.rating.quota import QuotaReached, quota_reached_error, quota_use
from annotation.roles import PARTICIPANT, has_role, may_rate
from annotation.sql import use_postgres_sql

__all__ = [
    "QuotaReached",
    "entry_check",
    "rating_submit",
    "rating_submit_and_claim_next",
    "slot_claim",
    "slot_flag",
    "slot_heartbeat",
    "slot_skip",
]


# --- who ---------------------------------------------------------------------------------


def participation(*, rater, dataset: str) -> Participant | None:
    """WHO may act in ``dataset``: None for a rater who came through no campaign link (no
    query: the roles are known from authentication); the participant's run through a
    link of this dataset for a crowd participant. Raises Forbidden for a user without the
    rater role and for a participant outside the dataset of their study."""
    # Raters and campaign-link participants (who are not in the rater group) rate.
    if not may_rate(rater):
        raise Forbidden(f"{rater.get_username()} is not a rater; only raters rate")
    if not has_role(rater, PARTICIPANT):
        return None
    dataset_id = Dataset.objects.filter(name=dataset).values_list("id", flat=True).first()
    participant = participation_in(user=rater, dataset_id=dataset_id) if dataset_id is not None else None
    if participant is None:
        raise Forbidden("you joined a study through its link; you may rate only in that study")
    return participant


def _locked(participant: Participant) -> Participant:
    """The participant's row, locked until the transaction ends: their claims and
    submits take their quota decisions one at a time."""
    return Participant.objects.select_for_update(of=("self",)).select_related("link__dataset").get(pk=participant.pk)


def _check_link_kind(participant: Participant, kind: str) -> None:
    kinds = participant.link.kinds
    if kind not in kinds:
        raise Forbidden(f"this study asks for {', '.join(kinds)} ratings, not {kind}")


def entry_check(*, rater, dataset: str, kind: str) -> Participant | None:
    """Who may open a kind's rating page or take its quiz in a dataset: any rater; a
    participant only in their study's dataset and kinds. Returns the participation
    (None for a plain rater); raises Forbidden."""
    participant = participation(rater=rater, dataset=dataset)
    if participant is not None:
        _check_link_kind(participant, kind)
    return participant


# --- claim -------------------------------------------------------------------------------


def slot_claim(*, rater, dataset: str, kind: str | None = None, now: datetime | None = None) -> Assignment | None:
    """The rater's next item of ``dataset`` (``kind`` narrows it to one kind): their held
    lease resumed, else now and then a gold pair, else the queue's next slot; None when
    nothing is left for them. Raises Forbidden (who or may they: RaterPaused,
    QuotaReached and plain Forbidden), NotFound for an unknown dataset."""
    check_kind(kind)
    participant = participation(rater=rater, dataset=dataset)
    if participant is None:
        return _serve(rater=rater, dataset=dataset, kind=kind, now=now)
    with transaction.atomic():
        participant = _locked(participant)
        for each in _participant_claim_kinds(participant, rater=rater, kind=kind):
            assignment = _serve(rater=rater, dataset=dataset, kind=each, now=now)
            if assignment is not None:
                return assignment
    return None


def _participant_claim_kinds(participant: Participant, *, rater, kind: str | None) -> list[str]:
    """The kinds to try, in order, for a participant's claim: a kind they hold an item
    of first (resumed), then the link's other kinds. Raises QuotaReached once the
    completion code was shown or ratings and held items fill the quota (then only a
    held item may be resumed), Forbidden for a kind outside the link."""
    link = participant.link
    if kind is not None:
        _check_link_kind(participant, kind)
    if participant.finished_at is not None:
        raise quota_reached_error(participant)
    use = quota_use(participant)
    if use.done >= use.quota:
        raise quota_reached_error(participant)
    wanted = [kind] if kind is not None else list(link.kinds)
    held = list(dict.fromkeys(k for _, k in use.held if k in wanted))
    if use.done + len(use.held) >= use.quota:
        if not held:
            raise QuotaReached(
                f"the items you hold fill your quota of {use.quota}; rate them before you are served another"
            )
        return held[:1]
    if kind is not None:
        return [kind]
    granted = set(Qualification.objects.granted_kinds(rater=rater, dataset_id=link.dataset_id))
    kinds = held + [k for k in wanted if k not in held and k in granted]
    if not kinds:
        raise Forbidden(f"you are not qualified for this study's {', '.join(link.kinds)} ratings yet")
    return kinds


def _serve(*, rater, dataset: str, kind: str | None, now: datetime | None) -> Assignment | None:
    """WHAT: a gold pair now and then, looking like any other, else the queue's next
    slot (which also says why nothing came: unknown dataset, pause, qualification)."""
    now = service_now(now)
    expires = now + lease_ttl()
    kinds = None if use_postgres_sql() else qualified_kinds(rater, dataset=dataset)
    assignment = gold.gold_claim(rater=rater, dataset=dataset, kinds=kinds, kind=kind, now=now, expires=expires)
    if assignment is not None:
        return assignment
    return queue.slot_claim(rater=rater, dataset=dataset, kind=kind, now=now)


# --- submit ------------------------------------------------------------------------------


def rating_submit(*, rater, dataset: str, slot_id: int, now: datetime | None = None, **submission) -> SubmitResult:
    """Store the rater's rating of the slot (or gold lease) they hold; see
    ``annotation.queue.rating_submit`` for the submission's values and answers. Raises
    RaterPaused for a rater paused since the claim and, for a participant, QuotaReached
    when this rating would pass the quota, Forbidden for an item outside their study;
    nothing is stored then."""
    participant = participation(rater=rater, dataset=dataset)
    if participant is None:
        return _store(rater=rater, dataset=dataset, slot_id=slot_id, now=now, submission=submission)
    with transaction.atomic():
        participant = _locked(participant)
        _participant_may_submit(participant, slot_id=slot_id)
        return _store(rater=rater, dataset=dataset, slot_id=slot_id, now=now, submission=submission)


def _participant_may_submit(participant: Participant, *, slot_id: int) -> None:
    link = participant.link
    item = (
        RatingSlot.objects.filter(pk=slot_id, dataset_id=link.dataset_id).values("kind", "state", "rater_id").first()
        or GoldLease.objects.filter(pk=slot_id, dataset_id=link.dataset_id).values("kind", "state", "rater_id").first()
    )
    if item is None:
        return  # the queue names the unknown id
    _check_link_kind(participant, item["kind"])
    if item["state"] in (SlotState.DONE, GoldLeaseState.DONE) and item["rater_id"] == participant.user_id:
        return  # a repeat of a stored rating: the queue answers the replay, storing nothing
    use = quota_use(participant)
    if use.done + use.held_other_than(slot_id) >= use.quota:
        raise quota_reached_error(participant)


def _store(*, rater, dataset: str, slot_id: int, now: datetime | None, submission: dict) -> SubmitResult:
    try:
        return queue.rating_submit(rater=rater, dataset=dataset, slot_id=slot_id, now=now, **submission)
    except NotFound:
        now = service_now(now)
        rating = submission_values(rater=rater, now=now, **submission)
        dataset_id = Dataset.objects.filter(name=dataset).values_list("id", flat=True).first()
        if dataset_id is not None and is_paused(rater=rater, dataset_id=dataset_id):
            raise paused_error(username=rater.get_username(), dataset=dataset) from None
        stored = gold.gold_submit(rater=rater, dataset=dataset, lease_id=slot_id, rating=rating, now=now)
        if stored is None:
            raise
        return stored


def rating_submit_and_claim_next(
    *, rater, dataset: str, slot_id: int, next_kind: str, **submission
) -> tuple[SubmitResult, Assignment | None]:
    """Store a rating, then claim the rater's next pair of ``next_kind`` (None when none
    is left, or when the claim is refused: paused, at the quota, a kind outside the
    study; the page's next claim then says why), so the rating page shows it without
    another round trip. The rating commits first; the claim is its own short
    transaction, and a refused claim never loses it."""
    result = rating_submit(rater=rater, dataset=dataset, slot_id=slot_id, **submission)
    try:
        return result, slot_claim(rater=rater, dataset=dataset, kind=next_kind)
    except (RaterPaused, QuotaReached, Forbidden):
        return result, None


# --- slot actions ------------------------------------------------------------------------


def slot_heartbeat(*, rater, dataset: str, slot_id: int, now: datetime | None = None) -> datetime:
    """Extend the lease on a held slot or gold lease; see ``annotation.queue.slot_heartbeat``."""
    participation(rater=rater, dataset=dataset)
    try:
        return queue.slot_heartbeat(rater=rater, dataset=dataset, slot_id=slot_id, now=now)
    except NotFound:
        expires = service_now(now) + lease_ttl()
        renewed = gold.gold_heartbeat(rater=rater, dataset=dataset, lease_id=slot_id, expires=expires)
        if renewed is None:
            raise
        return renewed


def slot_skip(*, rater, dataset: str, slot_id: int, now: datetime | None = None) -> int:
    """Pass on a held slot or gold lease; see ``annotation.queue.slot_skip``."""
    participation(rater=rater, dataset=dataset)
    try:
        return queue.slot_skip(rater=rater, dataset=dataset, slot_id=slot_id, now=now)
    except NotFound:
        pair_id = gold.gold_skip(rater=rater, dataset=dataset, lease_id=slot_id)
        if pair_id is None:
            raise
        return pair_id


def slot_flag(*, rater, dataset: str, slot_id: int, reason: str, note: str = "", now: datetime | None = None) -> Flag:
    """Report the pair of a held or rated slot or gold lease; see ``annotation.queue.slot_flag``."""
    participation(rater=rater, dataset=dataset)
    try:
        return queue.slot_flag(rater=rater, dataset=dataset, slot_id=slot_id, reason=reason, note=note, now=now)
    except NotFound:
        flag = gold.gold_flag(
            rater=rater, dataset=dataset, lease_id=slot_id, reason=reason, note=note, now=service_now(now)
        )
        if flag is None:
            raise
        return flag
