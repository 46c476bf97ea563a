"""A link's short questions before and after the ratings: the check of a
question as the admin writes it (``question_check``), the questions of a phase, and a
participant's answers, checked against each question's type and options and stored once
(``answers_save``)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.core.errors import DomainError
from annotation.models import AnswerType, Participant, ParticipantAnswer, QuestionPhase, StudyQuestion
from annotation.people.crowd.completion import Step, participant_next

MAX_OPTIONS = 20
MAX_OPTION_CHARS = 200
MAX_ANSWER_CHARS = 2000
PHASE_STEP = {QuestionPhase.PRE: Step.PRE, QuestionPhase.POST: Step.POST}


class QuestionInvalid(DomainError):
    code = "study_question_invalid"


class AnswersInvalid(DomainError):
    """Answers that cannot be stored; ``problems`` maps a question's id to what is wrong
    with its answer (nothing was stored)."""

    code = "study_answers_invalid"

    def __init__(self, problems: dict[int, str]):
        super().__init__("; ".join(problems.values()))
        self.problems = problems


class AnswersNotExpected(DomainError):
    """Answers sent at another step of the run, or a second time."""

    code = "study_answers_not_expected"


def question_check(*, prompt: str, answer_type: str, options: list[str]) -> list[str]:
    """The question's options, stripped; raises QuestionInvalid naming the first problem:
    an empty prompt, an unknown type, options on a free-text question, fewer than two or
    more than MAX_OPTIONS options, an empty, too long or repeated option."""
    if not (prompt or "").strip():
        raise QuestionInvalid("a question needs a prompt")
    if answer_type not in AnswerType.values:
        raise QuestionInvalid(f"the answer type must be one of {', '.join(AnswerType.values)}, got {answer_type!r}")
    cleaned = [option.strip() for option in options]
    if answer_type == AnswerType.TEXT:
        if cleaned:
            raise QuestionInvalid("a free-text question has no options; choose 'one of the options' to give some")
        return []
    if not 2 <= len(cleaned) <= MAX_OPTIONS:
        raise QuestionInvalid(f"a choice question needs 2 to {MAX_OPTIONS} options, one per line; got {len(cleaned)}")
    for option in cleaned:
        if not option:
            raise QuestionInvalid("an option is empty; write one option per line")
        if len(option) > MAX_OPTION_CHARS:
            raise QuestionInvalid(f"the option {option[:40]!r}... is longer than {MAX_OPTION_CHARS} characters")
    repeated = sorted({option for option in cleaned if cleaned.count(option) > 1})
    if repeated:
        raise QuestionInvalid(f"the option {repeated[0]!r} is given twice")
    return cleaned


def study_question_add(
    link, *, phase: str, prompt: str, answer_type: str = AnswerType.TEXT, options=(), required: bool = False
) -> StudyQuestion:
    """A new question of ``link``, asked last in its phase. Raises QuestionInvalid."""
    if phase not in QuestionPhase.values:
        raise QuestionInvalid(f"the phase must be one of {', '.join(QuestionPhase.values)}, got {phase!r}")
    cleaned = question_check(prompt=prompt, answer_type=answer_type, options=list(options))
    with transaction.atomic():
        last = StudyQuestion.objects.filter(link=link, phase=phase).order_by("-position").first()
        return StudyQuestion.objects.create(
            link=link,
            phase=phase,
            position=(last.position + 1) if last else 1,
            prompt=prompt.strip(),
            answer_type=answer_type,
            options=cleaned,
            required=required,
        )


def phase_questions(link_id: int, phase: str) -> list[StudyQuestion]:
    """The phase's questions in their order (a position is the link's and phase's once: a constraint)."""
    return list(StudyQuestion.objects.filter(link_id=link_id, phase=phase).order_by("position"))


def _answer_problem(question: StudyQuestion, value: str) -> str | None:
    if not value:
        return f"“{question.prompt}” needs an answer" if question.required else None
    if question.answer_type == AnswerType.CHOICE and value not in question.options:
        return f"“{question.prompt}”: choose one of {', '.join(question.options)}"
    if len(value) > MAX_ANSWER_CHARS:
        return f"“{question.prompt}”: at most {MAX_ANSWER_CHARS} characters, got {len(value)}"
    return None


def answers_save(
    participant: Participant, *, phase: str, answers: Mapping[str, str], now: datetime | None = None
) -> list[ParticipantAnswer]:
    """Store the participant's answers to their link's questions of ``phase`` (question
    id as text -> answer; a question missing or blank is unanswered) and move them on.
    Taken only at that step of their run (``participant_next``) and only once. Raises
    AnswersInvalid with a problem per question (a required one unanswered, a choice not
    among the options, an answer too long) and AnswersNotExpected when the run is not at
    this phase or sent them already; nothing is stored then."""
    if phase not in PHASE_STEP:
        raise AnswersNotExpected(f"unknown question phase {phase!r}; use pre or post")
    if participant_next(participant)[0] != PHASE_STEP[phase]:
        raise AnswersNotExpected(f"this study does not ask its {QuestionPhase(phase).label} questions now")
    now = now or timezone.now()
    questions = phase_questions(participant.link_id, phase)
    values = {question.pk: str(answers.get(str(question.pk)) or "").strip() for question in questions}
    problems = {q.pk: problem for q in questions if (problem := _answer_problem(q, values[q.pk])) is not None}
    if problems:
        raise AnswersInvalid(problems)
    rows = [
        ParticipantAnswer(participant=participant, question=q, answer=values[q.pk], answered_at=now)
        for q in questions
        if values[q.pk]
    ]
    stamp = "pre_answered_at" if phase == QuestionPhase.PRE else "post_answered_at"
    try:
        with transaction.atomic():
            # The stamp is taken first, on the row: of two sends at once, one stores.
            taken = Participant.objects.filter(pk=participant.pk, **{f"{stamp}__isnull": True}).update(**{stamp: now})
            if not taken:
                raise AnswersNotExpected("you sent these answers already")
            ParticipantAnswer.objects.bulk_create(rows)
    except IntegrityError:
        raise AnswersNotExpected("you sent these answers already") from None
    setattr(participant, stamp, now)
    return rows
