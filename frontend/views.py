"""Pages. Views only gather what the template needs from selectors."""

from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import SetPasswordForm
from django.shortcuts import redirect, render
from django.urls import reverse

from annotation.catalog.selectors import dataset_get
from annotation.core.errors import Forbidden, NotFound
from annotation.core.roles import PARTICIPANT, has_role, may_rate
from annotation.models import QUIZ_ATTEMPTS, FlagReason, QuizAttempt, TaskKind
from annotation.people.accounts import WeakPassword
from annotation.people.crowd.completion import Step, participant_next
from annotation.people.crowd.study import ConsentFirst, QuestionsFirst, StudyEnded
from annotation.people.onboarding import InvitationInvalid, invitation_accept, invitation_get
from annotation.people.selectors import qualification_kinds
from annotation.quality.quiz import quiz_attempt_length, quiz_offered
from annotation.rating import policy
from annotation.serving.pauses import active_pause
from frontend.crowd import participant_next_url
from frontend.instructions import INSTRUCTIONS, levels_for
from frontend.rater_pages import quiz_offers
from frontend.review_pages import review_page
from frontend.selectors import home_sections, rater_work_list, worked_example_list

# A participant who asks for a rating page before their study's consent or questions, or
# after leaving it, is sent along their link instead.
STUDY_STEPS_FIRST = (ConsentFirst, QuestionsFirst, StudyEnded)


@login_required
def home(request):
    """Each role's way to its work; the database path only for admins."""
    return render(request, "frontend/home.html", home_sections(user=request.user))


@login_required
def rate_home(request):
    context = {"work": rater_work_list(rater=request.user), "offers": quiz_offers(rater=request.user)}
    return render(request, "frontend/rate_home.html", context)


def rate_api_base(dataset: str) -> str:
    """The prefix the page's API client (static rate/api.js) puts before ``claim/``,
    ``slots/<id>/submit/``, ``progress/`` ...: the rating API's URLs for ``dataset``."""
    claim_url = reverse("rate-claim", args=[dataset])
    return claim_url.removesuffix("claim/")


@login_required
def rate_page(request, dataset: str, kind: str):
    kind = kind.upper()
    if kind not in TaskKind.values:
        return render(
            request,
            "frontend/message.html",
            {"title": "No such task", "text": f"There is no task kind {kind!r}."},
            status=404,
        )
    try:
        dataset_obj = dataset_get(name=dataset)
    except NotFound:
        return _no_such_dataset(request, dataset)
    if active_pause(rater=request.user, dataset_id=dataset_obj.pk) is not None:
        return redirect("rate-paused", dataset=dataset_obj.name)
    participant = None
    if has_role(request.user, PARTICIPANT):
        # A participant sees only their study's dataset and kinds (the rating policy's WHO).
        try:
            participant = policy.entry_check(rater=request.user, dataset=dataset_obj.name, kind=kind)
        except policy.QuizFirst as owed:
            return redirect("rate-page", dataset=dataset_obj.name, kind=owed.kind.lower())
        except STUDY_STEPS_FIRST:
            # Consent and the questions before rating come first; the link knows the way.
            return redirect("join-next", token=policy.participation(rater=request.user, dataset=dataset).link.token)
        except Forbidden as refused:
            text = str(refused)
            context = {"title": "Not part of your study", "text": text[:1].upper() + text[1:] + "."}
            return render(request, "frontend/message.html", context, status=403)
    if participant is not None:
        # A participant follows their link's order (a quiz before any rating), not URLs.
        step, next_kind = participant_next(participant)
        if step != Step.RATE:
            return redirect("join-done", token=participant.link.token)
        if next_kind != kind:
            return redirect("rate-page", dataset=dataset_obj.name, kind=next_kind.lower())
    is_rater = may_rate(request.user)
    kinds = qualification_kinds(rater=request.user, dataset_id=dataset_obj.pk) if is_rater else []
    if kind not in kinds:
        if is_rater and quiz_offered(rater=request.user, dataset_id=dataset_obj.pk, kind=kind):
            return _quiz_page(request, dataset_obj, kind, participant)
        return render(
            request,
            "frontend/message.html",
            {"title": "Not qualified for this task", "text": _not_qualified_text(request.user, dataset_obj, kind)},
            status=403,
        )
    if kind == TaskKind.REV:
        return review_page(request, dataset_obj)
    config = {
        "dataset": dataset_obj.name,
        "kind": kind,
        "user": storage_name(request.user, participant),
        "api_base": rate_api_base(dataset_obj.name),
        "levels": levels_for(kind),
        # Where the no-work state sends the rater when this task is done and others are not.
        "other_tasks": [
            {
                "kind": other,
                "title": INSTRUCTIONS[other]["title"],
                "url": reverse("rate-page", args=[dataset, other.lower()]),
            }
            for other in kinds
            if other != kind
        ],
        # A crowd participant goes on through their campaign link, never to other tasks.
        "next_url": participant_next_url(participant) if participant else None,
    }
    return render(
        request,
        "frontend/rate.html",
        {
            "dataset": dataset_obj,
            "kind": kind,
            "instructions": INSTRUCTIONS[kind],
            "examples": worked_example_list(dataset=dataset_obj, kind=kind),
            "flag_reasons": FlagReason.choices,
            "config": config,
            "participant": participant,
        },
    )


