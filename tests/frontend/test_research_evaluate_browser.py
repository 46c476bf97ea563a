"""An evaluation started from the researcher page in a real headless Chromium, with an
export that finishes while the page is open: the report as a researcher reads it (labels,
units, meanings, intervals, why a figure is missing) and its files, at 1280 and 390 px."""

import json
import re
from pathlib import Path

import numpy as np
import pytest

from annotation.catalog.services import embedding_space_import
from annotation.export import export_job_create
from annotation.jobs.tasks import run_export_job
from annotation.management.commands.load_demo import DEMO_DIR
from annotation.models import Job
from tests.support.browser import log_in, watch_errors

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("demo_allowed")]


RAW_KEYS = ("spearman_mean", "spearman_std", "queries_fully_judged", "precision_judged", "median_rank", "pr_auc")
NUMBER = re.compile(r"^-?[\d,]+(\.\d)?( %)?$")


def joint_demo_space(tmp_path) -> None:
    """A made-up dual encoder over the demo's items (16-d, one space for images and
    captions), so the image <-> text tasks run: the demo's own spaces are unimodal."""
    rng = np.random.default_rng(0)
    for modality, ids in (("image", "efficientnet_lite0"), ("caption", "minilm")):
        keys = (DEMO_DIR / "embeddings" / f"{ids}.ids.txt").read_text().split()
        (tmp_path / f"joint-{modality}.ids.txt").write_text("\n".join(keys) + "\n")
        np.save(tmp_path / f"joint-{modality}.npy", rng.standard_normal((len(keys), 16)).astype(np.float32))
        embedding_space_import(
            dataset_name="demo",
            space_name=f"joint-{modality}",
            modality=modality,
            vectors_path=tmp_path / f"joint-{modality}.npy",
            ids_path=tmp_path / f"joint-{modality}.ids.txt",
        )


def read_report(page, width: int) -> None:
    """The report as a researcher reads it: labelled figures with units and meanings, a
    value or "not available: <why>" in every cell, intervals, what was not computed."""
    report = page.locator("#evaluations article[data-status=succeeded] .report-body")
    text = report.inner_text().replace("\xa0", " ")
    for key in RAW_KEYS:
        assert key not in text, key
    cells = report.locator("table.report td[data-metric]")
    assert cells.count() > 20
    for cell in cells.all():
        # Its label and unit (a column's or a row's head, and the cell's own for a phone)
        # and, on hover, its meaning.
        assert re.fullmatch(r"[^_]+ \(.+\)", cell.get_attribute("data-label")), cell.get_attribute("data-label")
        assert cell.get_attribute("title")
        if cell.locator(".value").count():
            assert NUMBER.match(cell.locator(".value").inner_text()), cell.inner_text()
        else:
            assert cell.inner_text().startswith("not available: "), cell.inner_text()
    for head in report.locator("th[scope=col], th[scope=row]:has(.metric)").all():
        assert head.get_attribute("title") and head.locator(".metric").inner_text()
        assert head.locator(".unit").inner_text()
    # Nothing of a table is cut off: every table fits its card, no sideways scrolling.
    for table in report.locator("table.report").all():
        box = table.evaluate("t => [t.parentElement.scrollWidth, t.parentElement.clientWidth, t.offsetWidth]")
        assert box[0] <= box[1], (width, box)
    spearman = report.locator("table[data-section=correlation] td[data-metric=spearman_mean]").first
    assert "95 % CI" in spearman.inner_text().replace("\xa0", " ")
    assert "95 % CI" in report.locator("td[data-metric='R@1']").first.inner_text().replace("\xa0", " ")
    # COCO 5K and 1K cannot run on the demo's 12 images: said, with the reason.
    skipped = report.locator("ul.skipped").inner_text()
    assert (
        "COCO 5K retrieval: not available: COCO 5K needs the 5,000-image test split; this split has 12 images"
        in skipped
    )
    assert "COCO 1K retrieval: not available: COCO 1K needs at least 1000 images; the split has 12" in skipped
    assert "Image → text · original pairs, over the split's 12 images" in text
    assert "What the figures mean" in text
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def test_an_evaluation_reads_as_a_report_at_both_widths(
    page, live_server, rated, exports_dir, screenshot_dir, tmp_path
):
    errors = watch_errors(page)
    page.set_viewport_size({"width": 1280, "height": 800})
    joint_demo_space(tmp_path)
    export = export_job_create(dataset_name="demo", splits=None, formats=["cxc"], created_by=None)
    log_in(page, live_server, "researcher")
    page.goto(f"{live_server.url}/research/")
    page.wait_for_selector(f"#jobs tr[data-job='{export.id}'][data-status=pending]")
    assert page.locator(f"#evaluate-export option[value='{export.id}']").count() == 0
    # The export finishes while the page is open: the form offers it, no reload.
    run_export_job(export.id)
    page.wait_for_selector(f"#evaluate-export option[value='{export.id}']", state="attached", timeout=15_000)
    # The dataset's own spaces are offered: MiniLM captions and EfficientNet images are of
    # two dimensions, so no joint space; the made-up dual encoder's two are.
    page.select_option("#evaluate-image", "efficientnet_lite0")
    page.select_option("#evaluate-caption", "minilm")
    assert page.locator("#evaluate-joint").is_disabled()
    page.select_option("#evaluate-image", "joint-image")
    page.select_option("#evaluate-caption", "joint-caption")
    page.check("#evaluate-joint")
    page.fill("#evaluate-name", "demo joint")
    page.select_option("#evaluate-export", str(export.id))
    page.click("#evaluate-form button")
    page.wait_for_selector("#evaluations article[data-status=succeeded] table.report", timeout=60_000)
    job = Job.objects.get(kind=Job.Kind.EVALUATE)
    assert job.params["ratings_export"] == export.id and job.params["audited"] is True
    assert job.params["models"] == [
        {"name": "demo joint", "image_space": "joint-image", "caption_space": "joint-caption", "joint": True}
    ]
    # The first evaluation is number 1, whatever job id it took (the export took one).
    assert job.id > export.id
    title = page.locator("#evaluations article h3").inner_text()
    assert title.startswith("Evaluation 1 · demo · demo · demo joint"), title
    assert page.locator("#evaluations table.report td[data-metric]").count() == len(job.result["comparison"])
    for width, height in ((1280, 800), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.click("#evaluations details.legend summary")
        page.screenshot(path=str(screenshot_dir / f"research-evaluation-{width}.png"), full_page=True)
        page.click("#evaluations details.legend summary")
        read_report(page, width)
    with page.expect_download() as download:
        page.click("#evaluations a:text('report.json')")
    report = json.loads(Path(download.value.path()).read_text())
    assert list(report["models"]) == ["demo joint"] and report["comparison"] == job.result["comparison"]
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
