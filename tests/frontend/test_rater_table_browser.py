"""The admin's rater table in headless Chromium, at a laptop's 1280x800 and a phone's
390x844: a crowd participant of a three-item study who clicked through every item is
flagged on their share under the speed floor; on a phone every rater's Pause and Exclude
are on screen without scrolling the page sideways and the flag reasons wrap in full; the
Paused column says what Pause and Lift pause just did (no snapshot in between); undoing
an exclusion says the rater stays paused and how to resume them, or lifts the pause.
Screenshots: test-artifacts/screenshots/rater-table-*.png."""

import pytest
from django.db.models import F
from django.utils import timezone

from annotation.dashboard.services import campaign_snapshot_refresh
from annotation.models import Pair, Participant, RaterPause
from annotation.people.crowd.links import campaign_link_create
from tests.factories import UserFactory
from tests.frontend.campaign_setup import rate_campaign
from tests.frontend.rating_setup import rater
from tests.support.browser import log_in, watch_errors
from tests.support.rating_support import rate_pair

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LAPTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
QUOTA = 3
QUICK = "100% under the speed floor > 50%"

# Nothing cut: the element shows all it holds and ends inside the viewport.
FITS = "el => el.scrollWidth <= el.clientWidth && el.getBoundingClientRect().right <= innerWidth"

# Each cell of a row by its column's heading (the headings stay in the DOM on a phone).
CELLS_BY_HEADING = """row => {
  const headings = [...document.querySelectorAll('table#raters thead th')].map(th => th.textContent.trim());
  return Object.fromEntries([...row.cells].map((cell, i) => [headings[i], cell.innerText.trim()]));
}"""


@pytest.fixture
def short_study(demo):
    """The demo rated by its five raters, plus a participant of a 3-item link who rated
    three items at about a second each (under every kind's speed floor); a new snapshot."""
    rate_campaign(demo, [rater(f"rater{i}") for i in range(1, 6)])
    link = campaign_link_create(
        dataset=demo, name="short", kinds=["STS", "SIS", "SITS"], quota=QUOTA, completion_code="C3"
    )
    quick = UserFactory(username="prolific-quick", roles=["participant"], password=None)
    Participant.objects.create(link=link, user=quick, external_id="quick", started_at=timezone.now())
    open_pairs = Pair.objects.filter(dataset=demo, ratings_done__lt=F("ratings_required")).order_by("id")
    for pair, ms in zip(open_pairs[:QUOTA], (800, 1_000, 1_200), strict=True):
        rate_pair(pair, [2.5], raters=[quick], times_ms=[ms])
    campaign_snapshot_refresh(demo)
    return quick


def _open_table(page, live_server):
    page.goto(f"{live_server.url}/campaigns/demo/raters/")
    page.wait_for_selector("table#raters tbody tr[id^=rater-]")


def _cells(page, rater_id: int) -> dict[str, str]:
    return page.locator(f"tr#rater-{rater_id}").evaluate(CELLS_BY_HEADING)


def test_a_short_study_clicked_through_is_flagged_and_a_phone_reaches_every_action(
    browser, live_server, short_study, screenshot_dir
):
    page = browser.new_context(viewport=LAPTOP).new_page()
    errors = watch_errors(page)
    log_in(page, live_server, "admin")
    _open_table(page, live_server)
    row = page.locator(f"tr#rater-{short_study.pk}")
    assert "flagged" in (row.get_attribute("class") or ""), "three items of three, all under the floor"
    assert QUICK in row.locator(".reasons").inner_text()
    page.screenshot(path=str(screenshot_dir / "rater-table-1280.png"), full_page=True)

    page.set_viewport_size(PHONE)
    _open_table(page, live_server)
    width = PHONE["width"]
    assert page.evaluate("document.documentElement.scrollWidth") <= width, "the page itself never scrolls sideways"
    page.screenshot(path=str(screenshot_dir / "rater-table-390.png"), full_page=True)
    rows = page.locator("table#raters tbody tr[id^=rater-]")
    assert rows.count() == 6
    # Nothing is scrolled sideways (neither the page nor the table's box): every button
    # must already lie within the screen's width, wherever the page is scrolled down to.
    for index in range(rows.count()):
        card = rows.nth(index)
        for control in (card.locator("button.pause, button.lift"), card.locator("a.exclude, a.exclusion-link")):
            box = control.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, (index, box)
            assert box["height"] >= 24, "big enough to tap"
    assert page.evaluate("[...document.querySelectorAll('.table-scroll')].every(box => box.scrollLeft === 0)")
    reasons = page.locator("table#raters .reasons")
    assert reasons.count() == 3, "rater1 (quick), rater5 (LOO r) and the participant"
    for index in range(reasons.count()):
        reason = reasons.nth(index)
        fits = reason.evaluate(
            "el => el.scrollWidth <= el.clientWidth && el.getBoundingClientRect().right <= innerWidth"
        )
        assert fits, reason.inner_text()
        for item in reason.locator("li").all():
            assert item.evaluate("el => el.scrollWidth <= el.clientWidth"), item.inner_text()
    assert QUICK in row.inner_text()
    # Each figure keeps its column's label beside it (the headings are not shown).
    median = row.locator("td.col-median_seconds")
    assert median.evaluate("el => getComputedStyle(el, '::before').content") == '"Median s / item"'
    assert median.evaluate("el => el.scrollWidth <= el.clientWidth")
    assert not errors, errors
    page.context.close()


