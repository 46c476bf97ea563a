"""Headless Chromium helpers: logging in, opening the rating page, reading the held slot,
moving the track, watching page errors, pinning the live server, holding pictures back."""

from itertools import pairwise

from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.test import Client

from annotation.management.commands.load_demo import DEMO_ACCOUNTS
from annotation.models import RatingSlot, SlotState
from tests.frontend.rating_setup import rater
from tests.support.rating_support import api_id

KIND_NAMES = {
    "sts": "Compare two sentences",
    "sis": "Compare two pictures",
    "sits": "Compare a sentence with a picture",
}


def session_for(page, live_server, username="rater1"):
    """Sign the browser in without the form (the form is covered by its own test)."""
    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    cookie = client.cookies[django_settings.SESSION_COOKIE_NAME]
    page.context.add_cookies([{"name": cookie.key, "value": cookie.value, "url": live_server.url}])


def open_kind(page, live_server, kind):
    page.goto(f"{live_server.url}/rate/demo/{kind}/")
    page.wait_for_selector("#pair[data-ready]")
    assert KIND_NAMES[kind] in page.locator(".status-line").inner_text()


def track_point(page, fraction):
    box = page.locator(".scale-track").bounding_box()
    return box["x"] + box["width"] * fraction, box["y"] + box["height"] / 2


def held_slot(username="rater1"):
    return RatingSlot.objects.get(rater=rater(username), state=SlotState.LEASED)


def shown(slot) -> str:
    """The slot's id as the page knows it (its opaque id, ``#pair[data-ready]``)."""
    return api_id("slot", slot.id)


def only_the_live_server(page, live_server) -> list[str]:
    """Abort every request that does not go to the live server, as if offline. Returns
    the list the aborted URLs are appended to."""
    left_the_server: list[str] = []

    def route(request_route):
        url = request_route.request.url
        if url.startswith(live_server.url + "/"):
            request_route.continue_()
        else:
            left_the_server.append(url)
            request_route.abort()

    page.route("**/*", route)
    return left_the_server


class HeldPictures:
    """Keeps the page's picture downloads waiting until ``release``: the page as a rater on
    a slow connection sees it before its pictures arrive. Other requests, and the pictures
    once released, fall back to the page's earlier routes (only_the_live_server's, say):
    make it after those, since Playwright asks the newest route first."""

    def __init__(self, page):
        self.page = page
        self.waiting = []
        self.released = False
        page.route("**/*", self._route)

    def _route(self, request_route) -> None:
        if request_route.request.resource_type == "image" and not self.released:
            self.waiting.append(request_route)
        else:
            request_route.fallback()

    def release(self, pictures: str | None = None) -> None:
        """Let the held downloads go; wait until every picture ``pictures`` selects has
        loaded (a lazy picture loads only once scrolled into view: leave it out)."""
        self.released = True
        while self.waiting:
            self.waiting.pop().fallback()
        if pictures is not None:
            pictures_loaded(self.page, pictures)


def pictures_loaded(page, pictures: str) -> None:
    """Wait until every picture ``pictures`` selects has loaded (a broken one never does)."""
    page.wait_for_function(
        "s => [...document.querySelectorAll(s)].every(i => i.complete && i.naturalWidth > 0)", arg=pictures
    )


def boxes(page, selectors: list[str]) -> list[dict]:
    """Where each element ``selectors`` select lies on the page (every match, in order), in
    the document's coordinates: a scroll moves none of them."""
    return page.evaluate(
        """selectors => selectors.flatMap(s => [...document.querySelectorAll(s)].map(e => {
            const r = e.getBoundingClientRect();
            return {x: r.x + scrollX, y: r.y + scrollY, width: r.width, height: r.height};
        }))""",
        selectors,
    )


PASSWORDS = {username: password for username, password, _ in DEMO_ACCOUNTS}


def log_in(page, live_server, username: str) -> None:
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORDS[username])
    with page.expect_navigation():
        page.click("button[type=submit]")


def watch_errors(page) -> list[str]:
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    return errors


def heading_levels(page) -> list[int]:
    """The levels of the page's visible headings in document order."""
    return page.evaluate(
        """() => [...document.querySelectorAll('h1, h2, h3, h4, h5, h6')]
            .filter(h => h.checkVisibility())
            .map(h => Number(h.tagName[1]))"""
    )


def assert_heading_outline(page) -> None:
    """One h1 first, and no heading more than one level below the one before it (a
    screen reader's outline of the page has no gaps)."""
    levels = heading_levels(page)
    assert levels and levels[0] == 1 and levels.count(1) == 1, levels
    assert all(after - before <= 1 for before, after in pairwise(levels)), levels
