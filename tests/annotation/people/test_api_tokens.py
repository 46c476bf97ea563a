"""API tokens (django-rest-knox): stored as digests, with an expiry, revocable by their
owner and by admins; plain DRF tokens from before are migrated, not lost."""

from __future__ import annotations

import hashlib
import importlib
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.db import connection
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from knox.models import AuthToken
from rest_framework.test import APIClient

from annotation.people.tasks import prune_expired_tokens
from tests.factories import UserFactory
from tests.support import queue_support
from tests.support.queue_support import api_claim, client_for

pytestmark = pytest.mark.django_db

split = queue_support.split  # a split with three SIS pairs queued


def issue(username: str = "rita") -> dict:
    response = APIClient().post("/api/auth/token/", {"username": username, "password": "pw-for-tests"}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def with_token(key: str) -> APIClient:
    return APIClient(HTTP_AUTHORIZATION=f"Token {key}")


def test_the_token_row_stores_a_digest_and_no_plain_key():
    UserFactory(username="rita", roles=["rater"])
    key = issue()["token"]
    row = AuthToken.objects.values().get()
    assert row["digest"] == hashlib.sha512(key.encode()).hexdigest()
    assert row["token_key"] == key[:15]
    assert all(key not in str(value) for value in row.values())


def test_the_answer_shows_the_expiry(settings):
    UserFactory(username="rita", roles=["rater"])
    before = timezone.now()
    answer = issue()
    expiry = parse_datetime(answer["expiry"])
    ttl = timedelta(hours=settings.API_TOKEN_TTL_HOURS)
    assert before + ttl <= expiry <= timezone.now() + ttl
    assert AuthToken.objects.get().expiry == expiry


def test_an_expired_token_is_refused_with_401(split):
    user = UserFactory(username="rita", roles=["rater"], qualified_for=["SIS"])
    key = issue()["token"]
    assert api_claim(with_token(key), split.dataset).status_code == 200
    AuthToken.objects.filter(user=user).update(expiry=timezone.now() - timedelta(seconds=1))
    refused = api_claim(with_token(key), split.dataset)
    assert refused.status_code == 401
    assert refused.json()["detail"] == "Token expired; POST /api/auth/token/ for a new one."
    assert refused["WWW-Authenticate"] == "Token"
    issue()  # a new token tidies the expired row away
    assert AuthToken.objects.filter(user=user).count() == 1


def test_the_beat_deletes_expired_tokens_of_every_user_and_keeps_live_ones(settings):
    rita, otto = UserFactory(username="rita"), UserFactory(username="otto")
    issue("rita"), issue("otto"), issue("otto")
    AuthToken.objects.filter(user=otto).update(expiry=timezone.now() - timedelta(seconds=1))
    assert prune_expired_tokens() == 2
    assert list(AuthToken.objects.values_list("user", flat=True)) == [rita.pk]
    assert prune_expired_tokens() == 0
    entry = settings.CELERY_BEAT_SCHEDULE["tokens-prune-expired"]
    assert entry == {"task": "annotation.tasks.prune_expired_tokens", "schedule": settings.API_TOKEN_PRUNE_SECONDS}


def test_a_token_of_the_same_prefix_but_another_secret_is_refused(split):
    UserFactory(username="rita", roles=["rater"], qualified_for=["SIS"])
    key = issue()["token"]
    forged = key[:15] + ("0" if key[15] != "0" else "1") + key[16:]
    refused = api_claim(with_token(forged), split.dataset)
    assert (refused.status_code, refused.json()["detail"]) == (401, "Invalid token.")


def test_the_owner_revokes_one_token_or_all_of_them(split):
    UserFactory(username="rita", roles=["rater"], qualified_for=["SIS"])
    first, second, third = (issue()["token"] for _ in range(3))
    assert with_token(first).delete("/api/auth/token/").status_code == 204
    assert api_claim(with_token(first), split.dataset).status_code == 401
    assert api_claim(with_token(second), split.dataset).status_code == 200
    answer = with_token(second).delete("/api/auth/tokens/")
    assert (answer.status_code, answer.json()) == (200, {"revoked": 2})
    for key in (second, third):
        assert api_claim(with_token(key), split.dataset).status_code == 401


def test_revoking_the_current_token_needs_a_token():
    session = client_for(UserFactory(roles=["rater"]))
    answer = session.delete("/api/auth/token/")
    assert answer.status_code == 400
    assert answer.json()["code"] == "not_token_authenticated"
    assert "DELETE /api/auth/tokens/ revokes all your tokens" in answer.json()["detail"]


def test_admins_revoke_a_users_tokens_by_api(split):
    UserFactory(username="rita", roles=["rater"], qualified_for=["SIS"])
    key = issue()["token"]
    rater = client_for(UserFactory(roles=["rater"]))
    assert rater.delete("/api/users/rita/tokens/").status_code == 403
    admin = client_for(UserFactory(roles=["admin"]))
    answer = admin.delete("/api/users/rita/tokens/")
    assert (answer.status_code, answer.json()) == (200, {"revoked": 1})
    assert api_claim(with_token(key), split.dataset).status_code == 401
    missing = admin.delete("/api/users/nobody/tokens/")
    assert (missing.status_code, missing.json()["detail"]) == (404, "no user named 'nobody'")


def test_admins_revoke_tokens_in_the_user_admin(admin_client):
    rita = UserFactory(username="rita", roles=["rater"])
    issue()
    issue()
    otto = UserFactory(username="otto")
    issue("otto")
    answer = admin_client.post(
        "/admin/auth/user/", {"action": "revoke_api_tokens", "_selected_action": [rita.pk]}, follow=True
    )
    assert "Revoked 2 API token(s) of 1 user(s)." in answer.content.decode()
    assert not AuthToken.objects.filter(user=rita).exists()
    assert AuthToken.objects.filter(user=otto).count() == 1


def test_plain_drf_tokens_are_migrated_to_digests_and_keep_working(split, settings):
    user = UserFactory(username="rita", roles=["rater"], qualified_for=["SIS"])
    migration = importlib.import_module("annotation.migrations.0009_api_tokens_hashed")
    plain_key = "0123456789abcdef0123456789abcdef01234567"  # DRF's shape: 40 hex characters
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY, created timestamp, user_id integer)")
        cursor.execute("INSERT INTO authtoken_token VALUES (%s, %s, %s)", [plain_key, timezone.now(), user.pk])
    assert migration.copy_plain_tokens(apps, SimpleNamespace(connection=connection)) == 1
    assert "authtoken_token" not in connection.introspection.table_names()
    token = AuthToken.objects.get()
    assert plain_key not in (token.digest, token.token_key)
    ttl = timedelta(hours=settings.API_TOKEN_TTL_HOURS)
    assert timezone.now() + ttl - timedelta(minutes=1) < token.expiry <= timezone.now() + ttl
    assert api_claim(with_token(plain_key), split.dataset).status_code == 200
    # On a database that never had the plain table there is nothing to do.
    assert migration.copy_plain_tokens(apps, SimpleNamespace(connection=connection)) == 0
