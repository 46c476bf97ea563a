"""Gold and quiz set up from pages, in Chromium at a phone's and a laptop's
size: a gold CSV uploaded with its preview, agreed pairs promoted, quiz questions chosen,
and a gold CSV uploaded through the API docs page's "Try it out"."""

import itertools

import pytest

from annotation.models import Caption, Dataset, GoldPair, Image, Pair, QualitySettings
from annotation.quality.gold.upload import gold_pairs_upload
from annotation.serving import rating_submit, slot_claim
from annotation.serving.pairs import pairs_retire
from tests.frontend.rating_setup import demo_with_pairs, rater
from tests.support.browser import pictures_loaded, session_for

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("demo_allowed")]

SIZES = {"phone": (390, 844), "laptop": (1280, 800)}


@pytest.fixture(params=sorted(SIZES))
def size(request, page):
    width, height = SIZES[request.param]
    page.set_viewport_size({"width": width, "height": height})
    return request.param


def fresh_sits_lines(dataset: Dataset, n: int) -> list[str]:
    """``n`` caption,image lines of SITS pairs the demo's queue does not hold."""
    queued = set(Pair.objects.filter(dataset=dataset, kind="SITS").values_list("caption_a_id", "image_a_id"))
    captions = Caption.objects.filter(dataset=dataset).order_by("-id")
    images = Image.objects.filter(dataset=dataset).order_by("id")
    fresh = [
        (c, i) for c, i in itertools.product(captions, images) if (c.id, i.id) not in queued and c.image_id != i.id
    ]
    return [f"{c.key},{i.key}" for c, i in fresh[:n]]


def fits(page) -> None:
    width = page.viewport_size["width"]
    assert page.evaluate("document.documentElement.scrollWidth") <= width, "no sideways scrolling"


def test_a_gold_csv_is_previewed_then_saved(page, live_server, tmp_path, screenshot_dir, size):
    dataset = demo_with_pairs(per_kind=2)
    lines = fresh_sits_lines(dataset, 4)
    session_for(page, live_server, username="admin")

    bad = tmp_path / "gold-with-problems.csv"
    bad.write_text(f"caption,image,gold_score,explanation\n{lines[0]},4.5,fine\n{lines[1]},7,too high\nx,y,1,\n")
    page.goto(f"{live_server.url}/admin/annotation/goldpair/")
    page.click("text=Upload gold CSV")
    page.select_option("select[name=dataset]", label="demo")
    page.set_input_files("input[name=file]", str(bad))
    page.click("input[type=submit][value=Preview]")
    page.wait_for_selector("#problems")
    page.screenshot(path=screenshot_dir / f"gold-upload-problems-{size}.png", full_page=True)
    problems = page.locator("#problems li").all_inner_texts()
    assert len(problems) == 2 and "line 3, column gold_score" in problems[0] and "line 4, column caption" in problems[1]
    assert page.locator("#save-form").count() == 0 and not GoldPair.objects.exists()
    fits(page)

    good = tmp_path / "gold.csv"
    scores = ["4.5,a man rides the horse shown", "0.5,nothing alike", "2,same place other people", "3.5,"]
    good.write_text(
        "caption,image,gold_score,explanation\n"
        + "".join(f"{line},{s}\n" for line, s in zip(lines, scores, strict=True))
    )
    page.set_input_files("input[name=file]", str(good))
    page.click("input[type=submit][value=Preview]")
    page.wait_for_selector("#save-form")
    pictures_loaded(page, "#preview img")
    page.screenshot(path=screenshot_dir / f"gold-upload-preview-{size}.png", full_page=True)
    rows = page.locator("#preview tbody tr")
    assert rows.count() == 4 and page.locator("#preview q").count() == 4, "each row shows its caption"
    assert "a man rides the horse shown" in rows.nth(0).inner_text()
    fits(page)
    assert not GoldPair.objects.exists()

    page.click("input[name=save]")
    page.wait_for_selector("#result_list")
    page.screenshot(path=screenshot_dir / f"gold-upload-saved-{size}.png", full_page=True)
    assert "Added 4 gold pair(s) to demo." in page.locator(".messagelist").inner_text()
    assert sorted(GoldPair.objects.values_list("gold_score", flat=True)) == [0.5, 2.0, 3.5, 4.5]


