"""A Prolific participant's whole path in a real headless Chromium: the campaign link,
the instructions, the quiz with feedback (the reference level's name, never a number;
failed once, passed on the second attempt with other questions), pairs up to the quota,
the completion code and the way back."""

import re

import pytest
from django.contrib.auth import get_user_model

from annotation import cxc
from annotation.models import GoldPair, GoldRating, Participant, QuizAttempt, Rating
from tests.frontend.crowd_setup import sis_link, sis_quiz
from tests.frontend.test_rating_page import track_point

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("demo_allowed")]

PID = "5f0c8e2a9b1d4c3e2f1a0b9c"


def answer_quiz(page, *, near: bool) -> list[int]:
    """Answer every question of the open attempt, at the reference (near) or at the far
    end of the scale; returns the gold pair ids in the order they were asked."""
    asked = []
    while True:
        page.wait_for_selector("#pair[data-ready]:visible, #quiz-result:visible")
        if page.locator("#quiz-result").is_visible():
            return asked
        gold_id = int(page.locator("#pair").get_attribute("data-ready"))
        asked.append(gold_id)
        reference = GoldPair.objects.get(pk=gold_id).gold_score
        # The very ends of the track are its edge pixels: stay a little inside.
        fraction = min(0.99, max(0.01, reference / 5)) if near else (0.01 if reference >= 2.5 else 0.99)
        page.mouse.click(*track_point(page, fraction))
        page.click("#submit")
        feedback = page.locator("#quiz-feedback")
        feedback.wait_for(state="visible")
        level = cxc.nearest_level(reference)
        shown = feedback.locator(".reference").inner_text()
        assert shown == f"Reference: {cxc.LEVEL_NAMES[level]}: {cxc.LEVEL_DETAILS['SIS'][level]}"
        assert f"Reference explained: {cxc.LEVEL_NAMES[level]}" in feedback.inner_text()
        assert feedback.locator(".yours").inner_text().removeprefix("Your answer: ") in cxc.LEVEL_NAMES
        # The rater never sees a number: no digit in the feedback at all.
        assert not re.search(r"\d", feedback.inner_text()), feedback.inner_text()
        if len(asked) == 2 and not near:
            page.screenshot(path=str(page.screenshot_dir / "crowd-quiz-feedback.png"), full_page=True)
        page.click("#quiz-next")


def test_a_participant_goes_from_the_link_through_the_quiz_and_quota_to_the_code(
    page, live_server, demo, screenshot_dir
):
    page.screenshot_dir = screenshot_dir
    sis_quiz(demo)
    returned = f"{live_server.url}/login/?returned=yes"
    link = sis_link(demo, quota=3, return_url=returned)
    page.goto(f"{live_server.url}/join/{link.token}/?PROLIFIC_PID={PID}&STUDY_ID=study1&SESSION_ID=session1")
    # The link signs them in and opens the task's page in quiz mode, instructions open.
    page.wait_for_url("**/rate/demo/sis/")
    assert page.locator("#instructions").evaluate("el => el.open")
    assert "Before your ratings count" in page.locator(".quiz-intro").inner_text()

    first_order = answer_quiz(page, near=False)
    result = page.locator("#quiz-result")
    assert "Not passed this time" in result.inner_text()
    page.screenshot(path=str(screenshot_dir / "crowd-quiz-failed.png"), full_page=True)
    page.click("#quiz-again")
    result.wait_for(state="hidden")
    second_order = answer_quiz(page, near=True)
    assert len(first_order) == len(second_order) == 3 and not set(first_order) & set(second_order)
    assert "You passed the quiz" in result.inner_text()
    page.click("#quiz-proceed")

    # The task itself, up to the quota.
    for _ in range(3):
        page.wait_for_selector("#pair[data-ready]:not([data-ready=''])")
        ready = page.locator("#pair").get_attribute("data-ready")
        page.mouse.click(*track_point(page, 0.5))
        page.keyboard.press("Enter")
        page.wait_for_function(
            "ready => document.querySelector('#pair')?.dataset.ready !== ready || location.pathname.includes('/join/')",
            arg=ready,
        )
    page.wait_for_selector("[data-testid=crowd-done]")
    assert page.locator("[data-testid=completion-code]").inner_text() == "C0DE42"
    page.screenshot(path=str(screenshot_dir / "crowd-done.png"), full_page=True)
    page.wait_for_url("**/login/?returned=yes", timeout=20_000)

    users = get_user_model().objects.filter(username=f"prolific-{PID}")
    assert users.count() == 1
    participant = Participant.objects.get(link=link)
    assert (participant.study_id, participant.session_id) == ("study1", "session1")
    assert participant.finished_at is not None and participant.items_done == 3
    assert Rating.objects.filter(rater=users.get()).count() == 3
    attempts = QuizAttempt.objects.filter(rater=users.get()).order_by("number")
    assert [(a.number, a.passed) for a in attempts] == [(1, False), (2, True)]
    assert GoldRating.objects.filter(rater=users.get(), purpose="quiz").count() == 6


def test_the_link_opened_again_in_another_tab_resumes_the_same_participant(page, live_server, demo):
    link = sis_link(demo, quota=2)
    url = f"{live_server.url}/join/{link.token}/?PROLIFIC_PID={PID}"
    page.goto(url)
    page.wait_for_selector("#pair[data-ready]")
    first = page.locator("#pair").get_attribute("data-ready")
    second_tab = page.context.new_page()
    second_tab.goto(url)
    second_tab.wait_for_selector("#pair[data-ready]")
    # The held pair comes back in the second tab: one rater, one lease, one pair.
    assert second_tab.locator("#pair").get_attribute("data-ready") == first
    assert get_user_model().objects.filter(username=f"prolific-{PID}").count() == 1
    assert Participant.objects.filter(link=link).count() == 1
