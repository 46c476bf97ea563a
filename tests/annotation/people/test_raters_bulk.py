"""Raters in bulk through the API and the admin; invitation links renewed; deactivate and
qualify from the user admin."""

import json

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.test import APIClient

from annotation.models import Invitation, Qualification
from annotation.people.onboarding import invitation_get
from tests.factories import UserFactory
from tests.support.csv_files import csv
from tests.support.uploads import multipart_file, post_through_wsgi

pytestmark = pytest.mark.django_db

GOOD = b"username,email,kinds\nana,ana@example.org,STS SIS\nbo,,SITS\n"


@pytest.fixture
def admin_api():
    client = APIClient()
    client.force_authenticate(UserFactory(roles=["admin"]))
    return client


def test_the_api_adds_raters_with_working_invitation_links(admin_api):
    response = admin_api.post("/api/raters/", {"file": csv(GOOD)}, format="multipart")
    assert response.status_code == 201, response.content
    body = response.json()
    assert [(row["username"], row["kinds"]) for row in body] == [("ana", ["SIS", "STS"]), ("bo", ["SITS"])]
    token = body[0]["invitation_url"].rstrip("/").rsplit("/", 1)[1]
    assert body[0]["invitation_url"].startswith("http://testserver/invite/")
    assert invitation_get(token=token).user.username == "ana"
    assert token not in str(list(Invitation.objects.values_list("token_digest", flat=True)))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"username,email,kinds\nana,,STS\nAna,,SIS\n", "username 'Ana' repeats line 2"),
        (b"username,email,kinds\nana,,XYZ\n", "column kinds: XYZ"),
        (b"user,mail\nana,x\n", "the header must be exactly username,email,kinds"),
    ],
)
def test_a_bad_list_is_refused_whole_naming_the_line(admin_api, content, message):
    users_before = get_user_model().objects.count()
    response = admin_api.post("/api/raters/", {"file": csv(content)}, format="multipart")
    assert response.status_code == 400 and message in response.json()["detail"]
    assert get_user_model().objects.count() == users_before and not Invitation.objects.exists()


def test_only_admins_may_add_raters():
    client = APIClient()
    assert client.post("/api/raters/", {"file": csv(GOOD)}, format="multipart").status_code == 401
    client.force_authenticate(UserFactory(roles=["rater"]))
    assert client.post("/api/raters/", {"file": csv(GOOD)}, format="multipart").status_code == 403
    assert not get_user_model().objects.filter(username="ana").exists()


@pytest.fixture
def staff():
    client = Client()
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    return client


def test_the_admin_page_adds_raters_and_shows_each_link_once(staff):
    listing = staff.get("/admin/auth/user/").content.decode()
    assert "/admin/auth/user/add-raters/" in listing
    page = staff.post("/admin/auth/user/add-raters/", {"file": csv(GOOD)}).content.decode()
    assert "Send each rater their link now" in page and page.count("/invite/") == 2
    assert set(Qualification.objects.filter(rater__username="ana").values_list("kind", flat=True)) == {"STS", "SIS"}
    again = staff.post("/admin/auth/user/add-raters/", {"file": csv(GOOD)}).content.decode()
    assert "a user named &#x27;ana&#x27; exists already" in again and "/invite/" not in again


def test_user_actions_deactivate_qualify_and_renew_invitations(staff):
    rater = UserFactory(roles=["rater"])
    outsider = UserFactory()
    changelist = "/admin/auth/user/"
    staff.post(changelist, {"action": "qualify_sits", "_selected_action": [rater.pk, outsider.pk]})
    assert list(Qualification.objects.values_list("rater_id", "kind")) == [(rater.pk, "SITS")]
    staff.post(changelist, {"action": "deactivate", "_selected_action": [rater.pk]})
    rater.refresh_from_db()
    assert not rater.is_active
    staff.post("/admin/auth/user/add-raters/", {"file": csv(GOOD)})
    ana = get_user_model().objects.get(username="ana")
    page = staff.post(changelist, {"action": "new_invitations", "_selected_action": [ana.pk, rater.pk]})
    text = page.content.decode()
    assert text.count("/invite/") == 1 and "has set a password already" in text
    assert Invitation.objects.filter(user=ana).count() == 1
    change = staff.get(f"/admin/auth/user/{ana.pk}/change/").content.decode()
    assert "qualification (a task kind this rater may rate)" in change.lower() or "qualifications" in change.lower()


# --- a large file is read as a stream ---------------------------------------------------


def _many_rows(target_bytes: int):
    yield b"username,email,kinds\n"
    written, number = 0, 0
    while written < target_bytes:
        block = b"".join(f"rater{number + i:08d},r{number + i}@example.org,STS SIS\n".encode() for i in range(10_000))
        number += 10_000
        written += len(block)
        yield block


def _one_long_line(target_bytes: int):
    yield b"username,email,kinds\n"
    for _ in range(target_bytes // 2**20):
        yield b"x" * 2**20


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (_many_rows, "raters.csv: at most 10000 raters per file"),
        (_one_long_line, "raters.csv: line 2 is longer than 4,096 bytes"),
    ],
    ids=["rows", "one-line"],
)
def test_a_50_mb_rater_list_is_refused_with_flat_memory(tmp_path, settings, lines, message):
    """A 59.5 MB rater CSV took a worker from 170 MB to 1.5 GB before the row
    limit refused it. Read as a stream, the peak of Python allocations while the request
    runs stays within a few MB whatever the file's size."""
    import tracemalloc

    from knox.models import AuthToken

    settings.UPLOAD_MAX_PAIRLIST_BYTES = 64 * 2**20
    _, token = AuthToken.objects.create(user=UserFactory(roles=["admin"]))
    body = tmp_path / "body"
    size = multipart_file(body, lines(50 * 2**20), filename="raters.csv")
    assert size > 50 * 2**20
    users_before = get_user_model().objects.count()
    tracemalloc.start()
    try:
        response = post_through_wsgi(
            body, size, path_info="/api/raters/", headers={"HTTP_AUTHORIZATION": f"Token {token}"}
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert response.status_code == 400, response.content[:500]
    assert message in json.loads(response.content)["detail"]
    assert peak < 8 * 2**20, f"peak {peak / 2**20:.1f} MiB"
    assert get_user_model().objects.count() == users_before
