"""Crowd-platform pages: a campaign link signs the participant in (no password) and sends
them through the instructions, the quiz where a kind needs it and their quota of pairs,
to the completion code and back to the platform."""

from django.contrib.auth import login
from django.shortcuts import redirect, render
from django.urls import reverse

from annotation.crowd import (
    JoinRefused,
    Step,
    completion_url,
    participant_finish,
    participant_join,
    participant_next,
)
from annotation.models import Participant

# Long enough to copy the code, short enough that nobody wonders what to do next.
REDIRECT_SECONDS = 8


def join(request, token: str):
    """Open a campaign link: the participant of the external id in the query string,
    made on the first visit and signed in, goes on to their next step."""
    try:
        participant = participant_join(token=token, params=request.GET)
    except JoinRefused as refused:
        return _crowd_page(request, "refused", "This link cannot be used", str(refused), status=refused.http_status)
    if request.user.pk != participant.user_id:
        login(request, participant.user, backend="django.contrib.auth.backends.ModelBackend")
    return _next_step(participant)


def join_next(request, token: str):
    """The participant's next step: rate (or take the quiz of) a kind, or finish."""
    participant = _own_participation(request, token)
    if participant is None:
        return _not_yours(request)
    return _next_step(participant)


def _next_step(participant: Participant):
    step, kind = participant_next(participant)
    if step == Step.RATE:
        return redirect("rate-page", dataset=participant.link.dataset.name, kind=kind.lower())
    return redirect("join-done", token=participant.link.token)


def join_done(request, token: str):
    """The end of a participant's run: the completion code and the way back, or, when
    every quiz was failed, a request to return the study (no code)."""
    participant = _own_participation(request, token)
    if participant is None:
        return _not_yours(request)
    step, _ = participant_next(participant)
    if step == Step.RATE:
        return redirect("join-next", token=token)
    link = participant.link
    if step == Step.SCREENED_OUT:
        text = (
            "You did not pass the qualification quiz, so this study cannot continue. Thank you for your time; "
            "please return the study on the platform."
        )
        return _crowd_page(request, "screened_out", "Thank you for trying", text)
    participant_finish(participant)
    text = (
        "You rated every item of this study. Thank you!"
        if step == Step.DONE
        else "There are no more pairs for you in this study right now; you are done. Thank you!"
    )
    return _crowd_page(
        request,
        "done",
        "Study complete",
        text,
        code=link.completion_code,
        redirect_url=completion_url(link),
        return_label="Back to Prolific"
        if link.id_param == "PROLIFIC_PID" and not link.return_url
        else "Back to the study",
    )


def participant_next_url(participant: Participant) -> str:
    """Where the rating page sends a participant with no pair left or at their quota."""
    return reverse("join-next", args=[participant.link.token])


def _own_participation(request, token: str) -> Participant | None:
    if not request.user.is_authenticated:
        return None
    return (
        Participant.objects.select_related("link__dataset", "user").filter(link__token=token, user=request.user).first()
    )


def _not_yours(request):
    text = "Open the study from the platform's study page: the link there says who you are."
    return _crowd_page(request, "refused", "This link cannot be used", text, status=403)


def _crowd_page(request, state: str, title: str, text: str, *, status: int = 200, **extra):
    context = {"state": state, "title": title, "text": text, "redirect_seconds": REDIRECT_SECONDS, **extra}
    return render(request, "frontend/crowd.html", context, status=status)
