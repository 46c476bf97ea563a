"""In Chromium at 390x844 and 1280x800: the bulk add's "Download the links as
CSV" button gives the file once and then a page saying it is gone; the home page and the
admin home after the newcomer's notes. Screenshots under test-artifacts/screenshots/."""

import csv
import io

import pytest
from django.contrib import admin

from tests.frontend.rating_setup import demo_with_pairs
from tests.support.browser import session_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("demo_allowed")]

VIEWPORTS = {"390": {"width": 390, "height": 844}, "1280": {"width": 1280, "height": 800}}


@pytest.fixture(params=sorted(VIEWPORTS))
def sized(request, browser):
    context = browser.new_context(viewport=VIEWPORTS[request.param], accept_downloads=True)
    yield request.param, context.new_page()
    context.close()


def fits(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_the_bulk_add_page_downloads_the_links_once(sized, live_server, screenshot_dir, tmp_path):
    width, page = sized
    demo_with_pairs(per_kind=1)
    session_for(page, live_server, username="admin")
    page.goto(f"{live_server.url}/admin/auth/user/add-raters/")
    rater_list = tmp_path / "raters.csv"
    rater_list.write_text("username,email,kinds\nnew_rater_1,one@example.org,STS SIS\n+1-2,,SITS\n")
    page.set_input_files("input[name=file]", str(rater_list))
    page.click("input[type=submit]")
    button = page.locator("#invitations-csv input[type=submit]")
    assert button.get_attribute("value") == "Download the links as CSV"
    page.screenshot(path=screenshot_dir / f"admin-add-raters-download-{width}.png", full_page=True)
    assert fits(page), "the long links wrap on a phone"
    shown = page.locator("#invited code").all_inner_texts()

    with page.expect_download() as download:
        button.click()
    assert download.value.suggested_filename == "invitation-links.csv"
    rows = list(csv.DictReader(io.StringIO(open(download.value.path(), encoding="utf-8").read())))  # noqa: SIM115
    assert [row["username"] for row in rows] == ["'+1-2", "new_rater_1"], "a formula-like name escaped"
    assert sorted(row["invitation_url"] for row in rows) == sorted(shown)

    button.click()
    page.wait_for_selector(".errorlist")
    message = page.locator(".errorlist").inner_text()
    assert "downloaded already" in message and "Make new invitation links" in message
    page.screenshot(path=screenshot_dir / f"admin-add-raters-download-gone-{width}.png", full_page=True)


def test_the_home_page_and_the_admin_home_after_the_notes(sized, live_server, screenshot_dir, monkeypatch):
    width, page = sized
    # The admin title names the database; a clone's long path must wrap, not widen the page.
    long_path = "/builds/a_lab/a_clone_with_a_long_name/var/cxc_annotate_embedded.sqlite3"
    monkeypatch.setattr(admin.site, "index_title", f"embedded mode: SQLite at {long_path}")
    demo_with_pairs(per_kind=1)
    session_for(page, live_server, username="admin")
    page.goto(f"{live_server.url}/")
    page.screenshot(path=screenshot_dir / f"home-admin-{width}.png", full_page=True)
    assert fits(page)
    assert page.locator("text=/^Exports$/").count() == 1
    page.goto(f"{live_server.url}/admin/")
    page.screenshot(path=screenshot_dir / f"admin-home-campaign-work-{width}.png", full_page=True)
    first_module = page.locator("#content-main .module").first
    assert first_module.get_attribute("id") == "campaign-module"
    assert first_module.locator("caption").inner_text().lower() == "campaign work"
    assert first_module.locator("th a").count() == 8
    assert fits(page), "names whole, descriptions wrapped"
