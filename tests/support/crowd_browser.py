"""The crowd study in the browser: answering the quiz, a participant's rated items, the end page."""

import re

from annotation.core import cxc
from annotation.models import GoldPair, GoldPurpose, GoldRating, Rating
from tests.support.browser import track_point
from tests.support.rating_support import db_id

END_PAGE = "[data-testid^=crowd-]"


def answer_quiz(page, *, near: bool) -> list[int]:
    """Answer every question of the open attempt, at the reference (near) or at the far
    end of the scale; checks that nothing about a reference shows while the attempt is
    open and that its review then names the level of each question asked, and only
    those; returns the gold pair ids in the order they were asked."""
    asked = []
    while True:
        page.wait_for_selector("#pair[data-ready]:visible, #quiz-result:visible")
        if page.locator("#quiz-result").is_visible():
            break
        # The page names the question by its opaque id; the test reads its gold pair.
        ready = page.locator("#pair").get_attribute("data-ready")
        gold_id = db_id("question", ready)
        asked.append(gold_id)
        assert page.locator("#quiz-review").is_hidden()
        assert "Reference" not in page.locator(".rate-main").inner_text()
        reference = GoldPair.objects.get(pk=gold_id).gold_score
        # The very ends of the track are its edge pixels: stay a little inside.
        fraction = min(0.99, max(0.01, reference / 5)) if near else (0.01 if reference >= 2.5 else 0.99)
        page.locator("#submit").scroll_into_view_if_needed()  # below the pictures on a phone
        page.mouse.click(*track_point(page, fraction))
        page.click("#submit")
        page.wait_for_function(
            "ready => !document.querySelector('#quiz-result').hidden"
            " || document.querySelector('#pair').dataset.ready !== ready",
            arg=ready,
        )
    review = page.locator("#quiz-review")
    review.wait_for(state="visible")
    entries = review.locator("li")
    assert entries.count() == len(asked)
    for index, gold_id in enumerate(asked):
        entry = entries.nth(index)
        assert db_id("question", entry.get_attribute("data-question")) == gold_id
        level = cxc.nearest_level(GoldPair.objects.get(pk=gold_id).gold_score)
        shown = entry.locator(".reference").inner_text()
        assert shown == f"Reference: {cxc.LEVEL_NAMES[level]}: {cxc.LEVEL_DETAILS['SIS'][level]}"
        assert f"Reference explained: {cxc.LEVEL_NAMES[level]}" in entry.inner_text()
        assert entry.locator(".yours").inner_text().removeprefix("Your answer: ") in cxc.LEVEL_NAMES
        # The rater never sees a number: no digit in the review at all.
        assert not re.search(r"\d", entry.inner_text()), entry.inner_text()
    return asked


def items_of(user) -> int:
    gold = GoldRating.objects.filter(rater=user, purpose=GoldPurpose.QUEUE).count()
    return Rating.objects.filter(rater=user).count() + gold
