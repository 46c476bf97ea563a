"""Gold pairs in the real rating page (headless Chromium): a rater meets them among the
ordinary pairs, and nothing in the page or in the API answers tells them apart."""

import itertools
import re

import pytest

from annotation.models import Dataset, GoldLease, GoldRating, Image, Pair, QualitySettings, Rating
from annotation.quality.gold.upload import gold_pairs_upload
from tests.support.browser import session_for, track_point
from tests.support.rating_support import db_id

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("demo_allowed")]

ITEMS = 8


def add_gold(tmp_path) -> Dataset:
    dataset = Dataset.objects.get(name="demo")
    images = list(Image.objects.filter(dataset=dataset).order_by("-id"))
    # Gold pairs must not be queued pairs (the upload refuses those): three image pairs
    # the demo's queue does not hold.
    queued = {frozenset(ids) for ids in Pair.objects.filter(dataset=dataset).values_list("image_a_id", "image_b_id")}
    fresh = [(a, b) for a, b in itertools.combinations(images, 2) if frozenset((a.id, b.id)) not in queued][:3]
    lines = ["image1,image2,gold_score,explanation"]
    lines += [f"{a.key},{b.key},{3.0 + n * 0.5},reference {n}" for n, (a, b) in enumerate(fresh)]
    path = tmp_path / "gold.csv"
    path.write_text("\n".join(lines) + "\n")
    gold_pairs_upload(dataset=dataset, path=path)
    # Gold on every claim while the rater has gold left: gold is drawn at random, and at one
    # in two a walk could meet none (the walk must meet both kinds).
    QualitySettings.objects.create(dataset=dataset, gold_one_in=1)
    return dataset


def structure(page) -> str:
    """The rendered pair with what differs between any two pairs (texts, image sources
    and alt texts, sizes and aspect ratios, the slot id) blanked: the page's shape as the rater sees it."""
    html = page.locator("#pair").evaluate("el => el.outerHTML")
    html = re.sub(r'(src|alt|width|height|style|data-ready)="[^"]*"', r'\1=""', html)
    return re.sub(r">[^<]+<", "><", html)


def test_gold_pairs_look_and_answer_like_any_other(page, live_server, demo, tmp_path, screenshot_dir):
    add_gold(tmp_path)
    answers: dict[str, list[tuple[int, frozenset]]] = {"claim": [], "submit": []}

    def note(response):
        for name in answers:
            if response.url.endswith(f"/{name}/") and response.request.method == "POST" and response.ok:
                body = response.json()
                answers[name].append((body.get("slot_id"), frozenset(body), frozenset(body.get("next") or {})))

    page.on("response", note)
    session_for(page, live_server)
    page.goto(f"{live_server.url}/rate/demo/sis/")
    shapes: dict[bool, set[str]] = {True: set(), False: set()}
    for number in range(ITEMS):
        page.wait_for_selector("#pair[data-ready]")
        slot_id = page.locator("#pair").get_attribute("data-ready")
        gold = GoldLease.objects.filter(pk=db_id("slot", slot_id)).exists()
        shapes[gold].add(structure(page))
        page.screenshot(path=str(screenshot_dir / f"gold-walk-{number}-{'gold' if gold else 'pair'}.png"))
        page.mouse.click(*track_point(page, 0.4 + 0.05 * number))
        page.keyboard.press("Enter")
        page.wait_for_selector(f"#pair[data-ready]:not([data-ready='{slot_id}']), #state:not([hidden])")
    assert shapes[True] and shapes[False], "the walk met both gold and ordinary pairs"
    assert shapes[True] == shapes[False], "gold pairs are rendered exactly like ordinary ones"
    assert GoldRating.objects.count() + Rating.objects.count() == ITEMS
    assert GoldRating.objects.count() >= 1 and Rating.objects.count() >= 1
    submit_keys = {keys for _, keys, _ in answers["submit"]}
    next_keys = {keys for _, _, keys in answers["submit"] if keys}
    assert len(submit_keys) == 1, f"every submit answer has the same fields: {submit_keys}"
    assert len(next_keys) == 1, f"every next pair has the same fields: {next_keys}"
