"""Explained failures on the researcher page in a real headless Chromium: an evaluation of
the demo with ``explain`` and adversarial queries (captions embedded by the ``embed``
command's hashing encoder), its global and adversarial tables, and the failures list
with both images, their concepts and scores, sorted and paged, at 1280 and 390 px."""

import io
import os
import shutil
from pathlib import Path

import pytest
from django.core.management import call_command

from annotation.models import Job
from tests.support.browser import log_in, watch_errors

DASH = "\u2013"  # between a page's first and last number; an undefined score
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("demo_allowed")]


def hashed_space(tmp_path) -> None:
    call_command(
        "embed",
        dataset="demo",
        space="hashed",
        encoder="hashing",
        out_dir=tmp_path,
        do_import=True,
        stdout=io.StringIO(),
    )


def read_failures(page, width: int) -> None:
    block = page.locator("#evaluations details.explained-failures")
    rows = block.locator("table.failures tbody tr")
    assert rows.count() > 0
    for row in rows.all()[:5]:
        images = row.locator("figure.failure-image img")
        assert images.count() == 2
        for image in images.all():
            assert image.evaluate("i => i.complete && i.naturalWidth > 0"), image.get_attribute("src")
            assert image.get_attribute("alt")
        assert row.locator("td.query q").inner_text()
        assert row.locator("td.score").count() == 5
    # Nothing is cut off: the page does not scroll sideways.
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def test_explained_failures_read_as_a_list_at_both_widths(
    page, live_server, rated, exports_dir, screenshot_dir, tmp_path
):
    errors = watch_errors(page)
    page.set_viewport_size({"width": 1280, "height": 800})
    hashed_space(tmp_path)
    log_in(page, live_server, "researcher")
    page.goto(f"{live_server.url}/research/")
    page.wait_for_selector("#evaluate-caption option[value=hashed]", state="attached")
    assert page.locator("#evaluate-adversarial").is_disabled()
    page.select_option("#evaluate-image", "")
    page.select_option("#evaluate-caption", "hashed")
    page.fill("#evaluate-name", "hashed words")
    page.check("#evaluate-explain")
    page.fill("#evaluate-threshold", "0.05")
    page.check("#evaluate-adversarial")
    page.click("#evaluate-form button")
    page.wait_for_selector("#evaluations article[data-status=succeeded]", timeout=60_000)
    job = Job.objects.get(kind=Job.Kind.EVALUATE)
    assert job.params["explain"] == {
        "size_threshold": 0.05,
        "adversarial": {"seed": 0, "colour_distance": 150.0, "colour_pool": "named"},
    }
    # The newest evaluation's report is open.
    explain = page.locator("table.report[data-section=explain]")
    assert "Failures |F|" in explain.inner_text() and "CA: concept agreement" in explain.inner_text()
    assert "Change of MRR@5" in page.locator("table.report[data-section=adversarial]").inner_text()
    block = page.locator("#evaluations details.explained-failures")
    block.locator("summary").click()
    page.wait_for_selector("table.failures tbody tr")
    failures = job.result["comparison"]
    count = next(r for r in failures if r["metric"] == "failures")["models"]["hashed words"]["value"]
    assert block.locator(".pager").inner_text().startswith(f"1{DASH}{min(count, 20)} of {count} failures")
    ranks = [int(t.split()[-1]) for t in block.locator("td.query .rank").all_inner_texts()]
    assert ranks == sorted(ranks)
    # Sorting by concept agreement, highest first; undefined values last.
    block.locator("th button.sort", has_text="CA").click()
    page.wait_for_selector("table.failures th[aria-sort=descending]")
    values = [t for t in block.locator("td.score[data-metric=CA] .agnostic").all_inner_texts()]
    numbers = [float(v) for v in values if v != DASH]
    assert numbers == sorted(numbers, reverse=True)
    assert values[len(numbers) :] == [DASH] * (len(values) - len(numbers))
    if count > 20:
        block.locator("button.page", has_text="Next").click()
        page.wait_for_function("document.querySelector('.pager span').textContent.startsWith('21\u2013')")
    shots = Path(os.environ.get("EXPLAIN_SHOTS", "")) if os.environ.get("EXPLAIN_SHOTS") else None
    for width, height in ((1280, 800), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        path = screenshot_dir / f"research-explained-{width}.png"
        block.scroll_into_view_if_needed()
        page.screenshot(path=str(path), full_page=True)
        if shots:
            shots.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, shots / path.name)
        read_failures(page, width)
    assert errors == []
