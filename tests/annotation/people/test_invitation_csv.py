"""The invitation links of a bulk add, downloadable once as CSV: from the API
answer's Link header and from the admin page's button; a second download or a late one is
told it is gone (410); nothing that makes the links is stored."""

import csv
import io
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.models import Invitation, InvitationDownload
from annotation.people.onboarding import invitation_accept, invitation_get, invitation_renew
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

RATERS = b"username,email,kinds\nana,ana@example.org,STS SIS\n-2+3,,SITS\nbo,,SIS\n"


def upload(content: bytes = RATERS) -> SimpleUploadedFile:
    return SimpleUploadedFile("raters.csv", content, content_type="text/csv")


@pytest.fixture
def admin_api():
    client = APIClient()
    client.force_authenticate(UserFactory(roles=["admin"]))
    return client


def bulk_add(client) -> tuple[list[dict], str]:
    """The API answer's rows and the download URL of its Link header."""
    answer = client.post("/api/raters/", {"file": upload()}, format="multipart")
    assert answer.status_code == 201, answer.content
    link = answer["Link"]
    assert link.endswith('>; rel="invitations-csv"; type="text/csv"')
    return answer.json(), link[1 : link.index(">")]


def rows_of(response) -> list[dict]:
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="invitation-links.csv"'
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def test_the_csv_of_a_bulk_add_has_the_links_of_the_answer_once(admin_api):
    shown, url = bulk_add(admin_api)
    assert url.startswith("http://testserver/api/raters/invitation-downloads/")
    first = admin_api.post(url)
    assert first.status_code == 200
    rows = rows_of(first)
    assert [row["username"] for row in rows] == ["'-2+3", "ana", "bo"], "sorted; a formula-like name escaped"
    by_name = {row["username"].lstrip("'"): row for row in rows}
    for rater in shown:
        row = by_name[rater["username"]]
        assert row["invitation_url"] == rater["invitation_url"] and row["status"] == "open"
        token = row["invitation_url"].rstrip("/").rsplit("/", 1)[1]
        assert invitation_get(token=token).user.username == rater["username"]
    assert (by_name["ana"]["email"], by_name["ana"]["kinds"]) == ("ana@example.org", "SIS STS")
    second = admin_api.post(url)
    assert second.status_code == 410 and second.json()["code"] == "invitation_download_gone"
    assert "downloaded already" in second.json()["detail"] and "Make new invitation links" in second.json()["detail"]


def test_the_server_keeps_nothing_that_makes_the_links(admin_api):
    shown, url = bulk_add(admin_api)
    download_token = url.rstrip("/").rsplit("/", 1)[1]
    stored = str(list(InvitationDownload.objects.values())) + str(list(Invitation.objects.values()))
    assert download_token not in stored
    for rater in shown:
        assert rater["invitation_url"].rstrip("/").rsplit("/", 1)[1] not in stored


def test_a_late_download_is_gone_and_an_unknown_one_not_found(admin_api):
    _, url = bulk_add(admin_api)
    now = timezone.now()
    InvitationDownload.objects.update(created_at=now - timedelta(hours=2), expires_at=now - timedelta(seconds=1))
    late = admin_api.post(url)
    assert late.status_code == 410 and "expired at" in late.json()["detail"]
    unknown = admin_api.post("/api/raters/invitation-downloads/not-a-token/")
    assert unknown.status_code == 404 and unknown.json()["code"] == "invitation_download_unknown"


def test_links_used_or_replaced_before_the_download_are_marked_without_a_url(admin_api):
    shown, url = bulk_add(admin_api)
    ana = next(r for r in shown if r["username"] == "ana")
    invitation_accept(token=ana["invitation_url"].rstrip("/").rsplit("/", 1)[1], password="a long pass phrase 7")
    invitation_renew(user=get_user_model().objects.get(username="bo"))
    rows = {row["username"]: row for row in rows_of(admin_api.post(url))}
    assert (rows["ana"]["status"], rows["ana"]["invitation_url"]) == ("used", "")
    assert (rows["bo"]["status"], rows["bo"]["invitation_url"]) == ("replaced", "")
    assert rows["'-2+3"]["status"] == "open"


@pytest.mark.parametrize("roles", [["researcher"], ["rater"], ["participant"]])
def test_only_admins_download_and_a_refusal_uses_nothing_up(admin_api, roles):
    _, url = bulk_add(admin_api)
    other = APIClient()
    other.force_authenticate(UserFactory(roles=roles))
    assert other.post(url).status_code == 403
    assert APIClient().post(url).status_code == 401
    assert admin_api.get(url).status_code == 405, "POST only: a prefetch must not use the download up"
    assert admin_api.post(url).status_code == 200


def test_the_admin_page_offers_the_download_once(admin_client):
    page = admin_client.post("/admin/auth/user/add-raters/", {"file": upload()})
    html = page.content.decode()
    assert page.status_code == 200 and "Download the links as CSV" in html
    action = html.split('id="invitations-csv"')[0].rsplit('action="', 1)[1].split('"', 1)[0]
    assert action.startswith("/admin/auth/user/add-raters/download/")
    assert admin_client.get(action).status_code == 405
    rows = rows_of(admin_client.post(action))
    assert [row["username"] for row in rows] == ["'-2+3", "ana", "bo"] and all(r["status"] == "open" for r in rows)
    again = admin_client.post(action)
    assert again.status_code == 410 and "downloaded already" in again.content.decode()


def test_the_admin_download_needs_an_admin_session(admin_client):
    page = admin_client.post("/admin/auth/user/add-raters/", {"file": upload()}).content.decode()
    action = page.split('id="invitations-csv"')[0].rsplit('action="', 1)[1].split('"', 1)[0]
    rater = Client()
    rater.force_login(UserFactory(roles=["rater"]))
    assert rater.post(action).status_code == 302, "the admin's login page"
    assert InvitationDownload.objects.get().downloaded_at is None


def test_the_schema_documents_the_download_and_the_link_header():
    paths = Client().get("/api/schema/?format=json").json()["paths"]
    download = paths["/api/raters/invitation-downloads/{token}/"]["post"]
    assert "text/csv" in download["responses"]["200"]["content"]
    assert set(download["responses"]) >= {"401", "403", "404", "410"}
    assert "Link" in paths["/api/raters/"]["post"]["responses"]["201"]["headers"]
