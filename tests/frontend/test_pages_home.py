"""The home page sends each role to its work; only admins see where the data lives.
Logging in and out (the app's and the admin's) lands where a person expects."""

import pytest
from django.conf import settings as django_settings
from django.test import Client

from annotation import serving as queue
from annotation.models import TaskKind
from annotation.rating.progress import rater_progress
from config.runtime import describe_mode
from frontend.selectors import rater_work_list
from tests.factories import DatasetFactory, SplitFactory, UserFactory
from tests.support.queue_support import queue_pairs, submit_kwargs

pytestmark = pytest.mark.django_db

PASSWORD = "pw-for-tests"


def log_in(username: str) -> tuple[Client, str]:
    """Sign in through the login form as a person does; returns the client and the
    page the login landed on, followed to its end."""
    client = Client()
    response = client.post("/login/", {"username": username, "password": PASSWORD}, follow=True)
    assert response.status_code == 200
    return client, response.content.decode()


def assert_no_server_paths(html: str) -> None:
    assert str(django_settings.DATABASES["default"]["NAME"]) not in html
    assert describe_mode() not in html
    assert str(django_settings.EXPORT_DIR) not in html


@pytest.fixture
def queued():
    """Dataset "alpha" with 3 STS and 2 SIS pairs waiting; "beta" with nothing."""
    split = SplitFactory(dataset=DatasetFactory(name="alpha"))
    queue_pairs(split=split, kind=TaskKind.STS, n_pairs=3)
    queue_pairs(split=split, kind=TaskKind.SIS, n_pairs=2)
    DatasetFactory(name="beta")


def test_rater_lands_on_their_work_with_links_to_rate_and_no_paths(queued):
    UserFactory(username="rita", roles=["rater"], qualified_for=["STS", "SIS"])
    _, html = log_in("rita")
    assert 'href="/rate/"' in html
    assert 'href="/rate/alpha/sts/"' in html and 'href="/rate/alpha/sis/"' in html
    assert 'href="/rate/beta/sts/"' in html
    assert "/rate/alpha/sits/" not in html, "not qualified for SITS"
    assert "3 pairs waiting" in html and "2 pairs waiting" in html and "nothing waiting now" in html
    assert_no_server_paths(html)
    assert "/admin/" not in html and "Research and the API" not in html


def test_rater_without_qualification_is_told_to_ask_an_admin(queued):
    UserFactory(username="rita", roles=["rater"])
    _, html = log_in("rita")
    assert "Not qualified yet" in html and "Ask an admin to qualify you" in html
    assert_no_server_paths(html)


def test_researcher_sees_where_exports_and_api_docs_are(queued):
    UserFactory(username="rosa", roles=["researcher"])
    _, html = log_in("rosa")
    assert 'href="/api/docs/"' in html and 'href="/api/exports/"' in html and 'href="/api/schema/"' in html
    assert "/api/auth/token/" in html
    assert_no_server_paths(html)
    assert "Your rating work" not in html and 'href="/admin/"' not in html


@pytest.mark.parametrize("admin_kind", ["group", "staff"])
def test_admin_sees_the_admin_and_the_run_mode_with_the_database_path(queued, admin_kind):
    if admin_kind == "group":
        UserFactory(username="ada", roles=["admin"])
    else:
        UserFactory(username="ada", is_staff=True)
    _, html = log_in("ada")
    assert ('href="/admin/"' in html) == (admin_kind == "staff")
    assert ("needs staff status" in html) == (admin_kind == "group")
    assert f"Running in {describe_mode()}." in html
    assert str(django_settings.DATABASES["default"]["NAME"]) in html
    assert str(django_settings.EXPORT_DIR) in html
    assert "alpha" in html and "beta" in html


def test_user_without_a_role_gets_a_clear_message(queued):
    UserFactory(username="nemo")
    _, html = log_in("nemo")
    assert "No role yet" in html
    assert "rater" in html and "researcher" in html and "admin" in html
    assert_no_server_paths(html)
    assert 'href="/rate/' not in html


def test_anonymous_home_goes_to_the_login_page():
    response = Client().get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_logging_out_lands_on_the_login_page():
    UserFactory(username="rita", roles=["rater"])
    client, _ = log_in("rita")
    response = client.post("/logout/", follow=True)
    assert response.redirect_chain == [("/login/", 302)]
    assert '<form method="post" class="login">' in response.content.decode()
    assert client.get("/").status_code == 302, "signed out"


def test_admin_login_and_logout_still_work():
    UserFactory(username="ada", is_staff=True, is_superuser=True)
    client = Client()
    assert client.get("/admin/login/").status_code == 200
    response = client.post("/admin/login/?next=/admin/", {"username": "ada", "password": PASSWORD}, follow=True)
    assert response.redirect_chain[-1] == ("/admin/", 302)
    assert "CxC annotate admin" in response.content.decode()
    response = client.post("/admin/logout/", follow=True)
    assert response.redirect_chain == [("/login/", 302)]
    assert "Logged out" not in response.content.decode()
    assert client.get("/admin/").status_code == 302, "signed out"


def test_rater_work_counts_what_is_left_for_this_rater_per_kind(queued):
    rita = UserFactory(username="rita", roles=["rater"], qualified_for=["STS", "SIS"])
    rated = queue.slot_claim(rater=rita, dataset="alpha", kind=TaskKind.STS)
    queue.rating_submit(rater=rita, dataset="alpha", slot_id=rated.slot_id, **submit_kwargs("k1"))
    skipped = queue.slot_claim(rater=rita, dataset="alpha", kind=TaskKind.SIS)
    queue.slot_skip(rater=rita, dataset="alpha", slot_id=skipped.slot_id)

    work = {(w.dataset, w.kind): w.pairs_left for w in rater_work_list(rater=rita)}
    assert work == {("alpha", "STS"): 2, ("alpha", "SIS"): 1, ("beta", "STS"): 0, ("beta", "SIS"): 0}
    assert work["alpha", "STS"] + work["alpha", "SIS"] == rater_progress(rater=rita, dataset="alpha").pairs_left


def test_rater_work_is_empty_without_the_rater_role(queued):
    assert rater_work_list(rater=UserFactory(roles=["researcher"], qualified_for=["STS"])) == []
