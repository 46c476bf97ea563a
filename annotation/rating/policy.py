"""The one rating policy: every claim and every submit, from the API, the rating page, the
quiz and the join flow, passes here, in this order:

1. WHO: an authenticated rater, or a crowd participant of this dataset (a participant
   acts only in the dataset and the kinds of their campaign link, once they agreed to
   its consent text and sent its questions asked before rating, and not after they left
   the study: ``annotation.people.crowd.study.study_gate``).
2. MAY THEY: the role; the qualification for this dataset and kind and the pause (both
   checked inside the claim statement itself, so a plain rater's claim costs no extra
   round trip); for a participant, the quiz first (no kind is claimed or opened while a
   quiz of another of the link's kinds is still owed: offered, not passed, attempts
   left), the quota (``annotation.people.crowd.quota``: ratings, queue gold ratings and leases
   held, over the link's kinds since joining) and no claim once the completion code was
   shown.
3. WHAT: a gold pair now and then, else the queue's next slot: serving's routing
   decides (``annotation.serving.routing``).

A submit re-checks what can change since the claim: the pause (folded into the submit
statement; the stepwise paths raise RaterPaused), and for a participant the quota and
the link's kinds. Whether an id is a slot or a gold lease is the routing's to find. A
participant's claims and submits take a lock on their participation row, so two tabs
cannot both take the last item of a quota.

The queue and gold serving are mechanisms: they import nothing from here, from the
crowd or from the quiz.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from annotation import serving as queue
from annotation.core.errors import Forbidden
from annotation.core.roles import PARTICIPANT, has_role, may_rate
from annotation.models import (
    Flag,
    GoldLease,
    GoldLeaseState,
    Participant,
    ParticipantOutcome,
    Qualification,
    RatingSlot,
    SlotState,
)
from annotation.people.crowd.completion import participant_end
from annotation.people.crowd.quota import QuotaReached, QuotaUse, quota_reached_error, quota_use
from annotation.people.crowd.study import study_gate, with_study_facts
from annotation.quality.quiz import quiz_offered
from annotation.rating import storing
from annotation.serving import routing
from annotation.serving.pauses import RaterPaused
from annotation.serving.shapes import (
    Assignment,
    ClaimRead,
    SubmitResult,
    check_kind,
)
from annotation.serving.submit_then_claim import HANDED_OVER

__all__ = [
    "QuizFirst",
    "QuotaReached",
    "entry_check",
    "participant_leave",
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
    if not _is_participant(rater):
        return None
    return _participation_of(rater=rater, dataset=dataset, lock=False)  # pragma: no mutate (None is no lock either)


def _is_participant(rater) -> bool:
    """Whether the rater acts as a crowd participant; raises Forbidden for a user who may
    not rate at all. Raters and campaign-link participants (who are not in the rater
    group) rate."""
    if not may_rate(rater):
        raise Forbidden(f"{rater.get_username()} is not a rater; only raters rate")
    return has_role(rater, PARTICIPANT)


def _participation_of(*, rater, dataset: str, lock: bool) -> Participant:
    """The participant's latest run through a link of ``dataset``, in one query; with
    ``lock``, its row stays locked until the transaction ends, so their claims and
    submits take their quota decisions one at a time. Raises Forbidden outside the
    dataset of their study."""
    runs = with_study_facts(
        Participant.objects.select_related("link__dataset").filter(user=rater, link__dataset__name=dataset)
    )
    if lock:
        runs = runs.select_for_update(of=("self",))
    participant = runs.order_by("-started_at").first()
    if participant is None:
        raise Forbidden("you joined a study through its link; you may rate only in that study")
    return participant


def _check_link_kind(participant: Participant, kind: str) -> None:
    kinds = participant.link.kinds
    if kind not in kinds:
        raise Forbidden(f"this study asks for {', '.join(kinds)} ratings, not {kind}")


class QuizFirst(Forbidden):
    """A participant asked for a kind while the quiz of another of their link's kinds is
    still theirs to take; ``kind`` names that quiz."""

    code = "quiz_first"

    def __init__(self, kind: str):
        super().__init__(f"take the {kind} quiz of this study first: it comes before any rating")
        self.kind = kind


def _check_quiz_first(participant: Participant, *, kind: str | None) -> None:
    """Raise QuizFirst while a quiz of a link kind other than ``kind`` is owed (offered,
    not passed, attempts left): the quiz screens the participant, so no script rates
    the quota of a quiz-free kind around it. Each link kind costs a query or two; a
    link of one kind asking for it costs none."""
    link = participant.link
    for other in link.kinds:
        if other != kind and quiz_offered(rater=participant.user_id, dataset_id=link.dataset_id, kind=other):
            raise QuizFirst(other)


def entry_check(*, rater, dataset: str, kind: str) -> Participant | None:
    """Who may open a kind's rating page or take its quiz in a dataset: any rater; a
    participant only in their study's dataset and kinds, and only the owed quiz while
    one is owed. Returns the participation (None for a plain rater); raises Forbidden
    (QuizFirst naming the quiz to take)."""
    participant = participation(rater=rater, dataset=dataset)
    if participant is not None:
        _check_link_kind(participant, kind)
        study_gate(participant)
        _check_quiz_first(participant, kind=kind)
    return participant


# --- claim -------------------------------------------------------------------------------


def slot_claim(
    *, rater, dataset: str, kind: str | None = None, now: datetime | None = None, read: ClaimRead | None = None
) -> Assignment | None:
    """The rater's next item of ``dataset`` (``kind`` narrows it to one kind): their held
    lease resumed, else now and then a gold pair, else the queue's next slot; None when
    nothing is left for them. Raises Forbidden (who or may they: RaterPaused,
    QuotaReached and plain Forbidden), NotFound for an unknown dataset. ``read``: run by
    the queue's claim statement, when one leases the item (``queue.slot_claim``)."""
    check_kind(kind)
    if not _is_participant(rater):
        return routing.claim(rater=rater, dataset=dataset, kind=kind, now=now, read=read)
    with transaction.atomic():
        participant = _participation_of(rater=rater, dataset=dataset, lock=True)
        return _participant_claim(participant, rater=rater, dataset=dataset, kind=kind, now=now, read=read)


