"""The campaign pages: progress, raters and dataset quality of one dataset, for
admins and researchers. Every page reads the dataset's newest snapshot (one row, made by
``annotation.dashboard``) and nothing per rater or per pair, so its cost does not grow with
the campaign; the rater page adds one query for the captions and pictures of at most ten
pairs."""

from datetime import UTC, datetime
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import BadRequest, PermissionDenied
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from annotation.catalog.selectors import dataset_get
from annotation.core.errors import NotFound
from annotation.core.roles import ADMIN, RESEARCHER, has_role
from annotation.dashboard.selectors import campaign_snapshot_part
from annotation.dashboard.services import campaign_refresh_request
from annotation.quality.flag_settings import flag_thresholds_get
from frontend import campaign_pages as pages
from frontend import campaign_raters as raters
from frontend.selectors import RaterStanding, campaign_dataset_list, pair_items_by_id, rater_standings
from frontend.vendor import PLOTLY

# The parts of the snapshot's data each page reads (frontend/campaign_pages.py uses them).
DASHBOARD_KEYS = ("speed_floors", "progress", "quality", "raters")
RATERS_KEYS = ("speed_floors", "progress", "raters")
RATER_KEYS = (*RATERS_KEYS, "rater_details")

# The query parameter the refresh redirect adds: when the refresh was asked for, in ms
# since the epoch, so the page can tell a done refresh from a pending or stuck one.
ASKED_PARAM = "asked"


def campaign_page(view):
    """Admins (staff included) and researchers only: others get the 403 page, anonymous
    users the login page."""

    @wraps(view)
    def checked(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not (has_role(request.user, ADMIN) or has_role(request.user, RESEARCHER)):
            raise PermissionDenied("campaign pages are for admins and researchers")
        return view(request, *args, **kwargs)

    return checked


def _dataset(name: str):
    try:
        return dataset_get(name=name)
    except NotFound as error:
        raise Http404(str(error)) from error


def _asked_at(request) -> datetime | None:
    raw = request.GET.get(ASKED_PARAM)
    if raw is None:
        return None
    try:
        return datetime.fromtimestamp(int(raw) / 1000, tz=UTC)
    except (ValueError, OverflowError, OSError) as error:
        raise BadRequest(f"{ASKED_PARAM} must be milliseconds since the epoch") from error


def _page(request, dataset, snapshot, template: str, section: str, **context):
    """Render a campaign page: the dataset, its snapshot's status line (None before the
    first snapshot: the template shows the empty state), where a refresh asked for
    stands, and the page's own context."""
    now = timezone.now()
    return render(
        request,
        template,
        {
            "dataset": dataset,
            "section": section,
            "status": pages.snapshot_status(snapshot, now=now) if snapshot is not None else None,
            "refresh": pages.refresh_state(snapshot, now=now, asked_at=_asked_at(request)),
            "plotly_js": PLOTLY.static_path,
            **context,
        },
    )


@campaign_page
def campaign_index(request):
    return render(request, "frontend/campaign/index.html", {"datasets": campaign_dataset_list()})


@campaign_page
def campaign_dashboard(request, dataset: str):
    dataset_obj = _dataset(dataset)
    snapshot = campaign_snapshot_part(dataset=dataset_obj, keys=DASHBOARD_KEYS)
    thresholds = flag_thresholds_get(dataset_id=dataset_obj.pk)
    context = pages.dashboard_context(snapshot.data, thresholds) if snapshot is not None else {}
    return _page(request, dataset_obj, snapshot, "frontend/campaign/dashboard.html", "dashboard", **context)


@campaign_page
def campaign_raters(request, dataset: str):
    dataset_obj = _dataset(dataset)
    snapshot = campaign_snapshot_part(dataset=dataset_obj, keys=RATERS_KEYS)
    thresholds = flag_thresholds_get(dataset_id=dataset_obj.pk)
    wanted = request.GET.get("format", "html")
    if wanted not in ("html", "csv"):
        raise BadRequest("format must be html or csv")
    if wanted == "csv" and snapshot is None:
        raise Http404(f"dataset {dataset_obj.name!r} has no campaign snapshot yet: refresh it first")
    if snapshot is None:
        return _page(request, dataset_obj, snapshot, "frontend/campaign/raters.html", "raters")
    standings = rater_standings(dataset=dataset_obj)
    data = _live(snapshot.data, standings)
    if wanted == "csv":
        response = HttpResponse(raters.raters_csv(data, thresholds), content_type="text/csv; charset=utf-8")
        name = raters.raters_csv_name(dataset_obj.name, snapshot.made_at)
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response
    context = {"table": raters.rater_table(data, thresholds), **_actions(request, standings)}
    context["thresholds"] = thresholds.describe()
    return _page(request, dataset_obj, snapshot, "frontend/campaign/raters.html", "raters", **context)


@campaign_page
def campaign_rater(request, dataset: str, rater_id: int):
    dataset_obj = _dataset(dataset)
    snapshot = campaign_snapshot_part(dataset=dataset_obj, keys=RATER_KEYS)
    all_standings = rater_standings(dataset=dataset_obj)
    standings = _actions(request, all_standings)["standings"]
    standing = None if standings is None else standings.get(rater_id, RaterStanding())
    context = {"rater_id": rater_id, "standing": standing}
    if snapshot is not None:
        data = _live(snapshot.data, all_standings)
        details = pages.rater_context(data, rater_id, flag_thresholds_get(dataset_id=dataset_obj.pk))
        if details is None:
            raise Http404(f"rater #{rater_id} has no ratings in this dataset's snapshot")
        differences = details["detail"]["largest_differences"]
        items = pair_items_by_id(dataset=dataset_obj, pair_ids=[row["pair_id"] for row in differences])
        context.update(details, differences=pages.difference_rows(differences, items))
    return _page(request, dataset_obj, snapshot, "frontend/campaign/rater.html", "raters", **context)


def _live(data: dict, standings: dict[int, RaterStanding]) -> dict:
    """The snapshot's numbers with each rater's pause as it stands now (one source for
    the Paused column and the action buttons)."""
    paused = {rater: standing.pause_id for rater, standing in standings.items() if standing.pause_id is not None}
    return raters.with_live_pauses(data, paused)


def _actions(request, standings: dict[int, RaterStanding]) -> dict:
    """What the action buttons need: None for researchers (they see flags, no buttons),
    else each rater's live pause and exclusion."""
    return {"standings": standings if has_role(request.user, ADMIN) else None}


@require_POST
@campaign_page
def campaign_refresh(request, dataset: str):
    """Queue a new snapshot and go back to the page the button was on, telling it when
    the refresh was asked for."""
    dataset_obj = _dataset(dataset)
    asked_ms = int(timezone.now().timestamp() * 1000)
    campaign_refresh_request(dataset_obj)
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}) or not back.startswith("/"):
        back = reverse("campaign-dashboard", args=[dataset_obj.name])
    back = back.split("?", 1)[0]
    return HttpResponseRedirect(f"{back}?{ASKED_PARAM}={asked_ms}")
