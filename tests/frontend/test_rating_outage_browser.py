"""The rating page while the server answers 503 (its database restarting), in a real
headless Chromium against the live server: the page keeps the rater's rating (the pair,
the slider's position, the submission in its outbox), says it is reconnecting in a live
region with a countdown, tries again no sooner than the answer's Retry-After, and sends
the rating once when the server answers again. The 503 comes from a route of the
browser's (the server's own 503 is tests/test_database_unavailable.py's and
tests/test_database_outage.py's), except for the page request's, which is the server's
page rendered while its database refuses.

Screenshots at 1280x800 and 390x844 go to test-artifacts/screenshots/."""

from __future__ import annotations

import itertools
import json
import re
import time

import pytest
from django.test import Client

from annotation.models import Rating
from config.exceptions import UNAVAILABLE_DETAIL
from tests.frontend.rating_setup import rater
from tests.support.browser import held_slot, open_kind, session_for, shown, track_point
from tests.support.database_outage import database_refusing

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("demo_allowed")]

LOST = re.compile(r"^Connection to the server lost; retrying (in \d+ s|now)\.")
SIZES = {"wide": (1280, 800), "phone": (390, 844)}


class Outage:
    """A route answering the requests it takes with the server's 503 (Retry-After: 1)
    while ``on``, and passing them to the server after; it notes what each carried."""

    def __init__(self, page, pattern: str):
        self.on = True
        self.calls: list[tuple[float, bool, dict | None]] = []  # (when, answered 503, body)
        page.route(pattern, self.answer)

    def answer(self, route):
        self.calls.append((time.monotonic(), self.on, route.request.post_data_json))
        if not self.on:
            route.continue_()
            return
        body = json.dumps({"detail": UNAVAILABLE_DETAIL, "code": "database_unavailable"})
        route.fulfill(status=503, headers={"Retry-After": "1"}, content_type="application/json", body=body)

    def refused(self) -> list[tuple[float, bool, dict | None]]:
        return [call for call in self.calls if call[1]]


def screenshots(page, screenshot_dir, name: str) -> None:
    for size, (width, height) in SIZES.items():
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=str(screenshot_dir / f"{name}-{size}.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 800})


def test_a_rating_sent_during_an_outage_is_kept_and_sent_once_when_the_server_is_back(
    page, live_server, demo, screenshot_dir
):
    session_for(page, live_server)
    open_kind(page, live_server, "sts")
    slot = held_slot()
    outage = Outage(page, "**/submit/")
    page.mouse.click(*track_point(page, 0.7))
    level = page.locator(".scale-track").get_attribute("aria-valuetext")
    page.keyboard.press("Enter")

    line = page.locator("#connection")
    page.wait_for_selector("#connection:not([hidden])")
    assert line.get_attribute("role") == "status"
    assert LOST.match(line.inner_text()), line.inner_text()
    assert "Your rating is kept in this page" in line.inner_text()
    # Two more tries, each no sooner than the Retry-After's second after the last.
    page.wait_for_function("() => document.querySelector('#connection').textContent.includes('retrying in')")
    deadline = time.monotonic() + 15
    while len(outage.refused()) < 3 and time.monotonic() < deadline:
        page.wait_for_timeout(100)
    refused = outage.refused()
    assert len(refused) >= 3
    assert all(later[0] - earlier[0] >= 0.95 for earlier, later in itertools.pairwise(refused))
    # Meanwhile the rating stays where the rater left it: the pair, the slider, the outbox.
    assert page.locator("#pair").get_attribute("data-ready") == shown(slot)
    assert page.locator("#scale").get_attribute("data-state") == "set"
    assert page.locator(".scale-track").get_attribute("aria-valuetext") == level
    pending = page.evaluate("() => JSON.parse(localStorage.getItem('cxc-outbox:rater1:demo'))")
    assert [p["slot_id"] for p in pending] == [shown(slot)]
    assert page.locator("#submit").is_disabled()
    assert Rating.objects.filter(rater=rater()).count() == 0
    screenshots(page, screenshot_dir, "rating-outage")

    outage.on = False
    page.wait_for_selector(f"#pair[data-ready]:not([data-ready='{shown(slot)}'])", timeout=20000)
    assert line.inner_text() == "Connection restored; your rating was stored."
    screenshots(page, screenshot_dir, "rating-outage-restored")
    keys = {body["idempotency_key"] for _, _, body in outage.calls}
    assert keys == {pending[0]["idempotency_key"]}  # every try the same submission
    stored = Rating.objects.get(rater=rater())
    assert stored.slot_id == slot.id and stored.score == pytest.approx(0.7 * 5, abs=0.02)
    assert page.evaluate("() => localStorage.getItem('cxc-outbox:rater1:demo')") == "[]"
    # The page carries on: the next pair is rated as usual, and the line goes away.
    next_slot = held_slot()
    page.mouse.click(*track_point(page, 0.2))
    page.keyboard.press("Enter")
    page.wait_for_selector(f"#pair[data-ready]:not([data-ready='{shown(next_slot)}'])")
    assert Rating.objects.filter(rater=rater()).count() == 2
    page.wait_for_selector("#connection[hidden]", state="attached", timeout=10000)


def test_a_claim_during_an_outage_is_tried_again_until_a_pair_comes(page, live_server, demo):
    session_for(page, live_server)
    outage = Outage(page, "**/claim/")
    page.goto(f"{live_server.url}/rate/demo/sis/")
    page.wait_for_selector("#connection:not([hidden])")
    text = page.locator("#connection").inner_text()
    assert LOST.match(text) and "kept" not in text, text  # no rating of the rater's waits
    while len(outage.refused()) < 2:
        page.wait_for_timeout(100)
    outage.on = False
    page.wait_for_selector("#pair[data-ready]", timeout=20000)
    assert page.locator("#connection").inner_text() == "Connection restored."


def test_a_page_opened_during_an_outage_is_the_503_page(page, live_server, demo, screenshot_dir):
    """The server's own page for a page request while its database refuses, as the
    browser shows it."""
    client = Client(raise_request_exception=False)
    client.force_login(rater())
    with database_refusing():
        answer = client.get("/rate/demo/sts/")
    assert answer.status_code == 503 and answer["Retry-After"] == "5"
    page.route(
        "**/rate/demo/sts/",
        lambda route: route.fulfill(status=503, headers=dict(answer.items()), body=answer.content),
    )
    page.goto(f"{live_server.url}/rate/demo/sts/")
    assert page.locator("h1").inner_text() == "The service is briefly unavailable"
    assert "Try again in 5 seconds" in page.locator("main").inner_text()
    screenshots(page, screenshot_dir, "database-unavailable-page")