def _participant_claim(
    participant: Participant,
    *,
    rater,
    dataset: str,
    kind: str | None,
    now: datetime | None,
    use: QuotaUse | None = None,
    read: ClaimRead | None = None,
    no_gold_held: bool = False,
) -> Assignment | None:
    """A locked participant's claim: the kinds ``_participant_claim_kinds`` allows, in
    order, until one serves an item. ``use``: their quota use when the caller knows it."""
    for each in _participant_claim_kinds(participant, rater=rater, kind=kind, use=use):
        assignment = routing.claim(
            rater=rater, dataset=dataset, kind=each, now=now, read=read, no_gold_held=no_gold_held
        )
        if assignment is not None:
            return assignment
    return None


def _participant_claim_kinds(
    participant: Participant, *, rater, kind: str | None, use: QuotaUse | None = None
) -> list[str]:
    """The kinds to try, in order, for a participant's claim: a kind they hold an item
    of first (resumed), then the link's other kinds. Raises QuotaReached once the
    completion code was shown or ratings and held items fill the quota (then only a
    held item may be resumed), QuizFirst while a quiz of another link kind is owed,
    Forbidden for a kind outside the link."""
    link = participant.link
    if kind is not None:
        _check_link_kind(participant, kind)
    study_gate(participant)
    if participant.finished_at is not None:
        raise quota_reached_error(participant)
    _check_quiz_first(participant, kind=kind)
    use = use or quota_use(participant)
    if use.done >= use.quota:
        raise quota_reached_error(participant)
    wanted = [kind] if kind is not None else list(link.kinds)
    held = list(dict.fromkeys(k for _, k in use.held if k in wanted))
    if use.done + len(use.held) >= use.quota:
        if not held:
            raise QuotaReached(
                f"the items you hold fill your quota of {use.quota}; rate them before you are served another"
            )
        # The first held kind resumes its held item; a second kind would be tried only if
        # that lease ran out in the instant between, a race no test pins: a longer slice
        # gives the same answer.
        return held[:1]  # pragma: no mutate
    if kind is not None:
        return [kind]
    granted = set(Qualification.objects.granted_kinds(rater=rater, dataset_id=link.dataset_id))
    kinds = held + [k for k in wanted if k not in held and k in granted]
    if not kinds:
        raise Forbidden(f"you are not qualified for this study's {', '.join(link.kinds)} ratings yet")
    return kinds


