"""Password guessing (django-axes): after AXES_FAILURE_LIMIT wrong passwords for one
username from one address, every attempt is refused (the right password too) on the
token API, /login/ and the admin's login, until the cool-off ends or an admin lifts it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.core.management import call_command
from django.db.models import F
from rest_framework.test import APIClient

from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

LIMIT = 10
RIGHT = "pw-for-tests"


@pytest.fixture(autouse=True)
def _lockout_settings(settings):
    settings.AXES_FAILURE_LIMIT = LIMIT
    settings.AXES_COOLOFF_TIME = timedelta(minutes=15)


@pytest.fixture
def rita():
    return UserFactory(username="rita", roles=["rater"])


def token_attempt(password: str, username: str = "rita", address: str = "10.0.0.1"):
    return APIClient().post(
        "/api/auth/token/", {"username": username, "password": password}, format="json", REMOTE_ADDR=address
    )


def test_token_api_locks_out_after_the_limit_even_for_the_right_password(rita):
    for _ in range(LIMIT - 1):
        assert token_attempt("wrong guess").status_code == 400
    locking = token_attempt("wrong guess")
    assert locking.status_code == 429
    assert locking.json()["code"] == "locked_out"
    for password in ("another guess", RIGHT):
        refused = token_attempt(password)
        assert refused.status_code == 429
        assert refused.json() == {
            "detail": "too many failed sign-ins for 'rita' from this address; try again in 15 minute(s) "
            "or ask an admin to lift the lockout",
            "code": "locked_out",
        }
        assert 840 < int(refused["Retry-After"]) <= 900
    # Per username and address: the same account from elsewhere, and other accounts from
    # this address, are not locked out.
    assert token_attempt(RIGHT, address="10.0.0.2").status_code == 200
    UserFactory(username="otto")
    assert token_attempt(RIGHT, username="otto").status_code == 200


def test_an_admin_lifts_the_lockout_with_the_management_command(rita):
    for _ in range(LIMIT):
        token_attempt("wrong guess")
    assert token_attempt(RIGHT).status_code == 429
    call_command("axes_reset_username", "rita")
    assert token_attempt(RIGHT).status_code == 200


def test_the_lockout_ends_with_the_cool_off(rita):
    for _ in range(LIMIT):
        token_attempt("wrong guess")
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - timedelta(minutes=10))
    waiting = token_attempt(RIGHT)
    assert waiting.status_code == 429
    assert "try again in 5 minute(s)" in waiting.json()["detail"]
    assert 240 < int(waiting["Retry-After"]) <= 300
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - timedelta(minutes=6))
    assert token_attempt(RIGHT).status_code == 200


def test_a_successful_sign_in_starts_the_count_again(rita):
    for _ in range(LIMIT - 1):
        token_attempt("wrong guess")
    assert token_attempt(RIGHT).status_code == 200
    for _ in range(LIMIT - 1):
        assert token_attempt("wrong guess").status_code == 400


def login_attempt(client, password: str, path: str = "/login/", username: str = "rita"):
    return client.post(path, {"username": username, "password": password})


def test_login_page_shows_the_lockout_page_and_an_admin_lifts_it_in_the_admin(client, rita, admin_client):
    for _ in range(LIMIT - 1):
        assert login_attempt(client, "wrong guess").status_code == 200  # the form, with its error
    for password in ("wrong guess", RIGHT):
        page = login_attempt(client, password)
        assert page.status_code == 429
        text = page.content.decode()
        assert "Too many attempts" in text
        assert "Try again in 15 minutes" in text
        assert "ask an admin" in text
    attempt = AccessAttempt.objects.get(username="rita")
    listed = admin_client.get("/admin/axes/accessattempt/")
    assert "rita" in listed.content.decode()
    lifted = admin_client.post(
        "/admin/axes/accessattempt/",
        {"action": "delete_selected", "_selected_action": [attempt.pk], "post": "yes"},
    )
    assert lifted.status_code == 302
    assert not AccessAttempt.objects.exists()
    signed_in = login_attempt(client, RIGHT)
    assert (signed_in.status_code, signed_in["Location"]) == (302, "/")


def test_admin_login_is_locked_out_too(client):
    UserFactory(username="root", is_staff=True, is_superuser=True)
    for _ in range(LIMIT):
        login_attempt(client, "wrong guess", path="/admin/login/", username="root")
    page = login_attempt(client, RIGHT, path="/admin/login/", username="root")
    assert page.status_code == 429
    assert "Too many attempts" in page.content.decode()


def test_behind_a_proxy_the_address_comes_from_the_named_header(settings, rita):
    settings.CLIENT_IP_HEADER = "HTTP_X_FORWARDED_FOR"
    settings.AXES_CLIENT_IP_CALLABLE = "config.client_ip.client_ip"

    def attempt(password: str, **headers):
        return APIClient().post(
            "/api/auth/token/",
            {"username": "rita", "password": password},
            format="json",
            REMOTE_ADDR="10.9.9.9",
            **headers,
        )

    # The proxy appends the address it saw; what the client put before it is ignored.
    for number in range(LIMIT):
        attempt("wrong guess", HTTP_X_FORWARDED_FOR=f"192.0.2.{number}, 203.0.113.5")
    assert attempt(RIGHT, HTTP_X_FORWARDED_FOR="203.0.113.5").status_code == 429
    assert attempt(RIGHT, HTTP_X_FORWARDED_FOR="203.0.113.6").status_code == 200
    assert attempt(RIGHT).status_code == 400  # not through the proxy
