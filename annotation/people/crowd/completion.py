"""A participant's way through a campaign link: where they go next
(``participant_next``), how their run ends and with which code (``completion_outcome``,
``participant_finish``, ``participant_code``), and where the end page sends them
(``completion_url``)."""

from __future__ import annotations

from datetime import datetime
from urllib.parse import urlencode

from django.utils import timezone

from annotation.models import (
    CampaignLink,
    GoldLease,
    GoldLeaseState,
    PairSkip,
    Participant,
    ParticipantOutcome,
    Qualification,
    QuestionPhase,
)

# QuotaReached is re-exported: the crowd's callers meet it when a participant is done.
from annotation.people.crowd.quota import QuotaReached as QuotaReached
from annotation.people.crowd.quota import participant_items_done
from annotation.people.crowd.study import ENDED_BY_PARTICIPANT, consent_owed, questions_owed
from annotation.quality.quiz import quiz_failed_kinds, quiz_offered
from annotation.serving.pairs_left import rater_kinds_with_pairs_left

PROLIFIC_COMPLETE = "https://app.prolific.com/submissions/complete"
# Where a Prolific participant who leaves goes when the link names no page of its own:
# their Prolific home, where they return the study.
PROLIFIC_HOME = "https://app.prolific.com/"


class Step:
    """Where a participant goes next (``participant_next``)."""

    CONSENT = "consent"  # agree to the link's consent text (or decline)
    PRE = "pre"  # answer the link's questions asked before rating
    RATE = "rate"  # rate (or take the quiz of) ``kind``
    POST = "post"  # answer the link's questions asked after rating
    DONE = "done"  # the quota is rated: the completion code
    NO_WORK = "no_work"  # nothing left for them before the quota: the partial code, if earned
    SCREENED_OUT = "screened_out"  # qualified for no kind, a quiz failed: the screen-out code, if set
    FINISHED = "finished"  # the end page was shown: ``Participant.outcome`` says which


def participant_next(participant: Participant) -> tuple[str, str | None]:
    """(Step, kind): the link's consent text, then its questions before rating, then a
    quiz of the link's kinds the participant still has to take, then the first kind they
    may rate with pairs left for them; once through, the questions after rating, then
    why they are through."""
    if participant.finished_at is not None:
        return Step.FINISHED, None
    if consent_owed(participant):
        return Step.CONSENT, None
    if questions_owed(participant, QuestionPhase.PRE):
        return Step.PRE, None
    step, kind = _rating_step(participant)
    if step in (Step.DONE, Step.NO_WORK) and questions_owed(participant, QuestionPhase.POST):
        return Step.POST, None
    return step, kind


def _rating_step(participant: Participant) -> tuple[str, str | None]:

    link = participant.link
    qualified = set(
        Qualification.objects.filter(rater_id=participant.user_id)
        .in_dataset(link.dataset_id)
        .values_list("kind", flat=True)
    )
    # The quiz gates its kind's ratings and screens the participant: taken before any
    # quiz-free kind of the link, and before the quota counts, so nobody rates their
    # quota around it (the rating policy refuses such claims: QuizFirst).
    for kind in link.kinds:
        if kind not in qualified and quiz_offered(rater=participant.user, dataset_id=link.dataset_id, kind=kind):
            return Step.RATE, kind
    if participant_items_done(participant) >= link.quota:
        return Step.DONE, None
    left = rater_kinds_with_pairs_left(rater=participant.user, kinds=list(link.kinds), dataset_id=link.dataset_id)
    for kind in link.kinds:
        if kind in qualified and kind in left:
            return Step.RATE, kind
    if qualified.intersection(link.kinds):
        return Step.NO_WORK, None
    # Screened out only by a quiz failed: a kind closed for any other reason (its quiz
    # pool shrank under the attempt's size) is no failure of theirs and earns no
    # screen-out code; the run ends with nothing to rate.
    if quiz_failed_kinds(rater=participant.user, dataset_id=link.dataset_id, kinds=list(link.kinds)):
        return Step.SCREENED_OUT, None
    return Step.NO_WORK, None


def participant_skips(participant: Participant) -> int:
    """Pairs (ordinary and gold) the participant skipped or flagged in the link's
    dataset since joining it."""
    ordinary = PairSkip.objects.filter(
        rater_id=participant.user_id,
        pair__dataset_id=participant.link.dataset_id,
        created_at__gte=participant.started_at,
    ).count()
    gold = GoldLease.objects.filter(
        rater_id=participant.user_id,
        dataset_id=participant.link.dataset_id,
        state=GoldLeaseState.SKIPPED,
        leased_at__gte=participant.started_at,
    ).count()
    return ordinary + gold


