"""The crowd's review of retrieval failures in a real headless Chromium, end to end: a
researcher runs an explained evaluation of the demo, opens its failures, queues them for
review by two raters each; two raters review every failure on the review page (the
query, the expected and the retrieved picture, the marks, the slider); the researcher's
page then shows the correlation table, the marks and the crowd's column in the failures
list. The first review's pictures hold their place before their files arrive (as on the
rating page: test_picture_boxes_browser.py). Screenshots at 1280x800 and 390x844 of both
pages."""

import io
import os
import shutil
from pathlib import Path

import pytest
from django.core.management import call_command

from annotation.models import Job, Rating, ReviewMarks, TaskKind
from frontend.review_examples import REVIEW_EXAMPLES
from tests.support.browser import (
    HeldPictures,
    assert_heading_outline,
    boxes,
    log_in,
    track_point,
    watch_errors,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("demo_allowed")]
SIZES = ((1280, 800), (390, 844))
RATERS = 2
REVIEW_PICTURES = ".review-image img"
REVIEW_PLACES = [REVIEW_PICTURES, ".scale-track", "#submit"]


def shoot(page, screenshot_dir, name: str) -> None:
    """Full-page screenshots at both sizes, copied to REVIEW_SHOTS when it is set."""
    shots = Path(os.environ["REVIEW_SHOTS"]) if os.environ.get("REVIEW_SHOTS") else None
    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        path = screenshot_dir / f"{name}-{width}.png"
        page.screenshot(path=str(path), full_page=True)
        # Nothing is cut off: the page does not scroll sideways.
        assert page.evaluate("document.documentElement.scrollWidth") <= width, (name, width)
        if shots:
            shots.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, shots / path.name)


def run_explained_evaluation(page, live_server, tmp_path) -> Job:
    """An explained evaluation of the demo's captions embedded by the ``embed`` command's
    hashing encoder (shared words only: enough failures for a correlation)."""
    call_command(
        "embed",
        dataset="demo",
        space="hashed",
        encoder="hashing",
        out_dir=tmp_path,
        do_import=True,
        stdout=io.StringIO(),
    )
    page.goto(f"{live_server.url}/research/")
    page.wait_for_selector("#evaluate-caption option[value=hashed]", state="attached")
    page.select_option("#evaluate-image", "")
    page.select_option("#evaluate-caption", "hashed")
    page.fill("#evaluate-name", "hashed words")
    page.check("#evaluate-explain")
    page.click("#evaluate-form button")
    page.wait_for_selector("#evaluations article[data-status=succeeded]", timeout=60_000)
    return Job.objects.get(kind=Job.Kind.EVALUATE)


def see_the_worked_examples(page, screenshot_dir, username: str) -> None:
    """The instructions open on the worked examples: one card per example, each naming
    its marks and the level the slider goes near, none with a digit; closed again after."""
    page.click("#instructions summary")
    assert page.locator("#instructions").get_attribute("open") is not None
    cards = page.locator("#instructions .review-example")
    assert cards.count() == len(REVIEW_EXAMPLES)
    cards.first.scroll_into_view_if_needed()
    assert cards.first.is_visible()
    assert_heading_outline(page)
    for card, example in zip(cards.all(), REVIEW_EXAMPLES, strict=True):
        assert card.locator("q").inner_text() == example.query
        assert card.locator(".example-marks").inner_text() == ", ".join(example.mark_labels)
        assert card.locator(".reference").inner_text() == example.level
    assert not any(ch.isdigit() for ch in page.locator("#instructions").inner_text())
    shoot(page, screenshot_dir, f"review-examples-{username}")
    page.set_viewport_size({"width": 1280, "height": 800})
    page.click("#instructions summary")


def assert_the_pictures_hold_their_place(page, held: HeldPictures) -> None:
    """Before the held pictures arrive, they, the track and Submit already lie where they
    lie once the pictures have loaded."""
    assert page.locator(REVIEW_PICTURES).evaluate_all("pictures => pictures.every(p => p.src && !p.complete)")
    before = boxes(page, REVIEW_PLACES)
    assert all(box["width"] > 50 and box["height"] > 50 for box in before[:2]), before
    held.release(REVIEW_PICTURES)
    assert boxes(page, REVIEW_PLACES) == before


