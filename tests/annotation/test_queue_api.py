"""The rater API over HTTP: tokens and sessions, roles, every bad input a 4xx with a
clear message and nothing stored, the OpenAPI schema, and the image view."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from PIL import Image as PILImage
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.authentication import RoleTokenAuthentication
from annotation.models import Flag, PairSkip, Rating, RatingSlot, SlotState, TaskKind
from annotation.roles import has_role
from tests.annotation.queue_support import TTL, queue_pairs, submit_kwargs
from tests.factories import DatasetFactory, ImageFactory, SplitFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def split():
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=3)
    return split


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def rater_client(kinds=("STS", "SIS", "SITS")):
    user = UserFactory(roles=["rater"], qualified_for=list(kinds))
    return user, client_for(user)


def url(dataset, action, slot_id=None):
    if slot_id is None:
        return f"/api/rate/{dataset.name}/{action}/"
    return f"/api/rate/{dataset.name}/slots/{slot_id}/{action}/"


def claim(client, dataset, **body):
    return client.post(url(dataset, "claim"), body, format="json")


# --- auth and roles --------------------------------------------------------------------


def test_token_obtain_use_and_revoke(split):
    UserFactory(username="rita", roles=["rater"], qualified_for=["SIS"])
    anonymous = APIClient()
    response = anonymous.post("/api/auth/token/", {"username": "rita", "password": "pw-for-tests"}, format="json")
    assert response.status_code == 200
    assert response.json()["roles"] == ["rater"]
    token = response.json()["token"]
    again = anonymous.post("/api/auth/token/", {"username": "rita", "password": "pw-for-tests"}, format="json")
    assert again.json()["token"] == token

    with_token = APIClient(HTTP_AUTHORIZATION=f"Token {token}")
    assert claim(with_token, split.dataset).status_code == 200
    assert with_token.delete("/api/auth/token/").status_code == 204
    revoked = claim(with_token, split.dataset)
    assert (revoked.status_code, revoked.json()["detail"]) == (401, "Invalid token.")
    assert revoked["WWW-Authenticate"] == "Token"

    wrong = anonymous.post("/api/auth/token/", {"username": "rita", "password": "nope"}, format="json")
    assert wrong.status_code == 400
    assert wrong.json()["detail"] == "password: wrong username or password, or the account is disabled"
    missing = anonymous.post("/api/auth/token/", {"username": "rita"}, format="json")
    assert missing.status_code == 400
    assert "password" in missing.json()["detail"]


def test_token_lists_the_roles_staff_and_superusers_have_as_admins(split):
    get_user_model().objects.create_superuser("root", password="pw-for-tests")
    UserFactory(username="stefan", is_staff=True, roles=["researcher"])
    anonymous = APIClient()
    root = anonymous.post("/api/auth/token/", {"username": "root", "password": "pw-for-tests"}, format="json")
    assert (root.status_code, root.json()["roles"]) == (200, ["admin"])
    staff = anonymous.post("/api/auth/token/", {"username": "stefan", "password": "pw-for-tests"}, format="json")
    assert staff.json()["roles"] == ["admin", "researcher"]


def test_token_authentication_knows_the_roles_without_another_query(split, django_assert_num_queries):
    user = UserFactory(roles=["rater", "researcher"], qualified_for=["SIS"])
    token = Token.objects.create(user=user)
    with django_assert_num_queries(1):
        authenticated, auth = RoleTokenAuthentication().authenticate_credentials(token.key)
    assert (authenticated.pk, authenticated.username, auth.key, auth.user_id) == (
        user.pk,
        user.username,
        token.key,
        user.pk,
    )
    with django_assert_num_queries(0):
        assert has_role(authenticated, "rater")
        assert has_role(authenticated, "researcher")
        assert not has_role(authenticated, "admin")
    plain = UserFactory()
    plain_user, _ = RoleTokenAuthentication().authenticate_credentials(Token.objects.create(user=plain).key)
    with django_assert_num_queries(0):
        assert not has_role(plain_user, "rater")


def test_inactive_users_tokens_are_refused(split):
    user = UserFactory(roles=["rater"], qualified_for=["SIS"])
    token = Token.objects.create(user=user)
    user.is_active = False
    user.save()
    response = claim(APIClient(HTTP_AUTHORIZATION=f"Token {token.key}"), split.dataset)
    assert (response.status_code, response.json()["detail"]) == (401, "User inactive or deleted.")


def test_session_login_needs_csrf_like_any_browser_form(split):
    UserFactory(username="sam", roles=["rater"], qualified_for=["SIS"])
    browser = APIClient(enforce_csrf_checks=True)
    assert browser.login(username="sam", password="pw-for-tests")
    assert claim(browser, split.dataset).status_code == 403
    browser.get("/login/")
    csrf = browser.cookies["csrftoken"].value
    response = browser.post(url(split.dataset, "claim"), {}, format="json", HTTP_X_CSRFTOKEN=csrf)
    assert response.status_code == 200


def test_only_raters_use_the_rating_api(split):
    anonymous = claim(APIClient(), split.dataset)
    assert (anonymous.status_code, anonymous.json()["detail"]) == (401, "Authentication credentials were not provided.")
    researcher = client_for(UserFactory(roles=["researcher"]))
    response = claim(researcher, split.dataset)
    assert response.status_code == 403
    assert response.json()["detail"] == "Only raters may do this."
    assert RatingSlot.objects.filter(state=SlotState.LEASED).count() == 0


def test_rater_without_qualification_gets_403_naming_it(split):
    _, client = rater_client(kinds=["STS"])
    response = claim(client, split.dataset)
    assert response.status_code == 204  # qualified for STS, and there is no STS pair
    response = claim(client, split.dataset, kind="SIS")
    assert response.status_code == 403
    assert "not qualified for SIS" in response.json()["detail"]
    _, unqualified = rater_client(kinds=[])
    assert "no task qualifications" in claim(unqualified, split.dataset).json()["detail"]
    assert RatingSlot.objects.filter(state=SlotState.LEASED).count() == 0


# --- the rating cycle ------------------------------------------------------------------


def test_claim_heartbeat_submit_cycle(split, clock):
    user, client = rater_client()
    response = claim(client, split.dataset)
    assert response.status_code == 200
    body = response.json()
    assert body["kind"] == "SIS"
    assert body["resumed"] is False
    assert body["lease_ttl_seconds"] == TTL
    assert body["heartbeat_seconds"] == TTL // 3
    assert [item["type"] for item in body["items"]] == ["image", "image"]
    assert all(item["url"].startswith("https://images.example.org/") for item in body["items"])
    slot_id = body["slot_id"]

    assert claim(client, split.dataset).json()["resumed"] is True
    clock.advance(100)
    beat = client.post(url(split.dataset, "heartbeat", slot_id))
    assert beat.status_code == 200
    assert beat.json()["slot_id"] == slot_id

    response = client.post(url(split.dataset, "submit", slot_id), submit_kwargs("uuid-1", 2.75), format="json")
    assert response.status_code == 201
    stored = response.json()
    assert stored["replayed"] is False
    rating = Rating.objects.get(pk=stored["rating_id"])
    assert (
        rating.rater_id,
        rating.score,
        rating.time_on_item_ms,
        rating.time_to_first_move_ms,
        rating.adjustments,
    ) == (
        user.id,
        2.75,
        4000,
        800,
        2,
    )
    replay = client.post(url(split.dataset, "submit", slot_id), submit_kwargs("uuid-1", 2.75), format="json")
    assert replay.status_code == 200
    assert replay.json()["rating_id"] == stored["rating_id"]
    assert replay.json()["replayed"] is True
    assert Rating.objects.count() == 1


def test_claim_returns_204_when_nothing_is_left(clock):
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=1, ratings_per_pair=1)
    _, first = rater_client()
    _, second = rater_client()
    assert claim(first, split.dataset).status_code == 200
    response = claim(second, split.dataset)
    assert response.status_code == 204
    assert response.content == b""


def test_expired_lease_taken_by_another_gives_409(clock):
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=1)
    _, alice = rater_client()
    slot_id = claim(alice, split.dataset).json()["slot_id"]
    clock.advance(TTL + 1)
    _, bob = rater_client()
    assert claim(bob, split.dataset).json()["slot_id"] == slot_id  # the stranded slot goes first
    response = alice.post(url(split.dataset, "submit", slot_id), submit_kwargs("late"), format="json")
    assert response.status_code == 409
    assert response.json()["detail"] == (
        f"your lease on rating slot #{slot_id} expired and it was claimed by another rater; claim the next pair"
    )
    assert Rating.objects.count() == 0


BAD_SUBMISSIONS = [
    ({"score": 5.5}, "score"),
    ({"score": -1}, "score"),
    ({"score": "3.5"}, "score: A valid number is required."),
    ({"score": "high"}, "score: A valid number is required."),
    ({"score": True}, "score: A valid number is required."),
    ({"score": None}, "score: This field may not be null."),
    ({"score": [3]}, "score: A valid number is required."),
    ({"time_on_item_ms": "12"}, "time_on_item_ms: A valid integer is required."),
    ({"time_on_item_ms": -5}, "time_on_item_ms"),
    ({"time_on_item_ms": 10.5}, "time_on_item_ms: A valid integer is required."),
    ({"adjustments": -1}, "adjustments"),
    ({"time_to_first_move_ms": 99_999}, "time_to_first_move_ms must be between 0 and time_on_item_ms"),
    ({"idempotency_key": ""}, "idempotency_key: This field may not be blank."),
    ({"idempotency_key": "k" * 65}, "idempotency_key"),
]


@pytest.mark.parametrize(("change", "message"), BAD_SUBMISSIONS)
def test_bad_submission_is_400_naming_the_field_and_stores_nothing(split, clock, change, message):
    _, client = rater_client()
    slot_id = claim(client, split.dataset).json()["slot_id"]
    response = client.post(url(split.dataset, "submit", slot_id), submit_kwargs("k") | change, format="json")
    assert response.status_code == 400
    assert message in response.json()["detail"]
    assert Rating.objects.count() == 0
    assert RatingSlot.objects.get(pk=slot_id).state == SlotState.LEASED


@pytest.mark.parametrize(
    "missing", ["score", "time_on_item_ms", "time_to_first_move_ms", "adjustments", "idempotency_key"]
)
def test_missing_field_is_400(split, clock, missing):
    _, client = rater_client()
    slot_id = claim(client, split.dataset).json()["slot_id"]
    body = submit_kwargs("k")
    del body[missing]
    response = client.post(url(split.dataset, "submit", slot_id), body, format="json")
    assert response.status_code == 400
    assert response.json()["detail"] == f"{missing}: This field is required."
    assert Rating.objects.count() == 0


@pytest.mark.parametrize("raw", ['{"score": NaN}', '{"score": Infinity}', "{not json", '"a string"', "[1, 2]"])
def test_non_json_numbers_and_bodies_are_400(split, clock, raw):
    _, client = rater_client()
    slot_id = claim(client, split.dataset).json()["slot_id"]
    body = raw
    if raw.startswith('{"score"'):
        body = (
            raw[:-1]
            + ', "time_on_item_ms": 1, "time_to_first_move_ms": null, "adjustments": 0, "idempotency_key": "k"}'
        )
    response = client.post(url(split.dataset, "submit", slot_id), body, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["detail"]
    assert Rating.objects.count() == 0


def test_slot_of_another_dataset_or_not_held(split, clock):
    other = SplitFactory()
    queue_pairs(split=other)
    _, alice = rater_client()
    bob_user, bob = rater_client()
    slot_id = claim(alice, split.dataset).json()["slot_id"]
    response = alice.post(url(other.dataset, "submit", slot_id), submit_kwargs("a"), format="json")
    assert response.status_code == 404
    assert response.json()["detail"] == f"rating slot #{slot_id} is not in dataset {other.dataset.name!r}"
    response = bob.post(url(split.dataset, "submit", slot_id), submit_kwargs("b"), format="json")
    assert response.status_code == 403
    assert "you do not hold" in response.json()["detail"]
    for action in ("heartbeat", "skip"):
        assert bob.post(url(split.dataset, action, slot_id)).status_code == 403
    assert alice.post(url(split.dataset, "submit", 10**9), submit_kwargs("a"), format="json").status_code == 404
    assert claim(alice, DatasetFactory.build(name="missing")).status_code == 404
    assert Rating.objects.count() == 0
    assert RatingSlot.objects.get(pk=slot_id).rater_id != bob_user.pk


def test_skip_and_flag(split, clock):
    user, client = rater_client()
    first = claim(client, split.dataset).json()
    response = client.post(url(split.dataset, "skip", first["slot_id"]))
    assert response.status_code == 200
    assert response.json() == {"slot_id": first["slot_id"], "pair_id": first["pair_id"]}
    assert PairSkip.objects.filter(rater=user, pair_id=first["pair_id"]).exists()

    second = claim(client, split.dataset).json()
    assert second["pair_id"] != first["pair_id"]
    response = client.post(
        url(split.dataset, "flag", second["slot_id"]), {"reason": "broken_image", "note": "grey box"}, format="json"
    )
    assert response.status_code == 201
    assert response.json()["reason"] == "broken_image"
    flag = Flag.objects.get()
    assert (flag.pair_id, flag.rater_id, flag.note) == (second["pair_id"], user.id, "grey box")
    assert RatingSlot.objects.get(pk=second["slot_id"]).state == SlotState.OPEN

    bad = client.post(url(split.dataset, "flag", second["slot_id"]), {"reason": "boring"}, format="json")
    assert bad.status_code == 400
    assert "reason" in bad.json()["detail"]
    assert Flag.objects.count() == 1


def test_progress_and_own_ratings(split, clock):
    user, client = rater_client(kinds=["SIS"])
    _, other = rater_client()
    for c, key in ((client, "mine"), (other, "theirs")):
        slot_id = claim(c, split.dataset).json()["slot_id"]
        assert c.post(url(split.dataset, "submit", slot_id), submit_kwargs(key), format="json").status_code == 201
    progress = client.get(url(split.dataset, "progress"), {"tz": "Asia/Tokyo"})
    assert progress.status_code == 200
    body = progress.json()
    assert (body["ratings_today"], body["pairs_left"], body["kinds"], body["held_slot_id"]) == (1, 2, ["SIS"], None)
    assert body["day_starts_at"] == "2026-03-01T15:00:00Z"  # midnight of 2 March in Tokyo
    bad_tz = client.get(url(split.dataset, "progress"), {"tz": "Mars/Olympus"})
    assert bad_tz.status_code == 400
    assert "unknown time zone" in bad_tz.json()["detail"]

    ratings = client.get(url(split.dataset, "ratings")).json()
    assert [r["kind"] for r in ratings] == ["SIS"]
    assert Rating.objects.get(pk=ratings[0]["id"]).rater_id == user.id
    assert client.get(url(split.dataset, "ratings"), {"limit": 0}).status_code == 400


def test_admins_set_qualifications(split):
    admin = client_for(UserFactory(roles=["admin"]))
    UserFactory(username="nina", roles=["rater"])
    response = admin.put("/api/raters/nina/qualifications/", {"kinds": ["SIS", "STS"]}, format="json")
    assert response.status_code == 200
    assert response.json() == {"kinds": ["SIS", "STS"]}
    assert admin.get("/api/raters/nina/qualifications/").json() == {"kinds": ["SIS", "STS"]}
    assert admin.put("/api/raters/nina/qualifications/", {"kinds": ["XX"]}, format="json").status_code == 400
    assert admin.get("/api/raters/nobody/qualifications/").status_code == 404
    _, rater = rater_client()
    assert rater.put("/api/raters/nina/qualifications/", {"kinds": []}, format="json").status_code == 403


# --- schema ----------------------------------------------------------------------------


def test_openapi_schema_lists_the_rater_api_without_warnings(split):
    out = io.StringIO()
    call_command("spectacular", "--validate", "--fail-on-warn", "--format", "openapi-json", stdout=out)
    schema = json.loads(out.getvalue())
    for path in (
        "/api/auth/token/",
        "/api/rate/{dataset}/claim/",
        "/api/rate/{dataset}/slots/{slot_id}/heartbeat/",
        "/api/rate/{dataset}/slots/{slot_id}/submit/",
        "/api/rate/{dataset}/slots/{slot_id}/skip/",
        "/api/rate/{dataset}/slots/{slot_id}/flag/",
        "/api/rate/{dataset}/progress/",
        "/api/rate/{dataset}/ratings/",
        "/media/images/{dataset}/{key}",
    ):
        assert path in schema["paths"], path
    submit_body = schema["components"]["schemas"]["RatingSubmitInput"]
    assert set(submit_body["required"]) == {
        "score",
        "time_on_item_ms",
        "time_to_first_move_ms",
        "adjustments",
        "idempotency_key",
    }
    assert submit_body["properties"]["score"]["maximum"] == 5
    assert "items" in schema["components"]["schemas"]["Assignment"]["properties"]
    served = client_for(UserFactory()).get("/api/schema/", {"format": "json"})
    assert served.status_code == 200


# --- images ----------------------------------------------------------------------------


@pytest.fixture
def photo_dataset(tmp_path):
    folder = tmp_path / "images" / "val2014"
    folder.mkdir(parents=True)
    dataset = DatasetFactory(images_root=str(tmp_path / "images"), image_url_prefix="")
    split = SplitFactory(dataset=dataset)
    image = ImageFactory(split=split, dataset=dataset)
    PILImage.new("RGB", (8, 6), "red").save(folder / image.key, "JPEG")
    ImageFactory(split=split, dataset=dataset, key="gone.jpg", file_path="val2014/gone.jpg")
    ImageFactory(split=split, dataset=dataset, key="escape.jpg", file_path="../../etc/passwd")
    return dataset, image


def test_image_view_serves_files_with_cache_headers(photo_dataset):
    dataset, image = photo_dataset
    client = client_for(UserFactory(roles=["rater"]))
    response = client.get(f"/media/images/{dataset.name}/{image.key}", HTTP_ACCEPT="image/webp,image/*")
    assert response.status_code == 200
    assert response["Content-Type"] == "image/jpeg"
    assert response["Cache-Control"] == "private, max-age=86400"
    body = b"".join(response.streaming_content)
    assert PILImage.open(io.BytesIO(body)).size == (8, 6)
    again = client.get(f"/media/images/{dataset.name}/{image.key}", HTTP_IF_NONE_MATCH=response["ETag"])
    assert again.status_code == 304
    since = client.get(f"/media/images/{dataset.name}/{image.key}", HTTP_IF_MODIFIED_SINCE=response["Last-Modified"])
    assert since.status_code == 304


def test_image_view_refuses_unknown_missing_escaping_and_anonymous(photo_dataset):
    dataset, image = photo_dataset
    client = client_for(UserFactory(roles=["rater"]))
    for key, message in (
        ("nope.jpg", "has no image 'nope.jpg'"),
        ("gone.jpg", "image file of 'gone.jpg' is missing"),
        ("escape.jpg", "points outside the dataset's images root"),
    ):
        response = client.get(f"/media/images/{dataset.name}/{key}")
        assert response.status_code == 404
        assert message in response.json()["detail"]
    assert APIClient().get(f"/media/images/{dataset.name}/{image.key}").status_code == 401
    prefix_dataset = DatasetFactory()
    response = client.get(f"/media/images/{prefix_dataset.name}/x.jpg")
    assert response.status_code == 404
    assert "serves its images from https://images.example.org/" in response.json()["detail"]


def test_claim_links_images_root_datasets_to_the_image_view(photo_dataset, clock):
    dataset, _ = photo_dataset
    split = dataset.splits.get()
    queue_pairs(split=split, kind=TaskKind.SITS)
    _, client = rater_client()
    body = claim(client, dataset).json()
    image_url = body["items"][1]["url"]
    assert image_url.startswith(f"/media/images/{dataset.name}/")
    assert body["lease_expires_at"].startswith((clock.now + timedelta(seconds=TTL)).strftime("%Y-%m-%dT%H:%M"))


# --- the embedded mode -------------------------------------------------------------------

EMBEDDED_SCRIPT = """
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient
from annotation.models import Rating
from tests.annotation.queue_support import queue_pairs, submit_kwargs
from tests.factories import SplitFactory, UserFactory

