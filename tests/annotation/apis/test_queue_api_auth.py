"""The rater API's doors: tokens and sessions, roles and qualifications, each refusal a
401 or 403 naming the problem."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.http import HttpRequest
from knox.models import AuthToken
from rest_framework.test import APIClient

from annotation.core.roles import has_role
from annotation.models import RatingSlot, SlotState
from annotation.people.authentication import RoleTokenAuthentication
from tests.factories import UserFactory
from tests.support import queue_support
from tests.support.queue_support import api_claim, client_for, rate_url, rater_client

pytestmark = pytest.mark.django_db

split = queue_support.split  # a split with three SIS pairs queued


def test_token_obtain_use_and_revoke(split):
    UserFactory(username="rita", roles=["rater"], qualified_for=["SIS"])
    anonymous = APIClient()
    response = anonymous.post("/api/auth/token/", {"username": "rita", "password": "pw-for-tests"}, format="json")
    assert response.status_code == 200
    assert response.json()["roles"] == ["rater"]
    token = response.json()["token"]
    # The key is shown once; a second request gets a second token, both valid.
    again = anonymous.post("/api/auth/token/", {"username": "rita", "password": "pw-for-tests"}, format="json")
    assert again.json()["token"] != token
    assert AuthToken.objects.filter(user__username="rita").count() == 2

    with_token = APIClient(HTTP_AUTHORIZATION=f"Token {token}")
    assert api_claim(with_token, split.dataset).status_code == 200
    assert with_token.delete("/api/auth/token/").status_code == 204
    revoked = api_claim(with_token, split.dataset)
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
    token, key = AuthToken.objects.create(user=user)
    # The connection's first lookup also prepares the statement (annotation.core.sql).
    RoleTokenAuthentication().authenticate_credentials(key.encode())
    with django_assert_num_queries(1):
        authenticated, auth = RoleTokenAuthentication().authenticate_credentials(key.encode())
    assert (authenticated.pk, authenticated.username, auth.digest, auth.user_id) == (
        user.pk,
        user.username,
        token.digest,
        user.pk,
    )
    with django_assert_num_queries(0):
        assert has_role(authenticated, "rater")
        assert has_role(authenticated, "researcher")
        assert not has_role(authenticated, "admin")
    plain = UserFactory()
    plain_user, _ = RoleTokenAuthentication().authenticate_credentials(AuthToken.objects.create(user=plain)[1].encode())
    with django_assert_num_queries(0):
        assert not has_role(plain_user, "rater")


def test_inactive_users_tokens_are_refused(split):
    user = UserFactory(roles=["rater"], qualified_for=["SIS"])
    _, key = AuthToken.objects.create(user=user)
    user.is_active = False
    user.save()
    response = api_claim(APIClient(HTTP_AUTHORIZATION=f"Token {key}"), split.dataset)
    assert (response.status_code, response.json()["detail"]) == (401, "User inactive or deleted.")


def test_session_login_needs_csrf_like_any_browser_form(split):
    UserFactory(username="sam", roles=["rater"], qualified_for=["SIS"])
    browser = APIClient(enforce_csrf_checks=True)
    # django-axes counts sign-ins per address, so authenticate() needs a request.
    assert browser.login(request=HttpRequest(), username="sam", password="pw-for-tests")
    assert api_claim(browser, split.dataset).status_code == 403
    browser.get("/login/")
    csrf = browser.cookies["csrftoken"].value
    response = browser.post(rate_url(split.dataset, "claim"), {}, format="json", HTTP_X_CSRFTOKEN=csrf)
    assert response.status_code == 200


def test_only_raters_use_the_rating_api(split):
    anonymous = api_claim(APIClient(), split.dataset)
    assert (anonymous.status_code, anonymous.json()["detail"]) == (401, "Authentication credentials were not provided.")
    researcher = client_for(UserFactory(roles=["researcher"]))
    response = api_claim(researcher, split.dataset)
    assert response.status_code == 403
    assert response.json()["detail"] == "Only raters may do this."
    assert RatingSlot.objects.filter(state=SlotState.LEASED).count() == 0


def test_rater_without_qualification_gets_403_naming_it(split):
    _, client = rater_client(kinds=["STS"])
    response = api_claim(client, split.dataset)
    assert response.status_code == 204  # qualified for STS, and there is no STS pair
    response = api_claim(client, split.dataset, kind="SIS")
    assert response.status_code == 403
    assert "not qualified for SIS" in response.json()["detail"]
    _, unqualified = rater_client(kinds=[])
    assert "no task qualifications" in api_claim(unqualified, split.dataset).json()["detail"]
    assert RatingSlot.objects.filter(state=SlotState.LEASED).count() == 0


def test_admins_set_qualifications(split):
    admin = client_for(UserFactory(roles=["admin"]))
    UserFactory(username="nina", roles=["rater"])
    response = admin.put("/api/raters/nina/qualifications/", {"kinds": ["SIS", "STS"]}, format="json")
    assert response.status_code == 200
    assert response.json() == {"kinds": ["SIS", "STS"], "dataset": None}
    assert admin.get("/api/raters/nina/qualifications/").json() == {"kinds": ["SIS", "STS"], "dataset": None}
    assert admin.put("/api/raters/nina/qualifications/", {"kinds": ["XX"]}, format="json").status_code == 400
    assert admin.get("/api/raters/nobody/qualifications/").status_code == 404
    _, rater = rater_client()
    assert rater.put("/api/raters/nina/qualifications/", {"kinds": []}, format="json").status_code == 403