# --- submit ------------------------------------------------------------------------------


def rating_submit(*, rater, dataset: str, slot_id: int, now: datetime | None = None, **submission) -> SubmitResult:
    """Store the rater's rating of the slot (or gold lease) they hold; see
    ``annotation.serving.rating_submit`` for the submission's values and answers. Raises
    RaterPaused for a rater paused since the claim and, for a participant, QuotaReached
    when this rating would pass the quota, Forbidden for an item outside their study;
    nothing is stored then."""
    if not _is_participant(rater):
        return storing.store(rater=rater, dataset=dataset, slot_id=slot_id, now=now, submission=submission)
    with transaction.atomic():
        participant = _participation_of(rater=rater, dataset=dataset, lock=True)
        _participant_may_submit(participant, slot_id=slot_id, use=quota_use(participant))
        return storing.store(rater=rater, dataset=dataset, slot_id=slot_id, now=now, submission=submission)


def _participant_may_submit(participant: Participant, *, slot_id: int, use: QuotaUse) -> None:
    """Raise Forbidden for an item of a kind outside the participant's link, QuotaReached
    when rating it would pass the quota, StudyEnded once they left the study. An item
    they hold is of a link kind (``use`` holds only those) and needs no lookup."""
    study_gate(participant)
    if slot_id not in {held_id for held_id, _ in use.held}:
        fields = ("kind", "state", "rater_id")
        in_dataset = {"pk": slot_id, "dataset_id": participant.link.dataset_id}
        item = (
            RatingSlot.objects.filter(**in_dataset).values(*fields).first()
            or GoldLease.objects.filter(**in_dataset).values(*fields).first()
        )
        if item is None:
            return  # the queue names the unknown id
        _check_link_kind(participant, item["kind"])
        if item["state"] in (SlotState.DONE, GoldLeaseState.DONE) and item["rater_id"] == participant.user_id:
            return  # a repeat of a stored rating: the queue answers the replay, storing nothing
    if use.done + use.held_other_than(slot_id) >= use.quota:
        raise quota_reached_error(participant)


def rating_submit_and_claim_next(
    *, rater, dataset: str, slot_id: int, next_kind: str, read: ClaimRead | None = None, **submission
) -> tuple[SubmitResult, Assignment | None]:
    """Store a rating, then claim the rater's next pair of ``next_kind`` (None when none
    is left, or when the claim is refused: paused, at the quota, a kind outside the
    study; the page's next claim then says why), so the rating page shows it without
    another round trip. A refused claim never loses the rating: a rater's claim is its
    own transaction after the rating's (or, in one round trip with it, runs only once the
    rating is stored: storing.store_then_claim); a participant's runs in a savepoint of the
    rating's transaction, under the same lock of their run, with the quota use the
    submit read (one rated item more, one held less). ``read``: as ``slot_claim``'s."""
    check_kind(next_kind)
    if not _is_participant(rater):
        result, claimed = storing.store_then_claim(
            rater=rater, dataset=dataset, slot_id=slot_id, kind=next_kind, read=read, submission=submission
        )
        if claimed is HANDED_OVER:  # not claimed with the rating: claimed the way that serves gold
            claimed = _next_of(rater, dataset=dataset, kind=next_kind, read=read, result=result)
        return result, claimed
    with transaction.atomic():
        participant = _participation_of(rater=rater, dataset=dataset, lock=True)
        use = quota_use(participant)
        _participant_may_submit(participant, slot_id=slot_id, use=use)
        result = storing.store(rater=rater, dataset=dataset, slot_id=slot_id, now=None, submission=submission)
        after = use if result.replayed else use.after_rating(slot_id)
        try:
            with transaction.atomic():
                claimed = _participant_claim(
                    participant,
                    rater=rater,
                    dataset=dataset,
                    kind=next_kind,
                    now=None,
                    use=after,
                    read=read,
                    # A participant's held items are known here: a gold lease of the kind
                    # held beside the slot is resumed, never left for one over the quota.
                    no_gold_held=_no_gold_held(result, next_kind) and all(kind != next_kind for _, kind in after.held),
                )
        except (RaterPaused, QuotaReached, Forbidden):
            claimed = None
    return result, claimed


