"""A paused rater sees the pause page, in a real headless Chromium: on opening the rating
page, and mid-session, where the rating they were giving is refused (a pause
since the claim stores nothing); lifted, they rate again."""

import pytest
from django.contrib.auth import get_user_model

from annotation.models import Dataset, Rating
from annotation.quality.pauses import rater_pause, rater_pause_lift
from tests.support.browser import session_for, track_point

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("demo_allowed")]

PAUSED_TEXT = "Your rating is paused for now"


def pause(username="rater1"):
    users = get_user_model().objects
    return rater_pause(
        rater=users.get(username=username),
        dataset=Dataset.objects.get(name="demo"),
        reason="gold error 1.80 over the last 5 gold items (limit 1.00)",
        created_by=users.get(username="admin"),
    )


def test_a_paused_rater_sees_the_pause_page_and_returns_once_lifted(page, live_server, demo, screenshot_dir):
    made = pause()
    session_for(page, live_server)
    page.goto(f"{live_server.url}/rate/demo/sis/")
    page.wait_for_selector("[data-testid=paused]")
    assert page.url.endswith("/rate/demo/paused/")
    text = page.locator("main").inner_text()
    assert PAUSED_TEXT in text and "demo" in text
    assert "gold" not in text.lower(), "the rater is not shown the reason or gold numbers"
    page.screenshot(path=str(screenshot_dir / "paused.png"), full_page=True)
    rater_pause_lift(pause_id=made.id, lifted_by=get_user_model().objects.get(username="admin"))
    with page.expect_navigation():
        page.click("text=Check again")
    assert page.url.endswith("/rate/")


def test_a_rater_paused_mid_session_has_their_rating_refused_and_lands_on_the_pause_page(page, live_server, demo):
    session_for(page, live_server)
    page.goto(f"{live_server.url}/rate/demo/sis/")
    page.wait_for_selector("#pair[data-ready]")
    pause()
    page.mouse.click(*track_point(page, 0.5))
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-testid=paused]")
    assert Rating.objects.filter(rater__username="rater1").count() == 0
    assert PAUSED_TEXT in page.locator("main").inner_text()
