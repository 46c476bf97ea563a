"""New participant accounts are rate-limited per client address and per campaign
link, through the join page (HTTP): the next new account past a limit gets a 429 page
saying when to come back, with Retry-After, and nothing is made; a participant coming back
is never counted, nor is a refused join; the limits reset as their window slides on. The
counts live in the database (ParticipantSignup), addresses only as keyed hashes."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from annotation.models import Participant, ParticipantSignup
from annotation.people.crowd.links import campaign_link_create
from annotation.people.crowd.signup_limits import _wait_text, _window
from tests.factories import SplitFactory
from tests.support.crowd_support import platform_id
from tests.support.queue_support import Clock, queue_pairs

pytestmark = pytest.mark.django_db

WINDOW_MINUTES = 60


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr("django.utils.timezone.now", clock)
    return clock


@pytest.fixture
def limits(settings):
    """Two new accounts per address and three per link, each in an hour."""
    settings.CROWD_NEW_PARTICIPANTS_PER_ADDRESS = 2
    settings.CROWD_NEW_PARTICIPANTS_ADDRESS_WINDOW_MINUTES = WINDOW_MINUTES
    settings.CROWD_NEW_PARTICIPANTS_PER_LINK = 3
    settings.CROWD_NEW_PARTICIPANTS_LINK_WINDOW_MINUTES = WINDOW_MINUTES
    return settings


@pytest.fixture
def dataset():
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=4, ratings_per_pair=3)
    return split.dataset


def make_link(dataset, name="wave"):
    return campaign_link_create(dataset=dataset, name=name, kinds=["SIS"], quota=3, completion_code="DONE-1")


def join(link, name: str, address: str, **headers):
    return Client(REMOTE_ADDR=address, **headers).get(f"/join/{link.token}/", {"PROLIFIC_PID": platform_id(name)})


def accounts() -> int:
    return get_user_model().objects.count()


def test_one_address_makes_only_so_many_new_accounts_and_may_again_once_the_window_has_passed(dataset, limits, clock):
    link = make_link(dataset)
    assert join(link, "first", "203.0.113.7").status_code == 302
    clock.advance(10 * 60)
    assert join(link, "second", "203.0.113.7").status_code == 302
    before = (accounts(), Participant.objects.count())
    refused = join(link, "third", "203.0.113.7")
    assert refused.status_code == 429
    text = refused.content.decode()
    assert "Too many new participants joined from your network in the last hour" in text
    assert "Please try again in about 50 minutes" in text
    # The first account leaves the window in 50 minutes: then one more fits.
    assert refused["Retry-After"] == str(50 * 60)
    assert (accounts(), Participant.objects.count()) == before, "nothing made"
    assert "_auth_user_id" not in refused.wsgi_request.session
    # A participant coming back is no new account; another address is not this one.
    assert join(link, "first", "203.0.113.7").status_code == 302
    assert join(link, "elsewhere", "198.51.100.9").status_code == 302
    # The window slides on: once the first account is an hour old, the address may again.
    clock.advance(50 * 60 - 1)
    assert join(link, "third", "203.0.113.7").status_code == 429
    clock.advance(1)
    assert join(link, "third", "203.0.113.7").status_code == 302


def test_one_link_makes_only_so_many_new_accounts_from_any_addresses_and_others_are_not_held(dataset, limits, clock):
    link, other = make_link(dataset), make_link(SplitFactory().dataset, name="other study")
    for n in range(3):
        assert join(link, f"p{n}", f"192.0.2.{n + 1}").status_code == 302
    refused = join(link, "p3", "192.0.2.4")
    assert refused.status_code == 429
    text = refused.content.decode()
    assert "This study takes no more new participants for now: too many joined in the last hour" in text
    assert refused["Retry-After"] == str(WINDOW_MINUTES * 60)
    assert not Participant.objects.filter(external_id=platform_id("p3")).exists()
    assert join(link, "p0", "192.0.2.1").status_code == 302, "a participant of the link comes back"
    assert join(other, "p3", "192.0.2.4").status_code == 302, "another link counts its own"
    clock.advance(WINDOW_MINUTES * 60)
    assert join(link, "p3", "192.0.2.4").status_code == 302


def test_refused_joins_use_up_nothing(dataset, limits):
    link = make_link(dataset)
    address = "203.0.113.8"
    for bad in ("throwaway", "x" * 24, platform_id("x")[:-1]):
        assert Client(REMOTE_ADDR=address).get(f"/join/{link.token}/", {"PROLIFIC_PID": bad}).status_code == 400
    assert join(link, "first", address).status_code == 302
    assert join(link, "second", address).status_code == 302
    assert ParticipantSignup.objects.count() == 2


def test_behind_a_proxy_the_address_the_proxy_appended_is_counted(dataset, limits):
    limits.CLIENT_IP_HEADER = "HTTP_X_FORWARDED_FOR"
    limits.CROWD_NEW_PARTICIPANTS_PER_ADDRESS = 1
    link = make_link(dataset)
    proxy = "10.0.0.2"
    assert join(link, "ann", proxy, HTTP_X_FORWARDED_FOR="203.0.113.1").status_code == 302
    assert join(link, "bob", proxy, HTTP_X_FORWARDED_FOR="203.0.113.2").status_code == 302, "not the proxy's"
    # An entry the client wrote itself before the proxy's is no way around the limit.
    forged = join(link, "cy", proxy, HTTP_X_FORWARDED_FOR="198.51.100.77, 203.0.113.1")
    assert forged.status_code == 429


def test_the_counts_are_rows_of_the_database_with_addresses_only_as_keyed_hashes(dataset, limits, clock):
    """Every web process reads the same rows (the embedded mode has no Redis, and each
    process's own cache would count apart); rows no window counts are deleted."""
    link = make_link(dataset)
    assert join(link, "first", "203.0.113.9").status_code == 302
    (row,) = ParticipantSignup.objects.all()
    assert row.link_id == link.pk and len(row.address_key) == 64 and "203.0.113" not in row.address_key
    # A row another process wrote counts here too.
    ParticipantSignup.objects.create(link=link, address_key=row.address_key, created_at=clock())
    assert join(link, "second", "203.0.113.9").status_code == 429
    clock.advance(WINDOW_MINUTES * 60 + 1)
    assert join(link, "second", "203.0.113.9").status_code == 302
    assert ParticipantSignup.objects.count() == 1, "the rows out of every window are gone"
    assert ParticipantSignup.objects.get().created_at == clock()
    assert clock() - timedelta(minutes=WINDOW_MINUTES) > row.created_at


@pytest.mark.parametrize(
    ("minutes", "words"),
    [
        (1, "minute"),
        (30, "30 minutes"),
        (59, "59 minutes"),
        (60, "hour"),
        (90, "90 minutes"),
        (120, "2 hours"),
        (1440, "24 hours"),
    ],
)
def test_a_window_is_named_as_the_refusal_says_it(minutes, words):
    assert _window(minutes) == words


@pytest.mark.parametrize(
    ("seconds", "words"),
    [
        (1, "about a minute"),
        (60, "about a minute"),
        (61, "about 2 minutes"),
        (5400, "about 90 minutes"),
        (5401, "about 2 hours"),
        (7200, "about 2 hours"),
        (7201, "about 3 hours"),
    ],
)
def test_a_wait_is_rounded_up_to_what_the_refusal_says(seconds, words):
    assert _wait_text(seconds) == words