def completion_outcome(*, step: str, items_done: int, skips_done: int, partial_code: str) -> str:
    """How a run that reached ``step`` ends (a ParticipantOutcome value).

    The full code needs the quota rated (``Step.DONE``). A run whose pairs ran out first
    earns the link's partial code only with real work in it: at least one rating and no
    more skips than ratings, so skipping pairs until the queue is empty (each skip takes
    a pair out of the participant's queue for good) earns nothing. A failed quiz
    (``Step.SCREENED_OUT``) is screened out, with the link's screen-out code if it has
    one. Everything else, and any run of a link without a partial code, is asked to
    return the study."""
    if step == Step.DONE:
        return ParticipantOutcome.COMPLETED
    if step == Step.SCREENED_OUT:
        return ParticipantOutcome.SCREENED_OUT
    if step == Step.NO_WORK and partial_code and items_done >= 1 and skips_done <= items_done:
        return ParticipantOutcome.PARTIAL
    return ParticipantOutcome.RETURNED


def participant_finish(participant: Participant, *, step: str, now: datetime | None = None) -> Participant:
    """End the run (once) as ``step`` decides: record the items rated, the skips and
    the outcome (``completion_outcome``). A finished run keeps what was recorded first:
    its end page shows the same code, or none, every time; the claim serves it nothing."""
    if participant.finished_at is None:
        if step not in (Step.DONE, Step.NO_WORK, Step.SCREENED_OUT):
            raise ValueError(f"a run cannot end at step {step!r}")
        done, skips = participant_items_done(participant), participant_skips(participant)
        outcome = completion_outcome(
            step=step, items_done=done, skips_done=skips, partial_code=participant.link.partial_code
        )
        Participant.objects.filter(pk=participant.pk, finished_at__isnull=True).update(
            finished_at=now or timezone.now(), items_done=done, skips_done=skips, outcome=outcome
        )
        participant.refresh_from_db()
    return participant


def participant_end(participant: Participant, *, outcome: str, now: datetime | None = None) -> Participant:
    """End the run on the participant's word (``LEFT``; ``DECLINED`` is the consent
    step's), recording the items rated and skipped so far; a run that has ended keeps
    its first end. The caller releases what they hold first (the rating policy's
    ``participant_leave``, which holds the run's lock)."""
    if outcome not in ENDED_BY_PARTICIPANT:
        raise ValueError(f"a participant ends a run as left or declined, not {outcome!r}")
    if participant.finished_at is None:
        Participant.objects.filter(pk=participant.pk, finished_at__isnull=True).update(
            finished_at=now or timezone.now(),
            outcome=outcome,
            items_done=participant_items_done(participant),
            skips_done=participant_skips(participant),
        )
        participant.refresh_from_db()
    return participant


def participant_code(participant: Participant) -> str:
    """The code the participant's finished run was given: the completion code, the
    partial code, the screen-out code (which may be ''), or '' (returned, left, declined)."""
    link = participant.link
    return {
        ParticipantOutcome.COMPLETED: link.completion_code,
        ParticipantOutcome.PARTIAL: link.partial_code,
        ParticipantOutcome.SCREENED_OUT: link.screenout_code,
    }.get(participant.outcome, "")


def completion_url(link: CampaignLink, outcome: str = ParticipantOutcome.COMPLETED) -> str:
    """Where the end page sends the participant back to the platform; '' when the link
    names no page for it. A completed run goes to the link's return URL, or Prolific's
    with the code. A partial or screened-out run with a code of its own goes to
    Prolific's URL with that code only when the link has no return URL of its own (that
    one may carry the full code). Every other run (no code: returned, left, declined,
    or screened out by a link without a screen-out code) goes to the link's leave URL,
    or Prolific's home for a Prolific link, where they return the study."""
    if outcome == ParticipantOutcome.COMPLETED:
        if link.return_url:
            return link.return_url
        return f"{PROLIFIC_COMPLETE}?{urlencode({'cc': link.completion_code})}"
    code = {ParticipantOutcome.PARTIAL: link.partial_code, ParticipantOutcome.SCREENED_OUT: link.screenout_code}
    if code.get(outcome) and not link.return_url and link.id_param == "PROLIFIC_PID":
        return f"{PROLIFIC_COMPLETE}?{urlencode({'cc': code[outcome]})}"
    if link.leave_url:
        return link.leave_url
    return PROLIFIC_HOME if link.id_param == "PROLIFIC_PID" else ""
