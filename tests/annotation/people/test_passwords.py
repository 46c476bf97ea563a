"""Django's four standard password validators apply wherever a password is set: the
admin's forms, the demo accounts, and annotation.people.accounts.password_check."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.management.base import CommandError

from annotation.core.roles import RATER
from annotation.management.commands import load_demo
from annotation.people.accounts import WeakPassword, password_check
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("password", "reason"),
    [
        ("password", "This password is too common."),
        ("12345678", "This password is entirely numeric."),
        ("short1!", "This password is too short."),
        ("rita-rater", "The password is too similar to the username."),
    ],
)
def test_weak_passwords_are_refused_naming_the_reason(password, reason):
    with pytest.raises(WeakPassword, match=reason) as refused:
        password_check(password=password, user=get_user_model()(username="rita-rater"))
    assert refused.value.code == "weak_password"


def test_a_good_password_passes():
    password_check(password="seven cats on a tin roof", user=get_user_model()(username="rita"))


def test_the_admin_refuses_weak_passwords_for_new_users(admin_client):
    for password in ("password", "12345678"):
        page = admin_client.post(
            "/admin/auth/user/add/",
            {"username": "newrater", "usable_password": "true", "password1": password, "password2": password},
        )
        assert page.status_code == 200
        assert "This password is too common." in page.content.decode()
    assert not get_user_model().objects.filter(username="newrater").exists()


def test_the_admin_refuses_a_weak_password_change(admin_client):
    user = UserFactory(username="rita")
    page = admin_client.post(
        f"/admin/auth/user/{user.pk}/password/", {"password1": "12345678", "password2": "12345678"}
    )
    assert page.status_code == 200
    assert "This password is entirely numeric." in page.content.decode()
    user.refresh_from_db()
    assert user.check_password("pw-for-tests")


def test_the_demo_passwords_pass_the_validators():
    for username, password, _ in load_demo.DEMO_ACCOUNTS:
        validate_password(password, get_user_model()(username=username))


def test_load_demo_refuses_an_account_with_a_weak_password(monkeypatch):
    monkeypatch.setattr(load_demo, "DEMO_ACCOUNTS", (("weakling", "password", RATER),))
    with pytest.raises(CommandError, match="demo account weakling: password refused: This password is too common."):
        load_demo.Command()._ensure_accounts()
    assert not get_user_model().objects.filter(username="weakling").exists()


def test_load_demo_resets_a_demo_password_that_differs():
    UserFactory(username="rater1")  # an old demo database: another password
    load_demo.Command()._ensure_accounts()
    rater1 = get_user_model().objects.get(username="rater1")
    assert rater1.check_password("rater-demo-pass")