def _next_of(rater, *, dataset: str, kind: str, read: ClaimRead | None, result: SubmitResult) -> Assignment | None:
    """A rater's next pair after ``result`` was stored; None when a claim is refused."""
    try:
        return routing.claim(
            rater=rater, dataset=dataset, kind=kind, now=None, read=read, no_gold_held=_no_gold_held(result, kind)
        )
    except (RaterPaused, Forbidden):
        return None


def _no_gold_held(result: SubmitResult, next_kind: str) -> bool:
    """Whether the rater holds no gold lease of ``next_kind``, known from the rating just
    stored: they held a slot of that kind until it (a claim of a kind resumes the slot held
    rather than serving gold, and a gold lease held is resumed rather than a slot leased),
    so the next claim need not look for one. Only two claims of theirs at once (two tabs),
    or a gold pair deactivated while its lease was held and activated again, can leave a
    rater holding both; the gold lease then waits for their next plain claim, or its
    expiry. (A participant's claim checks the items they hold as well.)"""
    return result.held_kind is not None and result.held_kind == next_kind


# --- leaving ------------------------------------------------------------------------------


class NotAParticipant(Forbidden):
    code = "not_a_participant"


def participant_leave(*, rater, dataset: str, now: datetime | None = None) -> Participant:
    """A participant leaves the study ("Leave the study"): every item they hold goes back
    through the skip path of the queue or of gold (claimable by another rater at once),
    then the run ends as left, without a code; all under the lock of their run, so no
    claim of another tab slips in between. Leaving again changes nothing. Raises
    NotAParticipant for a rater who came through no campaign link."""
    if not _is_participant(rater):
        raise NotAParticipant(f"{rater.get_username()} joined no study through a link; there is nothing to leave")
    with transaction.atomic():
        participant = _participation_of(rater=rater, dataset=dataset, lock=True)
        if participant.finished_at is None:
            held = [lease_id for lease_id, _ in quota_use(participant).held]
            queue.lock_pairs_of(held)
            for lease_id in held:
                slot_skip(rater=rater, dataset=dataset, slot_id=lease_id, now=now)
            participant = participant_end(participant, outcome=ParticipantOutcome.LEFT, now=now)
    return participant


# --- slot actions ------------------------------------------------------------------------


def slot_heartbeat(*, rater, dataset: str, slot_id: int, now: datetime | None = None) -> datetime:
    """Extend the lease on a held slot or gold lease; see ``annotation.serving.slot_heartbeat``."""
    participation(rater=rater, dataset=dataset)
    return routing.heartbeat(rater=rater, dataset=dataset, slot_id=slot_id, now=now)


def slot_skip(*, rater, dataset: str, slot_id: int, now: datetime | None = None) -> int:
    """Pass on a held slot or gold lease; see ``annotation.serving.slot_skip``."""
    participation(rater=rater, dataset=dataset)
    return routing.skip(rater=rater, dataset=dataset, slot_id=slot_id, now=now)


def slot_flag(*, rater, dataset: str, slot_id: int, reason: str, note: str = "", now: datetime | None = None) -> Flag:
    """Report the pair of a held or rated slot or gold lease; see ``annotation.serving.slot_flag``."""
    participation(rater=rater, dataset=dataset)
    return routing.flag(rater=rater, dataset=dataset, slot_id=slot_id, reason=reason, note=note, now=now)