split = SplitFactory()
queue_pairs(split=split, n_pairs=2, ratings_per_pair=1)
users = [UserFactory(roles=["rater"], qualified_for=["SIS"]) for _ in range(3)]
clients = [APIClient(HTTP_AUTHORIZATION="Token " + Token.objects.create(user=u).key) for u in users]
base = "/api/rate/" + split.dataset.name
slots = []
for client in clients[:2]:
    answer = client.post(base + "/claim/", {}, format="json")
    assert answer.status_code == 200, answer.content
    slots.append(answer.json()["slot_id"])
assert clients[0].post(base + "/claim/", {}, format="json").json()["resumed"] is True
assert clients[2].post(base + "/claim/", {}, format="json").status_code == 204
for client, slot in zip(clients, slots):
    body = submit_kwargs("key-" + str(slot))
    assert client.post(base + "/slots/%d/submit/" % slot, body, format="json").status_code == 201
    assert client.post(base + "/slots/%d/submit/" % slot, body, format="json").status_code == 200
assert Rating.objects.count() == 2
print("EMBEDDED-OK")
"""


@pytest.mark.slow
def test_embedded_sqlite_mode_claims_and_submits(tmp_path):
    """The rating API on the embedded SQLite mode, from migrations up, in a subprocess."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "RUN_MODE")}
    env |= {
        "RUN_MODE": "embedded",
        "SQLITE_PATH": str(tmp_path / "db.sqlite3"),
        "VAR_DIR": str(tmp_path / "var"),
        "SECRET_KEY": "embedded-test",
    }
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "--no-input", "-v", "0"], cwd=repo, env=env, check=True)
    done = subprocess.run(
        [*manage, "shell", "-v", "0", "-c", EMBEDDED_SCRIPT], cwd=repo, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("EMBEDDED-OK")