def review_every_failure(
    browser, live_server, username: str, screenshot_dir, shots: str | None, hold_pictures: bool = False
) -> int:
    """``username`` reviews on the review page until none is left; how many they did.
    ``hold_pictures``: the first review's pictures arrive only once their place is measured."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    errors = watch_errors(page)
    log_in(page, live_server, username)
    held = HeldPictures(page) if hold_pictures else None
    page.goto(f"{live_server.url}/rate/demo/rev/")
    done = 0
    while True:
        page.wait_for_selector("#work[data-ready]:not([hidden]), #state:not([hidden])")
        if page.locator("#state").is_visible():
            break
        query = page.locator("#query").inner_text()
        assert query
        if held and done == 0:
            assert_the_pictures_hold_their_place(page, held)
        for side in ("#expected", "#retrieved"):
            page.wait_for_function(f"document.querySelector('{side} img').complete")
            assert page.locator(f"{side} img").evaluate("i => i.naturalWidth > 0")
        assert page.locator("#expected figcaption").inner_text() == "Expected"
        assert page.locator("#retrieved figcaption").inner_text() == "Retrieved"
        if done == 0:
            # A fair alternative stands alone: ticking it clears a misreading, and back.
            page.check("input[value=object_class]")
            page.check("input[value=fair_alternative]")
            assert not page.locator("input[value=object_class]").is_checked()
            page.check("input[value=size]")
            assert not page.locator("input[value=fair_alternative]").is_checked()
            page.uncheck("input[value=size]")
            if shots:
                shoot(page, screenshot_dir, f"review-page-{username}")
                page.set_viewport_size({"width": 1280, "height": 800})
                see_the_worked_examples(page, screenshot_dir, username)
        # Short queries read as misread objects; the others as fair alternatives.
        misread = len(query) % 3 != 0
        page.check("input[value=object_class]" if misread else "input[value=fair_alternative]")
        assert page.locator("#submit").is_disabled()
        page.locator(".scale-track").scroll_into_view_if_needed()
        page.mouse.click(*track_point(page, 0.15 + 0.7 * ((len(query) * 7) % 10) / 10))
        # The slider never shows its number.
        assert not any(ch.isdigit() for ch in page.locator("#scale").inner_text())
        if done % 2:
            page.keyboard.press("Enter")  # the slider has the focus: Enter submits
        else:
            page.click("#submit")
        done += 1
        page.wait_for_function(
            "n => document.querySelector('#progress').textContent.startsWith(String(n)) "
            "|| !document.querySelector('#notice').hidden",
            arg=done,
        )
        page.wait_for_selector("#work[data-ready]:not([hidden]), #state:not([hidden])")
        assert page.locator("#notice").is_hidden(), page.locator("#notice").inner_text()
    assert "No failures left to review" in page.locator("#state h2").inner_text()
    assert errors == []
    context.close()
    return done


def test_a_researcher_queues_the_failures_and_raters_review_them(
    page, browser, live_server, demo, exports_dir, screenshot_dir, tmp_path
):
    errors = watch_errors(page)
    page.set_viewport_size({"width": 1280, "height": 800})
    log_in(page, live_server, "researcher")
    job = run_explained_evaluation(page, live_server, tmp_path)
    article = page.locator("#evaluations article[data-status=succeeded]").first
    # The researcher opens the failures: each with its query and the two images.
    failures = article.locator("details.explained-failures")
    failures.locator("summary").click()
    page.wait_for_selector("table.failures tbody tr")
    first = failures.locator("table.failures tbody tr").first
    assert first.locator("td.query q").inner_text()
    assert first.locator("figure.failure-image img").count() == 2
    count = int(failures.locator(".pager span").inner_text().split(" of ")[1].split()[0])
    assert count > 0
    # ... and queues them for review by two raters each.
    review = article.locator("details.failure-review")
    review.locator("summary").click()
    review.locator("input[type=number]").fill(str(RATERS))
    review.locator("button", has_text="Queue the failures for review").click()
    page.wait_for_selector("details.failure-review section.review-model")
    assert f"0 of {count} failures reviewed" in review.locator("section.review-model h4").inner_text()
    pairs = job.review_queue.batch.pairs.filter(kind=TaskKind.REV).count()
    assert 0 < pairs <= count
    # Queuing again adds nothing (the API answers it; the page shows the figures now).
    reviewed = [
        review_every_failure(browser, live_server, f"rater{n}", screenshot_dir, shots=n <= 2, hold_pictures=n == 1)
        for n in (1, 2, 3)
    ]
    assert reviewed == [pairs, pairs, 0]
    assert Rating.objects.filter(pair__kind=TaskKind.REV).count() == RATERS * pairs
    assert ReviewMarks.objects.count() == RATERS * pairs
    # The correlation table and the marks appear on the researcher's page.
    review.locator("button", has_text="Refresh").click()
    page.wait_for_function(
        "t => document.querySelector('details.failure-review h4').textContent.includes(t)",
        arg=f"{count} of {count} failures reviewed, {count} by every rater",
    )
    table = review.locator("table.review-correlations")
    assert table.locator("tbody tr").count() == 4
    assert "concept agreement" in table.inner_text()
    # With this many failures CA's correlation has a value (a rho between -1 and 1, n, p).
    ca = table.locator("tbody tr").first.locator("td.rho").first
    assert -1 <= float(ca.locator(".value").inner_text()) <= 1
    assert int(ca.locator(".ci").inner_text().replace("\u00a0", " ").split()[1]) >= 3
    marks = review.locator("table.review-marks-table").inner_text()
    assert "Object class" in marks and "A fair alternative" in marks
    # The failures list shows the crowd's column, sortable.
    page.wait_for_selector("table.failures td.crowd .mean")
    failures.locator("th button.sort", has_text="Crowd").click()
    page.wait_for_selector("table.failures th[aria-sort=descending]")
    means = [float(t) for t in failures.locator("td.crowd .mean").all_inner_texts()]
    assert means == sorted(means, reverse=True)
    review.scroll_into_view_if_needed()
    shoot(page, screenshot_dir, "research-review")
    assert errors == []
