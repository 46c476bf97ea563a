"""Crowd-platform pages: a campaign link signs its own participant in (no password) and
sends them through the instructions, the quiz where a kind needs it and their quota of
pairs, to the end page: the completion code, the partial code, or a request to return
the study, and back to the platform.

A link that cannot be followed (unknown, closed, full, or an id whose account is not the
link's to sign in) shows a page saying why and signs nobody in. A link never changes who
is signed in by itself: a visitor signed in as anyone but the link's participant (an admin
who opens a crafted link, a participant of another id) is asked first, and only the
page's own form (a POST with its CSRF token) signs them out and the participant in; the
same participant coming back goes on without the question."""

from django.contrib.auth import login, logout
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods

from annotation.models import Participant, ParticipantOutcome
from annotation.people.crowd.completion import (
    PROLIFIC_HOME,
    Step,
    completion_url,
    participant_code,
    participant_finish,
    participant_next,
)
from annotation.people.crowd.join import JoinRefused, JoinTarget, join_target, participant_join
from annotation.people.crowd.study import ENDED_BY_PARTICIPANT
from config.client_ip import request_client_ip


@require_http_methods(["GET", "POST"])
def join(request, token: str):
    """Open a campaign link: the participant of the external id in the query string,
    made on the first visit and signed in, goes on to their next step. A visitor signed
    in as someone else gets the question first (GET); its form's POST switches."""
    try:
        target = join_target(token=token, params=request.GET)
        if request.method != "POST" and _signs_out(request, target):
            return _switch_page(request, target)
        participant = participant_join(token=token, params=request.GET, client_address=request_client_ip(request))
    except JoinRefused as refused:
        page = _crowd_page(request, "refused", "This link cannot be used", str(refused), status=refused.http_status)
        for header, value in (refused.headers or {}).items():
            page[header] = value
        return page
    if request.user.pk != participant.user_id:
        if request.user.is_authenticated:
            logout(request)
        login(request, participant.user, backend="django.contrib.auth.backends.ModelBackend")
    return _next_step(participant)


def _signs_out(request, target: JoinTarget) -> bool:
    """Whether following the link would sign out the user signed in now."""
    if not request.user.is_authenticated:
        return False
    return target.participant is None or target.participant.user_id != request.user.pk


