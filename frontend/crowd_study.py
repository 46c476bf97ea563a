"""The study steps of a campaign link around the ratings: the consent page
(agree, or decline and go back to the platform without a code), the questions before and
after rating, and "Leave the study" (a confirmation, then the held item is released and
the run ends as left). Each page answers only the participant of the link signed in, and
only at its step of their run (``participant_next``); another step sends them on."""

from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from annotation.core.errors import DomainError
from annotation.models import QuestionPhase
from annotation.people.crowd.completion import Step, participant_next
from annotation.people.crowd.questions import AnswersInvalid, answers_save, phase_questions
from annotation.people.crowd.study import participant_consent
from annotation.rating import policy
from frontend.crowd import not_yours, own_participation

PHASES = {"pre": QuestionPhase.PRE, "post": QuestionPhase.POST}
PHASE_TITLES = {QuestionPhase.PRE: "Before you start", QuestionPhase.POST: "Before you finish"}


@require_http_methods(["GET", "POST"])
def join_consent(request, token: str):
    """The link's consent or welcome text; "I agree" goes on, "I do not agree" ends the
    run (no code) and sends the participant back to the platform."""
    participant = own_participation(request, token)
    if participant is None:
        return not_yours(request)
    if participant_next(participant)[0] != Step.CONSENT:
        return redirect("join-next", token=token)
    if request.method == "POST":
        choice = request.POST.get("consent")
        if choice not in ("agree", "decline"):
            return _consent_page(request, participant, problem="Choose “I agree” or “I do not agree”.", status=400)
        try:
            participant_consent(participant, agree=choice == "agree")
        except DomainError as refused:
            return _consent_page(request, participant, problem=str(refused), status=409)
        return redirect("join-next", token=token)
    return _consent_page(request, participant)


def _consent_page(request, participant, *, problem: str = "", status: int = 200):
    context = {"participant": participant, "link": participant.link, "problem": problem}
    return render(request, "frontend/crowd_consent.html", context, status=status)


@require_http_methods(["GET", "POST"])
def join_questions(request, token: str, phase: str):
    """The link's questions of ``phase`` (pre: before rating, post: after), each free
    text or one of its options; sent once, checked per question."""
    participant = own_participation(request, token)
    if participant is None:
        return not_yours(request)
    phase = PHASES.get(phase)
    if phase is None or participant_next(participant)[0] != phase:
        return redirect("join-next", token=token)
    questions = phase_questions(participant.link_id, phase)
    problems, given = {}, {}
    if request.method == "POST":
        given = {str(q.pk): request.POST.get(f"q{q.pk}", "") for q in questions}
        try:
            answers_save(participant, phase=phase, answers=given)
        except AnswersInvalid as invalid:
            problems = invalid.problems
        except DomainError as refused:
            return not_yours(request, text=str(refused), status=409)
        else:
            return redirect("join-next", token=token)
    rows = [{"question": q, "value": given.get(str(q.pk), ""), "problem": problems.get(q.pk, "")} for q in questions]
    context = {"participant": participant, "title": PHASE_TITLES[phase], "rows": rows, "problems": problems}
    return render(request, "frontend/crowd_questions.html", context, status=400 if problems else 200)


@require_http_methods(["GET", "POST"])
def join_leave(request, token: str):
    """ "Leave the study": GET asks to confirm; POST releases the item held (back to the
    queue or gold at once) and ends the run as left, then shows the end page."""
    participant = own_participation(request, token)
    if participant is None:
        return not_yours(request)
    if participant.finished_at is not None:
        return redirect("join-done", token=token)
    if request.method == "POST":
        policy.participant_leave(rater=request.user, dataset=participant.link.dataset.name)
        return redirect("join-done", token=token)
    return render(request, "frontend/crowd_leave.html", {"participant": participant})
