"""The campaign dashboard as JSON: the snapshot and the rater table answer
researchers' and admins' tokens and sessions with the numbers the pages show; raters,
participants and anonymous callers are refused."""

import pytest
from django.test import Client
from rest_framework.test import APIClient

from annotation.dashboard.selectors import campaign_snapshot_part
from annotation.models import CampaignSnapshot, TaskKind
from annotation.quality.flag_settings import flag_thresholds_get
from frontend import campaign_pages as pages
from frontend import campaign_raters as raters
from frontend.campaign import DASHBOARD_KEYS, RATERS_KEYS
from tests.factories import DatasetFactory, PairFactory, SamplingBatchFactory, SplitFactory, UserFactory
from tests.frontend.campaign_setup import rate_campaign

pytestmark = pytest.mark.django_db

RATER_NAMES = ["ann", "ben", "cat", "dan", "eve"]
URLS = ["/api/datasets/coco/campaign/", "/api/datasets/coco/campaign/raters/"]


@pytest.fixture
def campaign():
    batch = SamplingBatchFactory(split=SplitFactory(dataset=DatasetFactory(name="coco")))
    for kind, n in ((TaskKind.STS, 4), (TaskKind.SIS, 3), (TaskKind.SITS, 3)):
        for _ in range(n):
            PairFactory(batch=batch, kind=kind)
    raters = [UserFactory(username=name, roles=["rater"]) for name in RATER_NAMES]
    return rate_campaign(batch.dataset, raters)


def token_client(username: str, *roles, staff: bool = False) -> APIClient:
    """A client holding a real API token of a new user (as a script would)."""
    UserFactory(username=username, roles=list(roles), is_staff=staff)
    answer = APIClient().post("/api/auth/token/", {"username": username, "password": "pw-for-tests"}, format="json")
    assert answer.status_code == 200, answer.content
    return APIClient(HTTP_AUTHORIZATION=f"Token {answer.json()['token']}")


@pytest.mark.parametrize(("roles", "staff"), [(["researcher"], False), (["admin"], False), ([], True)])
def test_researcher_and_admin_tokens_get_the_snapshot_as_json(campaign, roles, staff):
    client = token_client("reader", *roles, staff=staff)
    for url in URLS:
        answer = client.get(url)
        assert answer.status_code == 200, (url, answer.content)
        assert answer["Content-Type"] == "application/json"


def test_a_browser_session_of_a_researcher_gets_them_too(campaign):
    client = Client()
    client.force_login(UserFactory(roles=["researcher"]))
    assert [client.get(url).status_code for url in URLS] == [200, 200]


def test_the_snapshot_answer_is_the_numbers_the_dashboard_page_reads(campaign):
    body = token_client("reader", "researcher").get("/api/datasets/coco/campaign/").json()
    page = campaign_snapshot_part(dataset=campaign.dataset, keys=DASHBOARD_KEYS)
    assert body["dataset"] == "coco"
    assert body["progress"] == page.data["progress"]
    assert body["quality"] == page.data["quality"]
    assert body["speed_floors"] == page.data["speed_floors"]
    assert body["made_at"] == page.made_at.isoformat().replace("+00:00", "Z")
    thresholds = flag_thresholds_get(dataset_id=campaign.dataset.pk)
    context = pages.dashboard_context(page.data, thresholds)
    assert body["progress"]["ratings_remaining"] == context["progress"]["ratings_remaining"]


def test_the_rater_table_answer_has_the_pages_rows_in_the_pages_order(campaign):
    body = token_client("reader", "researcher").get("/api/datasets/coco/campaign/raters/").json()
    data = campaign_snapshot_part(dataset=campaign.dataset, keys=RATERS_KEYS).data
    table = raters.rater_table(data, flag_thresholds_get(dataset_id=campaign.dataset.pk))
    assert body["count"] == len(table["rows"]) == len(RATER_NAMES)
    assert [row["rater_id"] for row in body["raters"]] == [row["rater_id"] for row in table["rows"]]
    by_id = {row["rater_id"]: row for row in data["raters"]}
    for row in body["raters"]:
        figures = {name: value for name, value in row.items() if name != "flag_reasons"}
        assert figures == by_id[row["rater_id"]], "every figure is the snapshot's, as the page shows it"
    session = Client()
    session.force_login(UserFactory(roles=["researcher"]))
    page = session.get("/campaigns/coco/raters/").content.decode()
    first = body["raters"][0]
    assert first["username"] in page and f">{first['ratings_total_all']}<" in page


def test_the_rater_table_pages_with_limit_and_offset_within_a_stated_cap(campaign):
    client = token_client("reader", "researcher")
    everyone = client.get("/api/datasets/coco/campaign/raters/").json()
    assert (everyone["limit"], everyone["offset"]) == (500, 0)
    page = client.get("/api/datasets/coco/campaign/raters/?limit=2&offset=3").json()
    assert page["count"] == 5 and page["raters"] == everyone["raters"][3:5]
    too_many = client.get("/api/datasets/coco/campaign/raters/?limit=1001")
    assert too_many.status_code == 400 and "limit" in too_many.json()["errors"]


@pytest.mark.parametrize("roles", [["rater"], ["participant"], []])
def test_raters_participants_and_users_without_a_role_are_refused(campaign, roles):
    client = token_client("someone", *roles)
    for url in URLS:
        answer = client.get(url)
        assert answer.status_code == 403, url
        assert "researchers" in answer.json()["detail"]
    assert client.post("/api/datasets/coco/campaign/refresh/").status_code == 403


def test_anonymous_callers_get_401_not_the_login_page(campaign):
    for url in [*URLS]:
        answer = APIClient().get(url)
        assert answer.status_code == 401 and answer["Content-Type"] == "application/json"


def test_before_the_first_snapshot_the_answer_says_how_to_make_one(campaign):
    CampaignSnapshot.objects.all().delete()
    client = token_client("reader", "researcher")
    for url in URLS:
        answer = client.get(url)
        assert answer.status_code == 404 and answer.json()["code"] == "no_snapshot"
        assert "POST /api/datasets/coco/campaign/refresh/" in answer.json()["detail"]
    assert client.get("/api/datasets/nope/campaign/").json()["code"] == "not_found"


def test_a_refresh_asked_through_the_api_makes_a_new_snapshot(campaign, django_capture_on_commit_callbacks):
    client = token_client("reader", "researcher")
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post("/api/datasets/coco/campaign/refresh/")
    assert answer.status_code == 202
    assert CampaignSnapshot.objects.filter(dataset=campaign.dataset).count() == 2


def test_the_schema_documents_the_campaign_endpoints():
    schema = Client().get("/api/schema/?format=json").json()
    paths = schema["paths"]
    raters = paths["/api/datasets/{dataset}/campaign/raters/"]["get"]
    assert {p["name"] for p in raters["parameters"]} >= {"dataset", "limit", "offset"}
    assert "CampaignRaterPage" in raters["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    snapshot = paths["/api/datasets/{dataset}/campaign/"]["get"]["responses"]
    assert set(snapshot) >= {"200", "401", "403", "404"}
    assert "202" in paths["/api/datasets/{dataset}/campaign/refresh/"]["post"]["responses"]
    assert {"progress", "quality"} <= set(schema["components"]["schemas"]["CampaignSnapshot"]["properties"])
