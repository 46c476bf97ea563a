"""The admin's batch list and pair page as a person sees them, in Chromium at 1280 px."""

import re

import pytest

from annotation.models import Flag, FlagReason, Pair
from sampling.models import SamplingBatch
from tests.frontend.rating_setup import demo_with_pairs, rater
from tests.frontend.test_rating_page import session_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("demo_allowed")]


def test_the_batch_list_fits_1280_px_and_a_flagged_pair_shows_its_pictures(page, live_server, screenshot_dir):
    demo_with_pairs(per_kind=4)
    sis = Pair.objects.filter(kind="SIS").first()
    Flag.objects.create(pair=sis, rater=rater(), reason=FlagReason.BROKEN_IMAGE)
    session_for(page, live_server, username="admin")

    page.goto(f"{live_server.url}/admin/sampling/samplingbatch/")
    page.wait_for_selector("#result_list")
    page.screenshot(path=screenshot_dir / "admin-batch-list-1280.png", full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    assert page.evaluate("document.querySelector('#changelist .results').scrollWidth") <= page.evaluate(
        "document.querySelector('#changelist .results').clientWidth"
    )
    rows = page.locator("#result_list tbody tr")
    assert rows.count() == SamplingBatch.objects.count() == 2
    for row in range(rows.count()):
        assert re.search(r"\d+ of \d+ pairs\n\d+ of \d+ ratings", rows.nth(row).inner_text())

    page.goto(f"{live_server.url}/admin/annotation/flag/")
    page.wait_for_selector("#result_list figure img")
    page.screenshot(path=screenshot_dir / "admin-flag-list.png", full_page=True)
    assert page.evaluate("document.querySelector('#changelist .results').scrollWidth") <= page.evaluate(
        "document.querySelector('#changelist .results').clientWidth"
    )
    pictures = page.locator("#result_list figure img")
    assert pictures.count() == 2
    # The pictures really load (the image view serves the demo's files to the admin).
    assert page.evaluate("[...document.querySelectorAll('#result_list figure img')].every(i => i.naturalWidth > 0)")
