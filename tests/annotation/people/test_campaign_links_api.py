"""Campaign links through the API: admins make, list and close them; the list
carries each link's numbers; researchers read the numbers without a token or a code;
raters, participants and anonymous callers are refused. A closed link's join page says
the study is closed, over HTTP."""

import pytest
from django.test import Client
from rest_framework.test import APIClient

from annotation.models import CampaignLink
from annotation.people.crowd.join import participant_join
from tests.factories import UserFactory
from tests.support.crowd_support import crowd_dataset

pytestmark = pytest.mark.django_db

PID = "60a1b2c3d4e5f60718293a4b"
BODY = {"name": "wave 1", "kinds": ["SIS"], "quota": 3, "completion_code": "DONE-7", "partial_code": "PART-7"}


@pytest.fixture
def dataset(tmp_path):
    return crowd_dataset(tmp_path, gold_one_in=2)


def client_of(*roles, staff: bool = False) -> APIClient:
    client = APIClient()
    client.force_authenticate(UserFactory(roles=list(roles), is_staff=staff))
    return client


def links_url(dataset) -> str:
    return f"/api/datasets/{dataset.name}/campaign-links/"


def test_an_admin_makes_a_link_and_gets_the_study_url_to_paste(dataset):
    answer = client_of("admin").post(links_url(dataset), BODY, format="json")
    assert answer.status_code == 201, answer.content
    link = CampaignLink.objects.get()
    assert answer.json()["study_url"] == (
        f"http://testserver/join/{link.token}/"
        "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
    )
    assert answer.json()["stats"] == {"started": 0, "finished": 0, "median_minutes": None, "ratings": 0}


def test_the_api_checks_a_link_as_the_admin_form_does(dataset):
    client = client_of("admin")
    refused = client.post(links_url(dataset), {**BODY, "return_url": "ftp://x.org/"}, format="json")
    assert refused.status_code == 400
    refused = client.post(links_url(dataset), {**BODY, "partial_code": "DONE-7"}, format="json")
    assert refused.status_code == 400 and "partial code must differ" in refused.json()["detail"]
    assert not CampaignLink.objects.exists()


def test_the_list_carries_each_links_numbers(dataset):
    admin = client_of("admin")
    admin.post(links_url(dataset), BODY, format="json")
    link = CampaignLink.objects.get()
    participant_join(token=link.token, params={"PROLIFIC_PID": PID})
    participant_join(token=link.token, params={"PROLIFIC_PID": PID[::-1]})
    (row,) = admin.get(links_url(dataset)).json()
    assert row["stats"]["started"] == 2 and row["stats"]["finished"] == 0 and row["active"] is True


def test_researchers_read_the_numbers_but_never_a_token_or_a_code(dataset):
    client_of("admin").post(links_url(dataset), BODY, format="json")
    link = CampaignLink.objects.get()
    answer = client_of("researcher").get(links_url(dataset))
    assert answer.status_code == 200
    (row,) = answer.json()
    assert row["name"] == "wave 1" and row["stats"]["started"] == 0
    assert (row["study_url"], row["completion_code"], row["partial_code"]) == (None, None, None)
    text = answer.content.decode()
    for secret in (link.token, "DONE-7", "PART-7"):
        assert secret not in text
    assert client_of("researcher").post(links_url(dataset), BODY, format="json").status_code == 403
    close = client_of("researcher").post(f"{links_url(dataset)}{link.pk}/close/")
    assert close.status_code == 403 and CampaignLink.objects.get().active


@pytest.mark.parametrize("roles", [["rater"], ["participant"], []])
def test_raters_participants_and_roleless_users_are_refused_everything(dataset, roles):
    client_of("admin").post(links_url(dataset), BODY, format="json")
    link = CampaignLink.objects.get()
    client = client_of(*roles)
    assert client.get(links_url(dataset)).status_code == 403
    assert client.post(links_url(dataset), BODY, format="json").status_code == 403
    assert client.post(f"{links_url(dataset)}{link.pk}/close/").status_code == 403
    anonymous = APIClient()
    assert anonymous.get(links_url(dataset)).status_code == 401
    assert anonymous.post(f"{links_url(dataset)}{link.pk}/close/").status_code == 401
    assert CampaignLink.objects.count() == 1 and CampaignLink.objects.get().active


def test_closing_a_link_stops_new_joins_and_lets_joined_participants_back(dataset):
    admin = client_of("admin")
    admin.post(links_url(dataset), BODY, format="json")
    link = CampaignLink.objects.get()
    assert Client().get(f"/join/{link.token}/?PROLIFIC_PID={PID}").status_code == 302, "open: joins"
    closed = admin.post(f"{links_url(dataset)}{link.pk}/close/")
    assert closed.status_code == 200 and closed.json()["active"] is False
    newcomer = Client().get(f"/join/{link.token}/?PROLIFIC_PID={PID[::-1]}")
    assert newcomer.status_code == 410 and "This study is closed" in newcomer.content.decode()
    back = Client().get(f"/join/{link.token}/?PROLIFIC_PID={PID}")
    assert back.status_code == 302, "a participant who joined before may finish"
    again = admin.post(f"{links_url(dataset)}{link.pk}/close/")
    assert again.status_code == 200 and again.json()["active"] is False


def test_closing_a_link_of_another_dataset_or_none_is_a_404(dataset, tmp_path):
    admin = client_of("admin")
    admin.post(links_url(dataset), BODY, format="json")
    link = CampaignLink.objects.get()
    (tmp_path / "other").mkdir()
    other = crowd_dataset(tmp_path / "other")
    assert admin.post(f"{links_url(other)}{link.pk}/close/").status_code == 404
    assert admin.post(f"{links_url(dataset)}{link.pk + 1}/close/").status_code == 404
    assert CampaignLink.objects.get().active


def test_the_schema_documents_the_link_endpoints():
    paths = Client().get("/api/schema/?format=json").json()["paths"]
    close = paths["/api/datasets/{dataset}/campaign-links/{link_id}/close/"]["post"]
    assert set(close["responses"]) >= {"200", "401", "403", "404"}
    schema = Client().get("/api/schema/?format=json").json()
    link = schema["components"]["schemas"]["CampaignLink"]["properties"]
    assert link["study_url"]["nullable"] and "Admins only" in link["study_url"]["description"]
    assert link["stats"]["allOf"] == [{"$ref": "#/components/schemas/LinkStats"}]
