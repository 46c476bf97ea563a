"""Flags that act (issue #26) in headless Chromium, at a phone's 390x844 and a laptop's
1280x800: the demo rated by its five raters, rater1 far too quick on every item (the
seeded bad rater) and rater5 leaning far from the others (flagged on LOO r). The admin
finds rater1 flagged on the dashboard and among the first rows of the rater table,
clicks Exclude, reads what it hits, confirms, sees the exclusion applied with its undo,
and undoes it. Screenshots at each step: test-artifacts/screenshots/flags-*.png."""

import pytest

from annotation.models import ExclusionState, RaterPause, Rating, RatingExclusion, RatingStatus
from tests.frontend.campaign_setup import rate_campaign
from tests.frontend.rating_setup import rater
from tests.support.browser import log_in, watch_errors

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

VIEWPORTS = {"390": {"width": 390, "height": 844}, "1280": {"width": 1280, "height": 800}}


@pytest.fixture
def rated_demo(demo):
    # rate_campaign makes its first rater take 1 s per item: under every kind's speed floor.
    return rate_campaign(demo, [rater(f"rater{i}") for i in range(1, 6)])


@pytest.mark.parametrize("width", sorted(VIEWPORTS))
def test_an_admin_excludes_the_flagged_rater_and_undoes_it(browser, live_server, rated_demo, screenshot_dir, width):
    page = browser.new_context(viewport=VIEWPORTS[width]).new_page()
    errors = watch_errors(page)
    shot = lambda step: page.screenshot(path=str(screenshot_dir / f"flags-{step}-{width}.png"), full_page=True)  # noqa: E731
    bad = rater("rater1")
    valid = Rating.objects.filter(rater=bad, status=RatingStatus.VALID)
    count, pairs = valid.count(), valid.values("pair").distinct().count()

    log_in(page, live_server, "admin")
    page.goto(f"{live_server.url}/campaigns/demo/")
    flagged = page.locator("#flagged")
    items = flagged.locator(".flagged-list > li")
    assert items.count() == 2, flagged.inner_text()
    assert "rater1 ⚑ Flagged 100% under the speed floor > 50%" in items.all_inner_texts()
    assert any(text.startswith("rater5 ⚑ Flagged LOO r 0.") for text in items.all_inner_texts())
    flagged.scroll_into_view_if_needed()
    page.screenshot(path=str(screenshot_dir / f"flags-dashboard-{width}.png"))

    page.click("#flagged a:text('Pause or exclude them from the rater table')")
    # The click navigates: read the table once the new page shows its five raters.
    page.wait_for_function("document.querySelectorAll('table#raters tbody tr').length === 5")
    rows = page.locator("table#raters tbody tr")
    flags = rows.evaluate_all("rows => rows.map(row => row.classList.contains('flagged'))")
    assert flags == [True, True, False, False, False], "the two flagged first, nobody else flagged"
    row = page.locator(f"tr#rater-{bad.pk}")
    assert "⚑ Flagged" in row.inner_text() and "100% under the speed floor > 50%" in row.inner_text()
    shot("raters")

    row.locator("a.exclude").click()
    assert page.locator("#reach-ratings").inner_text() == str(count)
    assert page.locator("#reach-pairs").inner_text() == str(pairs)
    assert not RatingExclusion.objects.exists()
    shot("exclude-confirm")

    page.click("#confirm-exclude")
    page.wait_for_selector("#exclusion-state[data-state=applied]")
    assert f"Applied: {count} ratings excluded" in page.locator("#exclusion-state").inner_text()
    assert valid.count() == 0 and RaterPause.objects.filter(rater=bad, lifted_at__isnull=True).exists()
    shot("excluded")

    page.click("#undo-exclusion")
    page.wait_for_selector("#exclusion-state[data-state=undone]")
    assert f"Undone: {count} ratings restored" in page.locator("#exclusion-state").inner_text()
    assert RatingExclusion.objects.get().state == ExclusionState.UNDONE and valid.count() == count
    shot("undone")

    with page.expect_navigation():
        page.click("#lift-pause")
    assert not RaterPause.objects.filter(rater=bad, lifted_at__isnull=True).exists()
    assert "not paused" in page.locator(".figures").inner_text()
    page.goto(f"{live_server.url}/campaigns/demo/raters/{bad.pk}/")
    assert "⚑ Flagged" in page.locator("#rater-standing").inner_text()
    shot("rater-page")
    assert not errors, errors
    page.context.close()