def storage_name(user, participant) -> str:
    """The name the page keys its browser storage by: a participant's account name (their
    platform id) is never put on the page."""
    return f"participant-{participant.pk}" if participant else user.username


def _not_qualified_text(user, dataset, kind: str) -> str:
    failed = QuizAttempt.objects.filter(rater=user, dataset=dataset, kind=kind, passed=False).count()
    if failed >= QUIZ_ATTEMPTS:
        return (
            f"You did not pass the {TaskKind(kind).label} quiz in {QUIZ_ATTEMPTS} attempts, so this task stays closed."
        )
    return f"You are not qualified to rate {TaskKind(kind).label} pairs. Ask an admin to qualify you."


def _quiz_page(request, dataset, kind: str, participant):
    """The rating page in quiz mode: the kind's qualification quiz in place of the task."""
    config = {
        "dataset": dataset.name,
        "kind": kind,
        "user": storage_name(request.user, participant),
        "levels": levels_for(kind),
        "quiz_url": reverse("quiz-state", args=[dataset.name, kind.lower()]),
        "quiz_failed_text": "Both attempts are used, so this task stays closed to you. Thank you for your time.",
        "next_url": participant_next_url(participant) if participant else None,
    }
    context = {
        "dataset": dataset,
        "kind": kind,
        "quiz": True,
        "quiz_total": quiz_attempt_length(dataset_id=dataset.pk, kind=kind),
        "instructions": INSTRUCTIONS[kind],
        "examples": worked_example_list(dataset=dataset, kind=kind),
        "config": config,
        "participant": participant,
    }
    return render(request, "frontend/rate.html", context)


def _no_such_dataset(request, dataset: str):
    return render(
        request,
        "frontend/message.html",
        {"title": "No such dataset", "text": f"There is no dataset named {dataset!r}."},
        status=404,
    )


@login_required
def rate_paused(request, dataset: str):
    """The page of a rater an admin (or the gold rule) paused in a dataset; once the pause
    is lifted it sends them back to their tasks."""
    try:
        dataset_obj = dataset_get(name=dataset)
    except NotFound:
        return _no_such_dataset(request, dataset)
    pause = active_pause(rater=request.user, dataset_id=dataset_obj.pk)
    if pause is None:
        return redirect("rate-home")
    return render(request, "frontend/paused.html", {"dataset": dataset_obj, "pause": pause})


def invitation(request, token: str):
    """A new rater sets their password from their invitation link, then is signed in
    and taken to their tasks. An unknown, used or expired link says so."""
    try:
        invited = invitation_get(token=token).user
    except InvitationInvalid as problem:
        return render(request, "frontend/invitation.html", {"problem": str(problem)}, status=404)
    form = SetPasswordForm(invited, request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            user = invitation_accept(token=token, password=form.cleaned_data["new_password1"])
        except InvitationInvalid as problem:
            return render(request, "frontend/invitation.html", {"problem": str(problem)}, status=404)
        except WeakPassword as weak:
            form.add_error("new_password1", str(weak))
        else:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            return redirect("rate-home")
    return render(request, "frontend/invitation.html", {"invited": invited, "form": form})
