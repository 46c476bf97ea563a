"""The campaign pages as a person sees them in headless Chromium, on the demo dataset rated
by the five demo raters. Charts must really draw (Plotly served by the app), nothing may
be fetched from another host, a rater's pictures have their boxes before their files
arrive, and each page is photographed at 1280 px and at a tablet's
820 px: test-artifacts/screenshots/campaign-*.png."""

import pytest

from tests.frontend.campaign_setup import rate_campaign
from tests.frontend.rating_setup import rater
from tests.support.browser import HeldPictures, boxes, log_in, only_the_live_server, pictures_loaded, watch_errors

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TABLET = {"width": 820, "height": 1180}
DIFFERENCE_PICTURES = "#differences img"


@pytest.fixture
def rated_demo(demo):
    return rate_campaign(demo, [rater(f"rater{i}") for i in range(1, 6)])


def charts_drawn(page, *, marks: bool = True) -> int:
    """Wait until every chart placeholder holds a Plotly plot, with bars or lines unless
    ``marks`` is False (no ratings yet); return how many there are."""
    page.wait_for_function(
        "[...document.querySelectorAll('[data-chart]')].every(el => el.querySelector('.plot-container svg.main-svg'))"
    )
    charts = page.locator("[data-chart]")
    for i in range(charts.count() if marks else 0):
        drawn = charts.nth(i).locator(
            ".plot-container .trace, .plot-container .bars, .plot-container .scatterlayer path"
        )
        assert drawn.count() > 0, f"chart {charts.nth(i).get_attribute('data-chart')} has no marks"
    return charts.count()


def visit_every_page(page, live_server, shots, who: str, width: str) -> None:
    """Index, dashboard, rater table and one rater's page, through the links a person
    clicks, each photographed."""
    page.goto(f"{live_server.url}/campaigns/")
    page.screenshot(path=str(shots / f"campaign-index-{who}-{width}.png"), full_page=True)
    page.click(".campaign-list a:text-is('demo')")
    page.wait_for_url(f"{live_server.url}/campaigns/demo/")
    assert charts_drawn(page) == 8, "per day, per hour, reliability, pair means of 3 kinds, pair SDs, positives"
    assert "Snapshot made" in page.locator(".snapshot-bar").inner_text()
    page.screenshot(path=str(shots / f"campaign-dashboard-{who}-{width}.png"), full_page=True)
    page.click(".campaign-nav a:text-is('Raters')")
    page.wait_for_url(f"{live_server.url}/campaigns/demo/raters/")
    assert page.locator("table#raters tbody tr").count() == 5
    page.wait_for_selector("table#raters thead th button.sort")
    page.screenshot(path=str(shots / f"campaign-raters-{who}-{width}.png"), full_page=True)
    held = HeldPictures(page)
    page.click("table#raters tbody tr:first-child th a")
    page.wait_for_url(f"{live_server.url}/campaigns/demo/raters/*/")
    assert charts_drawn(page) == 3
    assert page.locator("#differences li.difference").count() > 0
    # Before any picture has arrived, each already has its box.
    assert page.locator(DIFFERENCE_PICTURES).evaluate_all("pictures => pictures.every(p => !p.complete)")
    before = boxes(page, [DIFFERENCE_PICTURES, "#differences li.difference"])
    assert all(box["height"] > 50 for box in before[: page.locator(DIFFERENCE_PICTURES).count()]), before
    held.release()
    # The pictures load lazily: bring each into view as a person scrolling down would.
    for picture in page.locator(DIFFERENCE_PICTURES).all():
        picture.scroll_into_view_if_needed()
    pictures_loaded(page, "img")
    assert boxes(page, [DIFFERENCE_PICTURES, "#differences li.difference"]) == before
    page.screenshot(path=str(shots / f"campaign-rater-{who}-{width}.png"), full_page=True)


def sort_values(page, column: int) -> list[str]:
    return page.locator(f"table#raters tbody tr > :nth-child({column})").evaluate_all(
        "cells => cells.map(c => c.dataset.sort)"
    )


def test_admin_sees_every_campaign_page_with_charts_at_desktop_and_tablet_width(
    browser, page, live_server, rated_demo, screenshot_dir
):
    left_the_server = only_the_live_server(page, live_server)
    errors = watch_errors(page)
    log_in(page, live_server, "admin")
    page.goto(f"{live_server.url}/admin/annotation/dataset/{rated_demo.dataset_id}/change/")
    page.screenshot(path=str(screenshot_dir / "campaign-admin-dataset-link.png"))
    page.click(".object-tools a:text-is('Campaign dashboard')")
    assert page.url == f"{live_server.url}/campaigns/demo/"
    page.goto(f"{live_server.url}/admin/")
    page.screenshot(path=str(screenshot_dir / "campaign-admin-index-link.png"))
    page.click("#campaign-module th a")
    assert page.url == f"{live_server.url}/campaigns/"
    visit_every_page(page, live_server, screenshot_dir, "admin", "1280")

    tablet = browser.new_context(viewport=TABLET).new_page()
    tablet_left = only_the_live_server(tablet, live_server)
    tablet_errors = watch_errors(tablet)
    log_in(tablet, live_server, "admin")
    visit_every_page(tablet, live_server, screenshot_dir, "admin", "820")
    width = tablet.evaluate("document.documentElement.scrollWidth")
    assert width <= TABLET["width"], "nothing sticks out sideways on a tablet"
    tablet.context.close()
    assert left_the_server == [] and tablet_left == []
    assert errors == [] and tablet_errors == []


