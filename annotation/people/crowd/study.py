"""The steps of a study around the ratings: the link's consent text first (the
participant agrees or declines), its questions before rating, its questions after, and a
run that ends on the participant's word (declined, or left with the "Leave the study"
button). ``study_gate`` is the rating policy's check that the steps before rating are
done: no claim, no rating page and no quiz before them."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from annotation.core.errors import DomainError, Forbidden
from annotation.models import Participant, ParticipantOutcome, QuestionPhase, StudyQuestion

# Runs ended by the participant: no code, no further claim.
ENDED_BY_PARTICIPANT = (ParticipantOutcome.LEFT, ParticipantOutcome.DECLINED)


class ConsentFirst(Forbidden):
    """The participant has not agreed to the link's consent text yet."""

    code = "consent_required"

    def __init__(self):
        super().__init__("agree to this study's consent text first: it comes before anything else")


class QuestionsFirst(Forbidden):
    """The participant has not sent the link's questions asked before rating."""

    code = "questions_first"

    def __init__(self):
        super().__init__("answer this study's questions first: they come before any rating")


class StudyEnded(Forbidden):
    """The participant left the study or did not consent: nothing more is theirs to rate."""

    code = "study_ended"

    def __init__(self, outcome: str):
        said = "did not agree to its consent text" if outcome == ParticipantOutcome.DECLINED else "left it"
        super().__init__(f"this study has ended for you: you {said}")


class StudyStepInvalid(DomainError):
    """A consent answer or an end that does not fit where the participant is."""

    code = "study_step_invalid"


def with_study_facts(participants: QuerySet[Participant]) -> QuerySet[Participant]:
    """``participants`` annotated with whether their link asks questions before
    (``has_pre_questions``) and after (``has_post_questions``) rating, in the same query."""
    asked = StudyQuestion.objects.filter(link_id=OuterRef("link_id"))
    return participants.annotate(
        has_pre_questions=Exists(asked.filter(phase=QuestionPhase.PRE)),
        has_post_questions=Exists(asked.filter(phase=QuestionPhase.POST)),
    )


def _asks(participant: Participant, phase: str) -> bool:
    """Whether the participant's link asks questions in ``phase``: the annotation of
    ``with_study_facts`` when the row came with it, else one query."""
    known = getattr(participant, f"has_{phase}_questions", None)
    if known is None:
        return StudyQuestion.objects.filter(link_id=participant.link_id, phase=phase).exists()
    return known


def consent_owed(participant: Participant) -> bool:
    return bool(participant.link.consent_text.strip()) and participant.consented_at is None


def questions_owed(participant: Participant, phase: str) -> bool:
    answered = participant.pre_answered_at if phase == QuestionPhase.PRE else participant.post_answered_at
    return answered is None and _asks(participant, phase)


def study_gate(participant: Participant) -> None:
    """Raise StudyEnded for a run the participant ended, ConsentFirst before they agreed
    to the link's consent text, QuestionsFirst before they sent its questions asked
    before rating. No query once those are done (or when the row came through
    ``with_study_facts``)."""
    if participant.outcome in ENDED_BY_PARTICIPANT:
        raise StudyEnded(participant.outcome)
    if consent_owed(participant):
        raise ConsentFirst()
    if questions_owed(participant, QuestionPhase.PRE):
        raise QuestionsFirst()


def participant_consent(participant: Participant, *, agree: bool, now: datetime | None = None) -> Participant:
    """Record the participant's answer to the consent text: agreeing opens the study
    (once; agreeing again changes nothing), declining ends the run without a code.
    Raises StudyStepInvalid when the link asks no consent, the run has ended, or a
    participant who agreed declines (they leave with "Leave the study" instead)."""
    now = now or timezone.now()
    if not participant.link.consent_text.strip():
        raise StudyStepInvalid("this study asks for no consent")
    if participant.finished_at is not None:
        raise StudyStepInvalid("this study has ended for you")
    if participant.consented_at is not None:
        if not agree:
            raise StudyStepInvalid("you agreed already; use 'Leave the study' to stop")
        return participant
    if agree:
        Participant.objects.filter(pk=participant.pk, consented_at__isnull=True).update(consented_at=now)
        participant.refresh_from_db()
        return participant
    Participant.objects.filter(pk=participant.pk, finished_at__isnull=True).update(
        finished_at=now, outcome=ParticipantOutcome.DECLINED
    )
    participant.refresh_from_db()
    return participant
