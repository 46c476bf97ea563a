"""A campaign link never changes who is signed in by itself: an admin
(or any signed-in user) who opens a crafted ``/join/<token>/?PROLIFIC_PID=planted`` gets a
question, stays signed in, and nothing is made; only the question's own form (a POST with
its CSRF token) signs them out and the participant in. The same participant coming back
goes on without the question. All through HTTP, CSRF checks on as in a browser."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from annotation.models import Participant
from annotation.people.crowd.links import campaign_link_create
from tests.factories import UserFactory
from tests.support.crowd_support import crowd_dataset, platform_id

pytestmark = pytest.mark.django_db

CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


@pytest.fixture
def link(tmp_path):
    dataset = crowd_dataset(tmp_path)
    return campaign_link_create(dataset=dataset, name="wave", kinds=["SIS"], quota=4, completion_code="FULL-1")


def browser(user=None) -> Client:
    """A browser: CSRF checked as the middleware checks a real one; signed in as ``user``."""
    client = Client(enforce_csrf_checks=True)
    if user is not None:
        client.force_login(user)
    return client


def signed_in_as(client: Client):
    return client.session.get("_auth_user_id")


PLANTED = platform_id("planted")


def join_url(link, name: str = "planted") -> str:
    """The link opened with the Prolific id of a readable ``name``."""
    return f"/join/{link.token}/?{link.id_param}={platform_id(name)}&STUDY_ID=s1"


def test_an_admin_who_opens_a_crafted_link_is_asked_and_stays_signed_in(link):
    admin = UserFactory(roles=["admin"], is_staff=True, username="ops")
    client = browser(admin)
    users_before = get_user_model().objects.count()
    page = client.get(join_url(link))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-testid="crowd-switch"' in html
    assert "You are signed in as <strong" in html and ">ops</strong>" in html
    assert "participant <strong" in html and f">{PLANTED}</strong>" in html and "This signs you out" in html
    assert signed_in_as(client) == str(admin.pk), "the link signed the admin out"
    assert not Participant.objects.filter(link=link).exists(), "the question makes nothing"
    assert get_user_model().objects.count() == users_before
    assert client.get("/admin/").status_code == 200, "the admin session still opens the admin"


def test_only_the_pages_form_switches_and_a_forged_post_is_refused(link):
    admin = UserFactory(roles=["admin"], is_staff=True)
    client = browser(admin)
    forged = client.post(join_url(link))
    assert forged.status_code == 403, "a POST without the page's CSRF token (another site's form)"
    assert signed_in_as(client) == str(admin.pk)
    assert not Participant.objects.filter(link=link).exists()
    token = CSRF.search(client.get(join_url(link)).content.decode()).group(1)
    switched = client.post(join_url(link), {"csrfmiddlewaretoken": token})
    assert switched.status_code == 302
    participant = Participant.objects.get(link=link, external_id=PLANTED)
    assert signed_in_as(client) == str(participant.user_id)
    assert participant.study_id == "s1", "the query string of the link came along"
    assert client.get("/admin/").status_code == 302, "signed out of the admin"


def test_the_question_offers_to_go_back_where_the_visitor_came_from_on_this_site_only(link):
    client = browser(UserFactory(roles=["researcher"]))
    came_from = client.get(join_url(link), HTTP_REFERER="http://testserver/research/")
    assert 'href="http://testserver/research/" data-testid="switch-cancel"' in came_from.content.decode()
    elsewhere = client.get(join_url(link), HTTP_REFERER="https://attacker.example/x")
    assert 'href="/" data-testid="switch-cancel"' in elsewhere.content.decode()


def test_the_same_participant_coming_back_goes_on_without_the_question(link):
    client = browser()
    first = client.get(join_url(link, "p1"))
    assert first.status_code == 302
    me = signed_in_as(client)
    again = client.get(join_url(link, "p1"))
    assert again.status_code == 302 and again["Location"] == first["Location"]
    assert signed_in_as(client) == me


def test_a_participant_opening_the_link_with_another_id_is_asked_too(link):
    client = browser()
    client.get(join_url(link, "p1"))
    me = signed_in_as(client)
    page = client.get(join_url(link, "p2"))
    assert page.status_code == 200 and 'data-testid="crowd-switch"' in page.content.decode()
    assert signed_in_as(client) == me
    assert not Participant.objects.filter(link=link, external_id=platform_id("p2")).exists()


def test_a_refused_link_leaves_the_signed_in_user_as_they_were(link):
    admin = UserFactory(roles=["admin"], is_staff=True)
    client = browser(admin)
    assert client.get(f"/join/not-a-token/?{link.id_param}=x").status_code == 404
    assert client.get(f"/join/{link.token}/?{link.id_param}=bad%20id").status_code == 400
    assert signed_in_as(client) == str(admin.pk)
