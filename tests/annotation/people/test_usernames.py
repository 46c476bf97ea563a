"""Usernames that differ only by case (``Rater1`` beside ``rater1``) are refused in every
path that makes or renames a user, and by the database itself (a unique index on
lower(username), made by migration 0016, which refuses to run over existing clashes)."""

import importlib

import pytest
from django.apps import apps as global_apps
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction

from tests.factories import UserFactory
from tests.support.csv_files import csv

pytestmark = pytest.mark.django_db

CLASH = "a user named 'Rater1' cannot be made: 'rater1' exists already and usernames may not differ only by case"


@pytest.fixture
def rater1():
    return UserFactory(username="rater1", roles=["rater"])


def test_the_rater_upload_refuses_a_name_that_differs_only_by_case(admin_api, rater1):
    before = get_user_model().objects.count()
    answer = admin_api.post(
        "/api/raters/", {"file": csv(b"username,email,kinds\nana,,STS\nRater1,,SIS\n")}, format="multipart"
    )
    assert answer.status_code == 400, answer.json()
    assert answer.json()["detail"] == f"line 3: {CLASH}"
    assert get_user_model().objects.count() == before


def test_the_raters_command_refuses_it_too(rater1, tmp_path):
    path = tmp_path / "raters.csv"
    path.write_text("username,email,kinds\nRater1,,SIS\n")
    with pytest.raises(Exception, match="usernames may not differ only by case"):
        call_command("raters", "add", "--csv", str(path))
    assert not get_user_model().objects.filter(username="Rater1").exists()


def test_the_admin_add_and_change_forms_refuse_it(admin_client, rater1):
    other = UserFactory(username="other")
    added = admin_client.post(
        "/admin/auth/user/add/",
        {"username": "RATER1", "usable_password": "false", "password1": "", "password2": ""},
    )
    assert added.status_code == 200
    assert "usernames may not differ only by case" in added.content.decode()
    change = admin_client.get(f"/admin/auth/user/{other.pk}/change/")
    assert change.status_code == 200
    renamed = admin_client.post(
        f"/admin/auth/user/{other.pk}/change/",
        {"username": "Rater1", "date_joined_0": "2026-01-01", "date_joined_1": "00:00:00", "is_active": "on"},
    )
    assert renamed.status_code == 200
    assert "usernames may not differ only by case" in renamed.content.decode()
    assert get_user_model().objects.filter(pk=other.pk).values_list("username", flat=True).get() == "other"


def test_the_database_refuses_it(rater1):
    with pytest.raises(IntegrityError), transaction.atomic():
        get_user_model().objects.create(username="RATER1")


def test_the_migration_stops_on_existing_clashes_and_its_reverse_drops_the_index(rater1):
    migration = importlib.import_module("annotation.migrations.0018_username_case")
    with connection.cursor() as cursor:
        cursor.execute(migration.Migration.operations[1].reverse_sql)
    get_user_model().objects.create(username="Rater1")  # no index: the clash gets in
    with pytest.raises(RuntimeError, match=r"differ only by case .*'Rater1' = 'rater1'"):
        migration.refuse_existing_clashes(global_apps, None)
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(migration.Migration.operations[1].sql)
