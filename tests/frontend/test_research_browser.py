"""The researcher page in a real headless Chromium: start an export from the form, watch a
pending export run to the end without reloading, download its files one by one and all
in one zip, at 1280 and at 390 px."""

import zipfile
from pathlib import Path

import pytest
from django.test import Client

from annotation.export import export_job_create
from annotation.jobs.tasks import run_export_job
from annotation.models import Job
from tests.frontend.rating_setup import rater
from tests.support.browser import log_in, watch_errors

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("demo_allowed")]


def test_start_an_export_and_download_its_files(page, live_server, rated, exports_dir, screenshot_dir):
    errors = watch_errors(page)
    log_in(page, live_server, "researcher")
    page.goto(f"{live_server.url}/research/")
    page.wait_for_selector("#export-splits input[value=demo]")
    # Bad input: no format ticked is said next to the form, and nothing starts.
    for box in page.locator("input[name=formats]").all():
        box.uncheck()
    page.click("#export-form button")
    assert "Tick at least one format" in page.locator("#export-error").inner_text()
    assert not Job.objects.exists()
    page.check("input[name=formats][value=cxc]")
    page.check("#export-splits input[value=demo]")
    page.click("#export-form button")
    row = page.wait_for_selector("#jobs tr[data-status=succeeded]", timeout=30_000)
    job = Job.objects.get()
    assert job.params["formats"] == ["cxc"] and job.params["splits"] == ["demo"]
    page.screenshot(path=str(screenshot_dir / "research-done.png"), full_page=True)
    link = page.locator("#jobs td.files a", has_text="sts_demo.csv")
    with page.expect_download() as download:
        link.click()
    saved = Path(download.value.path()).read_bytes()
    assert saved == (Path(job.params["out"]) / "sts_demo.csv").read_bytes()
    assert saved.startswith(b"caption1,caption2,")
    assert "succeeded" in row.inner_text()
    assert errors == []


@pytest.mark.parametrize(("width", "height"), [(390, 844), (1280, 800)])
def test_download_every_file_in_one_zip(page, live_server, rated, exports_dir, screenshot_dir, width, height):
    errors = watch_errors(page)
    page.set_viewport_size({"width": width, "height": height})
    log_in(page, live_server, "researcher")
    job = export_job_create(dataset_name="demo", splits=None, formats=["cxc", "jsonl", "parquet"], created_by=None)
    run_export_job(job.id)
    job.refresh_from_db()
    page.goto(f"{live_server.url}/research/")
    archive = page.wait_for_selector(f"#jobs tr[data-job='{job.id}'] a.archive")
    # Nothing of the page is cut off: the page is no wider than the screen, and the zip
    # link and the last file link are inside it.
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    last = page.locator(f"#jobs tr[data-job='{job.id}'] td.files a").last
    for element in (archive, last.element_handle()):
        box = element.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width, box
    page.click("details.file-notes summary")
    page.screenshot(path=str(screenshot_dir / f"research-zip-{width}.png"), full_page=True)
    with page.expect_download() as download:
        archive.click()
    assert download.value.suggested_filename == f"demo-export-{job.id}.zip"
    with zipfile.ZipFile(download.value.path()) as saved:
        assert saved.testzip() is None
        names = [entry["name"] for entry in job.result["files"]]
        assert saved.namelist() == [f"demo-export-{job.id}/{name}" for name in names]
        assert "sts_demo.jsonl" in names and "manifest.json" in names
        sts = saved.read(f"demo-export-{job.id}/sts_demo.csv")
        assert sts == (Path(job.result["out"]) / "sts_demo.csv").read_bytes()
    assert errors == []


def test_a_pending_export_is_watched_to_its_end(page, live_server, rated, exports_dir, screenshot_dir):
    log_in(page, live_server, "researcher")
    job = export_job_create(dataset_name="demo", splits=None, formats=["jsonl"], created_by=None)
    page.goto(f"{live_server.url}/research/")
    pending = page.wait_for_selector(f"#jobs tr[data-job='{job.id}'][data-status=pending]")
    assert pending.query_selector("progress") is not None
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(screenshot_dir / "research-pending-390.png"), full_page=True)
    run_export_job(job.id)
    # The page polls: the row turns to succeeded with its files, no reload.
    page.wait_for_selector(f"#jobs tr[data-job='{job.id}'][data-status=succeeded] td.files a", timeout=15_000)
    names = page.locator(f"#jobs tr[data-job='{job.id}'] td.files a").all_inner_texts()
    assert any(name.endswith(".jsonl") for name in names), names


def test_only_researchers_and_admins_see_the_page(demo):
    client = Client()
    assert client.get("/research/").status_code == 302
    client.force_login(rater("rater1"))
    response = client.get("/research/")
    assert response.status_code == 403 and "researchers and admins" in response.content.decode()
    client.force_login(rater("researcher"))
    page = client.get("/research/").content.decode()
    assert 'value="cxc"' in page and 'value="parquet"' in page and "manage.py evaluate --dataset demo" in page