def test_researcher_sees_every_campaign_page_at_desktop_and_tablet_width(
    browser, page, live_server, rated_demo, screenshot_dir
):
    left_the_server = only_the_live_server(page, live_server)
    errors = watch_errors(page)
    log_in(page, live_server, "researcher")
    visit_every_page(page, live_server, screenshot_dir, "researcher", "1280")
    tablet = browser.new_context(viewport=TABLET).new_page()
    tablet_left = only_the_live_server(tablet, live_server)
    log_in(tablet, live_server, "researcher")
    visit_every_page(tablet, live_server, screenshot_dir, "researcher", "820")
    tablet.context.close()
    assert left_the_server == [] and tablet_left == []
    assert errors == []


def test_rater_table_sorts_by_mouse_and_keyboard(page, live_server, rated_demo):
    log_in(page, live_server, "admin")
    page.goto(f"{live_server.url}/campaigns/demo/raters/")
    headings = page.locator("table#raters thead th")
    labels = headings.all_inner_texts()
    loo = labels.index("LOO r") + 1
    page.locator("table#raters thead th button", has_text="LOO r").click()
    assert headings.nth(loo - 1).get_attribute("aria-sort") == "descending"
    values = [float(v) for v in sort_values(page, loo) if v != ""]
    assert values == sorted(values, reverse=True) and len(values) >= 4
    # Keyboard: Tab reaches the heading's button, Enter reverses the order.
    page.locator("table#raters thead th button", has_text="LOO r").focus()
    page.keyboard.press("Enter")
    assert headings.nth(loo - 1).get_attribute("aria-sort") == "ascending"
    values = [float(v) for v in sort_values(page, loo) if v != ""]
    assert values == sorted(values)
    page.locator("table#raters thead th button", has_text="Rater").click()
    names = page.locator("table#raters tbody th").all_inner_texts()
    assert names == sorted(names)
    with page.expect_download() as download:
        page.click("text=Download CSV")
    assert download.value.suggested_filename.startswith("demo-raters-")


def test_researcher_refreshes_the_numbers(page, live_server, rated_demo, screenshot_dir):
    left_the_server = only_the_live_server(page, live_server)
    log_in(page, live_server, "researcher")
    page.goto(f"{live_server.url}/campaigns/demo/")
    charts_drawn(page)
    with page.expect_navigation():
        page.click("text=Refresh now")
    assert page.url.startswith(f"{live_server.url}/campaigns/demo/?asked=")
    assert page.locator("#refresh-state").inner_text() == "Refreshed: these are the new numbers."
    assert "s ago" in page.locator("#snapshot-made").inner_text()
    charts_drawn(page)
    page.screenshot(path=str(screenshot_dir / "campaign-dashboard-researcher-1280.png"), full_page=True)
    page.goto(f"{live_server.url}/campaigns/demo/raters/")
    page.click("table#raters tbody tr:last-child th a")
    charts_drawn(page)
    page.screenshot(path=str(screenshot_dir / "campaign-rater-researcher-1280.png"), full_page=True)
    assert left_the_server == []


def test_empty_campaign_page_offers_to_compute(page, live_server, demo, screenshot_dir):
    log_in(page, live_server, "researcher")
    page.goto(f"{live_server.url}/campaigns/demo/")
    assert page.locator("#no-snapshot h2").inner_text() == "No numbers yet"
    page.screenshot(path=str(screenshot_dir / "campaign-empty-1280.png"), full_page=True)
    with page.expect_navigation():
        page.click("text=Compute now")
    assert page.locator("#refresh-state").inner_text() == "Refreshed: these are the new numbers."
    drawn = charts_drawn(page, marks=False)
    assert drawn >= 4, "per day, per hour, pair SDs, positives at least"
    assert page.locator("[data-chart] .annotation-text", has_text="Nothing yet").count() == drawn
    page.screenshot(path=str(screenshot_dir / "campaign-dashboard-no-ratings-1280.png"), full_page=True)


def test_raters_get_403_and_anonymous_users_the_login_page(page, live_server, rated_demo, screenshot_dir):
    response = page.goto(f"{live_server.url}/campaigns/demo/")
    assert response.status == 200 and page.url == f"{live_server.url}/login/?next=/campaigns/demo/"
    assert page.locator("h1").inner_text() == "Log in"
    log_in(page, live_server, "rater1")
    for url in ("/campaigns/", "/campaigns/demo/", "/campaigns/demo/raters/"):
        response = page.goto(f"{live_server.url}{url}")
        assert response.status == 403, url
        assert page.locator("h1").inner_text() == "Not allowed"
    page.screenshot(path=str(screenshot_dir / "campaign-rater-403.png"), full_page=True)
