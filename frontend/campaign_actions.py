"""What an admin does about a rater from the campaign pages: pause, lift a
pause, exclude the rater's ratings (after a page that says how many ratings and pairs it
hits) and undo the exclusion. Admins only: researchers see the flags but no buttons.

Each view parses the form, calls one service of annotation.quality and redirects; a
refusal of the service (a pause already there, an exclusion already applied ...) is a
page naming it, with the service's status code.
"""

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST

from annotation.catalog.selectors import dataset_get
from annotation.core.errors import Conflict, DomainError, NotFound
from annotation.core.roles import ADMIN, has_role
from annotation.dashboard.selectors import campaign_snapshot_part
from annotation.quality.exclusion.selectors import exclusion_get
from annotation.quality.exclusion.services import (
    rating_exclusion_create,
    rating_exclusion_preview,
    rating_exclusion_undo,
)
from annotation.quality.flag_settings import flag_thresholds_get
from annotation.quality.pauses import rater_pause, rater_pause_lift
from annotation.serving.pauses import active_pause
from frontend.campaign_raters import flagged_raters
from frontend.selectors import campaign_user_get

ACTION_KEYS = ("raters",)


def campaign_admin(view):
    """Admins (staff included) only: others get the 403 page, anonymous users the login
    page. Unknown datasets and users are 404 pages."""

    @wraps(view)
    def checked(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not has_role(request.user, ADMIN):
            raise PermissionDenied("only admins pause and exclude raters")
        try:
            return view(request, *args, **kwargs)
        except NotFound as error:
            raise Http404(str(error)) from error

    return checked


def _back(request, dataset: str, rater_id: int) -> str:
    """The page the button was on (``next``), else the rater table, at the rater's row."""
    back = request.POST.get("next", "")
    if not back.startswith("/") or not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
        back = reverse("campaign-raters", args=[dataset]) + f"#rater-{rater_id}"
    return back


def _refused(request, dataset, error: DomainError, *, rater_id: int | None = None):
    return render(
        request,
        "frontend/campaign/refused.html",
        {"dataset": dataset, "message": str(error), "rater_id": rater_id},
        status=error.http_status,
    )


def _reasons(dataset, rater_id: int) -> list[str]:
    """Why the rater is flagged in the newest snapshot (empty without one)."""
    snapshot = campaign_snapshot_part(dataset=dataset, keys=ACTION_KEYS)
    if snapshot is None:
        return []
    thresholds = flag_thresholds_get(dataset_id=dataset.pk)
    rows = flagged_raters(snapshot.data, thresholds)
    return next((row["flag_reasons"] for row in rows if row["rater_id"] == rater_id), [])


def _default_reason(dataset, rater_id: int, action: str) -> str:
    reasons = _reasons(dataset, rater_id)
    return f"{action} from the campaign page" + (f" (flagged: {'; '.join(reasons)})" if reasons else "")


@require_POST
@campaign_admin
def rater_pause_view(request, dataset: str, rater_id: int):
    dataset_obj = dataset_get(name=dataset)
    rater = campaign_user_get(user_id=rater_id)
    reason = request.POST.get("reason", "").strip() or _default_reason(dataset_obj, rater_id, "paused")
    try:
        rater_pause(rater=rater, dataset=dataset_obj, reason=reason, created_by=request.user)
    except DomainError as error:
        return _refused(request, dataset_obj, error, rater_id=rater_id)
    return HttpResponseRedirect(_back(request, dataset, rater_id))


@require_POST
@campaign_admin
def rater_pause_lift_view(request, dataset: str, rater_id: int):
    dataset_obj = dataset_get(name=dataset)
    pause = active_pause(rater=campaign_user_get(user_id=rater_id), dataset_id=dataset_obj.pk)
    if pause is None:
        return _refused(request, dataset_obj, Conflict(f"rater #{rater_id} is not paused in {dataset}"))
    try:
        rater_pause_lift(pause_id=pause.pk, lifted_by=request.user, note="lifted from the campaign page")
    except DomainError as error:
        return _refused(request, dataset_obj, error, rater_id=rater_id)
    return HttpResponseRedirect(_back(request, dataset, rater_id))


@require_http_methods(["GET", "POST"])
@campaign_admin
def rater_exclude_view(request, dataset: str, rater_id: int):
    """GET: what excluding all the rater's ratings would hit, and the form to confirm it.
    POST: exclude them (in the background), then the exclusion's page."""
    dataset_obj = dataset_get(name=dataset)
    rater = campaign_user_get(user_id=rater_id)
    if request.method == "POST":
        reason, keep_active = request.POST.get("reason", ""), request.POST.get("keep_active") == "on"
    else:
        reason, keep_active = _default_reason(dataset_obj, rater_id, "excluded"), False
    context = {"dataset": dataset_obj, "rater": rater, "rater_id": rater_id, "reason": reason}
    context["keep_active"] = keep_active
    try:
        if request.method == "GET":
            _, context["reach"] = rating_exclusion_preview(dataset=dataset_obj, rater=rater, reason=reason)
            return render(request, "frontend/campaign/exclude.html", context)
        exclusion = rating_exclusion_create(
            dataset=dataset_obj, rater=rater, reason=reason, keep_active=keep_active, created_by=request.user
        )
    except DomainError as error:
        return render(request, "frontend/campaign/exclude.html", {**context, "error": error}, status=error.http_status)
    return HttpResponseRedirect(reverse("campaign-exclusion", args=[dataset, exclusion.pk]))


@campaign_admin
def exclusion_view(request, dataset: str, exclusion_id: int):
    """An exclusion's state and counts, its undo button while it is applied, and the
    rater's pause with its lift button."""
    dataset_obj = dataset_get(name=dataset)
    exclusion = exclusion_get(dataset=dataset_obj, exclusion_id=exclusion_id)
    context = {
        "dataset": dataset_obj,
        "exclusion": exclusion,
        "pause": active_pause(rater=exclusion.rater, dataset_id=dataset_obj.pk),
    }
    return render(request, "frontend/campaign/exclusion.html", context)


@require_POST
@campaign_admin
def exclusion_undo_view(request, dataset: str, exclusion_id: int):
    dataset_obj = dataset_get(name=dataset)
    exclusion = exclusion_get(dataset=dataset_obj, exclusion_id=exclusion_id)
    try:
        rating_exclusion_undo(
            exclusion_id=exclusion.pk,
            undone_by=request.user,
            reason=request.POST.get("reason", ""),
            lift_pause=request.POST.get("lift_pause") == "on",
        )
    except DomainError as error:
        return _refused(request, dataset_obj, error, rater_id=exclusion.rater_id)
    return HttpResponseRedirect(reverse("campaign-exclusion", args=[dataset, exclusion.pk]))