def test_the_paused_column_follows_the_buttons_and_an_undone_exclusion_says_the_pause_stays(
    browser, live_server, short_study, screenshot_dir
):
    page = browser.new_context(viewport=LAPTOP).new_page()
    errors = watch_errors(page)
    shot = lambda step: page.screenshot(path=str(screenshot_dir / f"rater-table-{step}.png"), full_page=True)  # noqa: E731
    calm, quick = rater("rater2"), rater("rater1")
    log_in(page, live_server, "admin")
    _open_table(page, live_server)
    assert _cells(page, calm.pk)["Paused"] == "no"

    page.locator(f"tr#rater-{calm.pk} button.pause").click()
    page.wait_for_selector(f"tr#rater-{calm.pk} button.lift")
    cells = _cells(page, calm.pk)
    assert cells["Paused"] == "yes", "the column says it at once, not at the next snapshot"
    assert cells["Actions"].startswith("Paused")
    shot("paused-1280")
    page.locator(f"tr#rater-{calm.pk} button.lift").click()
    page.wait_for_selector(f"tr#rater-{calm.pk} button.pause")
    assert _cells(page, calm.pk)["Paused"] == "no"
    assert not RaterPause.objects.filter(rater=calm, lifted_at__isnull=True).exists()

    # On a phone: exclude the quick rater (which pauses them), undo without lifting the pause.
    page.set_viewport_size(PHONE)
    _open_table(page, live_server)
    page.locator(f"tr#rater-{quick.pk} a.exclude").click()
    page.click("#confirm-exclude")
    page.wait_for_selector("#exclusion-state[data-state=applied]")
    assert page.locator("#lift-with-undo").is_checked(), "the exclusion made the pause: lifting it is offered"
    shot("excluded-390")
    page.locator("#lift-with-undo").uncheck()
    page.click("#undo-exclusion")
    page.wait_for_selector("#exclusion-state[data-state=undone]")
    note = page.locator("#pause-note")
    assert f"{quick.username} is still paused" in note.inner_text()
    assert "Lift the pause" in note.inner_text()
    assert page.locator("#lift-pause").is_visible()
    shot("undone-390")
    _open_table(page, live_server)
    assert _cells(page, quick.pk)["Paused"] == "yes"
    assert "Paused" in page.locator(f"tr#rater-{quick.pk} td.actions-cell").inner_text()

    # A second exclusion, undone with the pause lifted: the rater rates again.
    page.locator(f"tr#rater-{quick.pk} button.lift").click()
    page.wait_for_selector(f"tr#rater-{quick.pk} button.pause")
    page.locator(f"tr#rater-{quick.pk} a.exclude").click()
    page.click("#confirm-exclude")
    page.wait_for_selector("#exclusion-state[data-state=applied]")
    page.click("#undo-exclusion")
    page.wait_for_selector("#exclusion-state[data-state=undone]")
    assert page.locator("#pause-note").count() == 0 and page.locator("#lift-pause").count() == 0
    assert "not paused" in page.locator(".figures").inner_text()
    assert not RaterPause.objects.filter(rater=quick, lifted_at__isnull=True).exists()
    _open_table(page, live_server)
    assert _cells(page, quick.pk)["Paused"] == "no"
    assert not errors, errors
    page.context.close()