def test_agreed_pairs_are_promoted_from_their_page(page, live_server, screenshot_dir, size):
    dataset = demo_with_pairs(per_kind=1)
    # Three of the demo's SIS pairs (five ratings each) stay open; the five demo raters agree on them.
    sis = list(Pair.objects.filter(kind="SIS").order_by("pk").values_list("pk", flat=True))
    pairs_retire(pair_ids=sis[3:])
    for number in range(5):
        username = f"rater{number + 1}"
        for step in range(3):
            held = slot_claim(rater=rater(username), dataset="demo", kind="SIS")
            rating_submit(
                rater=rater(username), dataset="demo", slot_id=held.slot_id,
                score=2.0 + sis.index(held.pair_id) * 0.5 + number * 0.05,
                time_on_item_ms=4000, time_to_first_move_ms=500, adjustments=1, idempotency_key=f"{username}-{step}",
            )  # fmt: skip
    session_for(page, live_server, username="admin")
    page.goto(f"{live_server.url}/admin/annotation/goldpair/")
    page.click("text=Promote agreed pairs")
    page.select_option("select[name=dataset]", label="demo")
    page.select_option("select[name=kind]", value="SIS")
    page.click("input[value='Find candidates']")
    page.wait_for_selector("#candidates")
    pictures_loaded(page, "#candidates img")
    page.screenshot(path=screenshot_dir / f"gold-promote-{size}.png", full_page=True)
    assert "3 complete SIS pairs of demo" in page.locator("#summary").inner_text()
    fits(page)
    page.locator("#candidates input[name=pair]").nth(1).check()
    page.click("input[value='Promote the chosen pairs']")
    page.wait_for_selector(".messagelist")
    assert "Promoted 1 pair(s) to gold." in page.locator(".messagelist").inner_text()
    assert "2 complete SIS pairs of demo" in page.locator("#summary").inner_text()
    gold = GoldPair.objects.get()
    assert gold.source == "promoted" and gold.dataset == dataset


def test_quiz_questions_are_chosen_with_the_pool_size_shown(page, live_server, tmp_path, screenshot_dir, size):
    dataset = demo_with_pairs(per_kind=2)
    lines = fresh_sits_lines(dataset, 5)
    path = tmp_path / "gold.csv"
    path.write_text(
        "caption,image,gold_score,explanation\n" + "".join(f"{line},{n},reason {n}\n" for n, line in enumerate(lines))
    )
    gold_pairs_upload(dataset=dataset, path=path)
    QualitySettings.objects.create(dataset=dataset, quiz_length=1)
    session_for(page, live_server, username="admin")
    page.goto(f"{live_server.url}/admin/annotation/goldpair/")
    page.click("text=Quiz questions")
    page.select_option("select[name=dataset]", label="demo")
    page.select_option("select[name=kind]", value="SITS")
    page.click("input[value='Show gold pairs']")
    page.wait_for_selector("#gold")
    assert "too small" in page.locator("#pool").inner_text()
    assert "at least five times the quiz length" in page.locator("#content").inner_text()
    boxes = page.locator("#gold input[name=quiz]")
    for number in range(3):
        boxes.nth(number).check()
    page.click("input[value='Save the quiz questions']")
    page.wait_for_selector(".messagelist")
    pictures_loaded(page, "#gold img")
    page.screenshot(path=screenshot_dir / f"gold-quiz-{size}.png", full_page=True)
    assert "3 put in the quiz" in page.locator(".messagelist").inner_text()
    pool = page.locator("#pool").inner_text()
    assert "too small, the quiz cannot run: attempts of 1 need at least 5" in pool and "add 2 more" in pool
    assert GoldPair.objects.filter(in_quiz=True).count() == 3
    fits(page)
    page.locator("#gold input[name=quiz]").nth(3).check()
    page.locator("#gold input[name=quiz]").nth(4).check()
    page.click("input[value='Save the quiz questions']")
    page.wait_for_selector(".messagelist")
    assert "5 question(s) in the pool, 1 per attempt (which needs at least 5)." in page.locator("#pool").inner_text()
    assert "too-small" not in page.locator("#pool").get_attribute("class")
    # The dataset's quality settings: the quiz length's help and each pool against it.
    page.goto(f"{live_server.url}/admin/annotation/dataset/{dataset.pk}/change/")
    quality = page.locator(".field-quiz_length").first
    assert "needs at least five times this many gold pairs" in quality.inner_text()
    assert "SITS quiz: 5 question(s) in the pool, 1 per attempt" in page.locator(".field-quiz_pools").first.inner_text()
    quality.scroll_into_view_if_needed()
    page.screenshot(path=screenshot_dir / f"dataset-quiz-settings-{size}.png")


def test_the_api_docs_page_uploads_a_gold_csv(page, live_server, tmp_path, screenshot_dir, size):
    dataset = demo_with_pairs(per_kind=2)
    path = tmp_path / "gold.csv"
    path.write_text(
        "caption,image,gold_score\n" + "".join(f"{line},{n}\n" for n, line in enumerate(fresh_sits_lines(dataset, 2)))
    )
    session_for(page, live_server, username="admin")
    page.goto(f"{live_server.url}/api/docs/")
    operation = page.locator(".opblock-post", has=page.locator("[data-path='/api/datasets/{dataset}/gold/']"))
    operation.locator(".opblock-summary").click()
    operation.locator(".try-out__btn").click()
    operation.locator("input[placeholder='dataset']").fill("demo")
    chooser = operation.locator("input[type=file]")
    assert chooser.count() == 1, "the file is a file chooser, not a text box"
    chooser.set_input_files(str(path))
    operation.locator(".execute").click()
    status = operation.locator(".live-responses-table .response .response-col_status")
    status.wait_for()
    operation.screenshot(path=screenshot_dir / f"api-docs-gold-upload-{size}.png")
    assert status.inner_text().strip() == "201", operation.locator(".live-responses-table").inner_text()
    assert GoldPair.objects.filter(dataset=dataset).count() == 2
