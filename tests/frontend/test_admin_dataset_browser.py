"""The Dataset admin page's inline headings in headless Chromium at 1280x800 and 390x844:
Django makes a heading from a name plus "s" unless told otherwise, which read "SPEED FLOOR
(DASHBOARD)S". Every admin inline with a name of its own names its plural too.
Screenshots: test-artifacts/screenshots/admin-dataset-*.png."""

import pytest
from django.contrib import admin

from annotation.models import Dataset
from tests.support.browser import log_in

VIEWPORTS = ({"width": 1280, "height": 800}, {"width": 390, "height": 844})


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_dataset_page_names_its_speed_floors_in_the_plural(browser, live_server, demo, screenshot_dir):
    page = browser.new_context(viewport=VIEWPORTS[0]).new_page()
    log_in(page, live_server, "admin")
    dataset = Dataset.objects.get(name="demo")
    for viewport in VIEWPORTS:
        page.set_viewport_size(viewport)
        page.goto(f"{live_server.url}/admin/annotation/dataset/{dataset.pk}/change/")
        headings = [text.strip() for text in page.locator(".inline-group h2").all_text_contents()]
        assert "Speed floors (dashboard)" in headings, headings
        assert "Quality control" in headings, headings  # one row: its singular name
        assert not any(text.endswith(")s") for text in headings), headings
        group = page.locator(".inline-group").first
        group.scroll_into_view_if_needed()
        shown = group.locator("h2").first.inner_text()
        assert shown.upper() == "SPEED FLOORS (DASHBOARD)", shown
        page.screenshot(path=str(screenshot_dir / f"admin-dataset-{viewport['width']}.png"))
    page.context.close()


def test_every_admin_inline_that_names_itself_names_its_plural():
    inlines = {inline for model_admin in admin.site._registry.values() for inline in model_admin.inlines}
    named = [inline for inline in inlines if "verbose_name" in vars(inline)]
    assert named, "the dataset page's speed floors at least"
    missing = [inline.__name__ for inline in named if "verbose_name_plural" not in vars(inline)]
    assert not missing, f"Django would add an 's' to the whole name: {missing}"