def _switch_page(request, target: JoinTarget):
    """The question before a link signs out whoever is signed in; cancelling goes back
    where they came from (on this site), else home."""
    back = request.headers.get("Referer", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        back = reverse("home")
    context = {
        "signed_in_as": request.user.get_username(),
        "external_id": target.external_id,
        "id_param": target.link.id_param,
        "study": target.link.name,
        "cancel_url": back,
    }
    return render(request, "frontend/crowd_switch.html", context)


def join_next(request, token: str):
    """The participant's next step: rate (or take the quiz of) a kind, or finish."""
    participant = own_participation(request, token)
    if participant is None:
        return not_yours(request)
    return _next_step(participant)


def _next_step(participant: Participant):
    step, kind = participant_next(participant)
    token = participant.link.token
    if step == Step.RATE:
        return redirect("rate-page", dataset=participant.link.dataset.name, kind=kind.lower())
    if step == Step.CONSENT:
        return redirect("join-consent", token=token)
    if step in (Step.PRE, Step.POST):
        return redirect("join-questions", token=token, phase=step)
    return redirect("join-done", token=token)


def join_done(request, token: str):
    """The end of a participant's run, decided once and shown the same way after:
    the completion code once the quota is rated; the partial code when the pairs ran
    out first and the run earned it; the screen-out code after a failed quiz; else a
    request to return the study. The page stays until the participant leaves it (no
    timed redirect: the code must not vanish before it is copied), with a link back to
    the platform where the link knows one."""
    participant = own_participation(request, token)
    if participant is None:
        return not_yours(request)
    step, _ = participant_next(participant)
    if step in (Step.CONSENT, Step.PRE, Step.RATE, Step.POST):
        return redirect("join-next", token=token)
    if step != Step.FINISHED:
        participant = participant_finish(participant, step=step)
    link = participant.link
    url = completion_url(link, participant.outcome)
    extra = {"return_url": url, "return_label": _return_label(url)}
    if participant.outcome in ENDED_BY_PARTICIPANT:
        return _ended_page(request, participant, extra)
    numbers = f"you rated {participant.items_done} of {link.quota} items"
    code = participant_code(participant)
    if participant.outcome == ParticipantOutcome.COMPLETED:
        text = f"You rated every item of this study ({participant.items_done} of {link.quota}). Thank you!"
        return _crowd_page(request, "done", "Study complete", text, code=code, **extra)
    if participant.outcome == ParticipantOutcome.PARTIAL:
        text = (
            f"There are no more items for you in this study; {numbers}. Thank you! "
            "Enter the partial completion code below on the platform: it tells the researcher how far you got."
        )
        return _crowd_page(
            request,
            "partial",
            "No more items for you",
            text,
            code=code,
            code_label="Your partial completion code",
            **extra,
        )
    if participant.outcome == ParticipantOutcome.SCREENED_OUT:
        return _screened_out_page(request, code, extra)
    return _crowd_page(request, "returned", "No more items for you", _returned_text(participant, numbers), **extra)


def _screened_out_page(request, code: str, extra: dict):
    """A failed quiz: the link's screen-out code, which tells the platform the study
    screened them out (not that they gave up), or without one a request to return it."""
    said = "You did not pass the qualification quiz, so this study cannot continue. Thank you for your time."
    if code:
        text = f"{said} Enter the screen-out code below on the platform: it records that the quiz ended your study."
        return _crowd_page(
            request, "screened_out", "Thank you for trying", text, code=code, code_label="Your screen-out code", **extra
        )
    return _crowd_page(
        request, "screened_out", "Thank you for trying", f"{said} Please return the study on the platform.", **extra
    )


def _ended_page(request, participant: Participant, extra: dict):
    """The end of a run the participant ended: declined consent, or left the study."""
    link = participant.link
    back = "Please return the study on the platform."
    if participant.outcome == ParticipantOutcome.DECLINED:
        text = f"You did not agree, so you take no part in this study and nothing of yours was recorded. {back}"
        return _crowd_page(request, "declined", "You chose not to take part", text, **extra)
    text = (
        f"You left the study after rating {participant.items_done} of {link.quota} items. "
        f"It is marked as returned: there is no completion code. {back}"
    )
    return _crowd_page(request, "left", "You left the study", text, **extra)


def _returned_text(participant: Participant, numbers: str) -> str:
    link = participant.link
    if participant.items_done == 0 and participant.skips_done == 0:
        reason = "This study has nothing for you to rate"
    elif not link.partial_code:
        reason = "This study has no completion code for unfinished work"
    else:
        # The rule of annotation.people.crowd.completion.completion_outcome, in the participant's words.
        reason = (
            f"You skipped {participant.skips_done} and rated {participant.items_done}: a partial code needs "
            "at least one rating and no more skips than ratings"
        )
    return (
        f"There are no more items for you in this study; {numbers}. {reason}, so please return the study "
        "on the platform. If you think this is wrong, contact the researcher through the platform."
    )


def _return_label(url: str) -> str:
    return "Back to Prolific" if url.startswith(PROLIFIC_HOME) else "Back to the platform"


def participant_next_url(participant: Participant) -> str:
    """Where the rating page sends a participant with no pair left or at their quota."""
    return reverse("join-next", args=[participant.link.token])


def own_participation(request, token: str) -> Participant | None:
    """The signed-in user's run through the link of ``token``; None for anyone else."""
    if not request.user.is_authenticated:
        return None
    return (
        Participant.objects.select_related("link__dataset", "user").filter(link__token=token, user=request.user).first()
    )


def not_yours(request, *, text: str = "", status: int = 403):
    text = text or "Open the study from the platform's study page: the link there says who you are."
    return _crowd_page(request, "refused", "This link cannot be used", text, status=status)


def _crowd_page(request, state: str, title: str, text: str, *, status: int = 200, **extra):
    context = {"state": state, "title": title, "text": text, **extra}
    code, url = extra.get("code", ""), extra.get("return_url", "")
    context["code_in_url"] = bool(code and url and code in url)
    return render(request, "frontend/crowd.html", context, status=status)
