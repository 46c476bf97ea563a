"""Each of the rating cycle's framework shortcuts can be turned off (RATING_SHORTCUTS_OFF),
so it can be measured against the framework's way (make bench-shortcuts): off, the
framework's way answers, and the answers through the HTTP API are the same as with every
shortcut on (statuses, fields, their types and the stored ratings)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys

import pytest
from django.urls import clear_url_caches, resolve
from knox.models import AuthToken
from rest_framework.test import APIClient

import annotation.urls
import config.urls
from annotation.apis import rating, rating_cycle, rating_progress
from annotation.models import Rating
from tests.factories import UserFactory
from tests.support import queue_support
from tests.support.queue_support import api_claim, rate_url, submit_kwargs

pytestmark = pytest.mark.django_db

split = queue_support.split  # a split with three SIS pairs queued


@pytest.fixture
def shortcuts_off(settings):
    """Sets RATING_SHORTCUTS_OFF and builds the URLconf again under it (the token view is
    chosen when the URLconf is built); the URLconf is built again as it was afterwards."""

    def turn_off(*names: str) -> None:
        settings.RATING_SHORTCUTS_OFF = frozenset(names)
        importlib.reload(annotation.urls)
        importlib.reload(config.urls)
        clear_url_caches()

    yield turn_off
    settings.RATING_SHORTCUTS_OFF = frozenset()
    importlib.reload(annotation.urls)
    importlib.reload(config.urls)
    clear_url_caches()


def cycle(split) -> list:
    """A token rater's claim with progress, a submit with the next claim and progress, a
    bad body and a repeat, as (status, field names and their types) each."""
    client = APIClient()
    user = UserFactory(roles=["rater"], qualified_for=["SIS"])
    client.credentials(HTTP_AUTHORIZATION=f"Token {AuthToken.objects.create(user)[1]}")
    claimed = api_claim(client, split.dataset, kind="SIS", progress_tz="Europe/Berlin")
    slot = claimed.json()["slot_id"]
    body = {**submit_kwargs("k1", 3.5), "claim_next_kind": "SIS", "progress_tz": "Europe/Berlin"}
    stored = client.post(rate_url(split.dataset, "submit", slot), body, format="json")
    bad = client.post(rate_url(split.dataset, "submit", slot), {**body, "score": 9}, format="json")
    repeat = client.post(rate_url(split.dataset, "submit", slot), body, format="json")
    assert Rating.objects.filter(rater=user).count() == 1
    return [(answer.status_code, shape(answer.json())) for answer in (claimed, stored, bad, repeat)]


def shape(value):
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(item) for item in value[:1]]
    return type(value).__name__


@pytest.fixture
def taken(monkeypatch):
    """Which of the shortcuts' own functions ran, by name."""
    names = []

    def spy(module, name):
        original = getattr(module, name)

        def counted(*args, **kwargs):
            names.append(name)
            return original(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)

    spy(rating_cycle, "claim_input")
    spy(rating_cycle, "submit_input")
    spy(rating, "AssignmentSerializer")
    spy(rating_progress, "RaterProgressSerializer")
    return names


@pytest.mark.parametrize("name", ["token_view", "input", "answer"])
def test_a_shortcut_off_takes_the_frameworks_way_with_the_same_answers(split, shortcuts_off, taken, name, settings):
    settings.SQL_PATHS = "postgres"
    shortcuts_off()
    expected = cycle(split)
    on = set(taken)
    taken.clear()
    shortcuts_off(name)
    assert cycle(split) == expected
    off = set(taken)
    fast_view = hasattr(resolve(rate_url(split.dataset, "claim")).func, "fast")
    if name == "token_view":
        assert not fast_view
    elif name == "input":
        # The DRF view and the fast path both read the body with the serializer.
        assert fast_view and {"claim_input", "submit_input"} <= on and not {"claim_input", "submit_input"} & off
    else:
        assert "AssignmentSerializer" not in on and {"AssignmentSerializer", "RaterProgressSerializer"} <= off


def test_an_unknown_shortcut_name_stops_the_start():
    environ = {**os.environ, "RATING_SHORTCUTS_OFF": "wsgi,answers", "DJANGO_SETTINGS_MODULE": "config.settings"}
    started = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"], env=environ, capture_output=True, text=True
    )
    assert started.returncode != 0
    assert "RATING_SHORTCUTS_OFF: unknown ['answers']" in started.stderr
