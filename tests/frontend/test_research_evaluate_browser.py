"""An evaluation started from the researcher page in a real headless Chromium, with the
demo's own embedding spaces and a finished export's ratings: its progress, then the
report table and its files, at 390 and 1280 px."""

import json
from pathlib import Path

import pytest

from annotation.export import export_job_create
from annotation.jobs.tasks import run_export_job
from annotation.models import Job
from tests.support.browser import log_in, watch_errors

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("demo_allowed")]


@pytest.mark.parametrize(("width", "height"), [(390, 844), (1280, 800)])
def test_start_an_evaluation_and_read_its_report(page, live_server, rated, exports_dir, screenshot_dir, width, height):
    errors = watch_errors(page)
    page.set_viewport_size({"width": width, "height": height})
    export = export_job_create(dataset_name="demo", splits=None, formats=["cxc"], created_by=None)
    run_export_job(export.id)
    log_in(page, live_server, "researcher")
    page.goto(f"{live_server.url}/research/")
    page.wait_for_selector(f"#evaluate-export option[value='{export.id}']", state="attached")
    # The demo's own spaces are offered (not clip-img): MiniLM captions, EfficientNet images,
    # of two dimensions, so no joint space.
    assert page.locator("#evaluate-image").input_value() == "efficientnet_lite0"
    assert page.locator("#evaluate-caption").input_value() == "minilm"
    assert page.locator("#evaluate-joint").is_disabled()
    assert "clip-img" not in page.content()
    page.fill("#evaluate-name", "demo spaces")
    page.select_option("#evaluate-export", str(export.id))
    page.click("#evaluate-form button")
    block = page.wait_for_selector("#evaluations article[data-status=succeeded] table.report", timeout=60_000)
    job = Job.objects.get(kind=Job.Kind.EVALUATE)
    assert job.params["ratings_export"] == export.id and job.params["audited"] is True
    assert job.params["models"] == [
        {"name": "demo spaces", "image_space": "efficientnet_lite0", "caption_space": "minilm", "joint": False}
    ]
    rows = page.locator("#evaluations table.report tbody tr")
    assert rows.count() == len(job.result["comparison"]) > 0
    assert "text_to_text" in block.inner_text() and "image_to_image" in block.inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.screenshot(path=str(screenshot_dir / f"research-evaluation-{width}.png"), full_page=True)
    with page.expect_download() as download:
        page.click("#evaluations a:text('report.json')")
    report = json.loads(Path(download.value.path()).read_text())
    assert list(report["models"]) == ["demo spaces"] and report["comparison"] == job.result["comparison"]
    assert errors == []


def test_a_bad_choice_is_said_beside_the_form(page, live_server, rated, exports_dir):
    log_in(page, live_server, "researcher")
    page.goto(f"{live_server.url}/research/")
    page.wait_for_selector("#evaluate-image option[value=efficientnet_lite0]", state="attached")
    page.select_option("#evaluate-image", "")
    page.select_option("#evaluate-caption", "")
    page.click("#evaluate-form button")
    page.wait_for_selector("#evaluate-error:not([hidden])")
    assert "names no embedding space" in page.locator("#evaluate-error").inner_text()
    assert not Job.objects.filter(kind=Job.Kind.EVALUATE).exists()
