"""A picture of known size holds its place before its file arrives, in headless Chromium:
with every picture download held back, the pair, the slider's track and Submit already lie
where they lie once the pictures have loaded. Otherwise the track moves under a rater's
click while pictures load on a slow connection (the click lands beside it, or on a
picture). The rating page at desktop and phone width, the quiz with its instructions open.
The review page's pictures are checked the same way in test_review_browser.py."""

import pytest

from annotation.models import Image
from annotation.serving.shapes import image_url_of
from tests.factories import UserFactory
from tests.frontend.crowd_setup import sis_quiz
from tests.support.browser import HeldPictures, boxes, session_for, watch_errors

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("demo_allowed")]
PICTURES = "#pair img"
FRAMES = "#pair .frame"
PLACES = [PICTURES, FRAMES, ".scale-track", "#submit"]


def assert_nothing_moves_when_the_pictures_arrive(
    page, url: str, *, places: list[str] = PLACES, least_height: int = 50
) -> None:
    held = HeldPictures(page)
    page.goto(url)
    # The pair is on the page (the rating page marks it ready only once its pictures are
    # decoded; a rater may reach for the slider before that).
    page.wait_for_function("s => !document.querySelector('#work').hidden && document.querySelector(s)", arg=PICTURES)
    # Measured before any picture of the pair has arrived.
    assert page.locator(PICTURES).count() > 0
    assert page.locator(PICTURES).evaluate_all("pictures => pictures.every(p => !p.complete)")
    before = boxes(page, places)
    frames = boxes(page, [FRAMES])
    assert len(frames) == page.locator(PICTURES).count(), frames
    assert all(box["height"] >= least_height for box in frames), frames
    held.release(PICTURES)
    assert boxes(page, places) == before


@pytest.mark.parametrize(("kind", "width", "height"), [("sis", 1280, 800), ("sis", 390, 844), ("sits", 1280, 800)])
def test_the_rating_page_keeps_its_track_in_place_while_pictures_load(browser, live_server, demo, kind, width, height):
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    errors = watch_errors(page)
    session_for(page, live_server)
    assert_nothing_moves_when_the_pictures_arrive(page, f"{live_server.url}/rate/demo/{kind}/")
    assert not errors, errors
    page.context.close()


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (390, 844)])
def test_the_quiz_keeps_its_track_in_place_while_pictures_load(browser, live_server, demo, width, height):
    sis_quiz(demo)
    UserFactory(username="newcomer", roles=["rater"])
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    errors = watch_errors(page)
    session_for(page, live_server, username="newcomer")
    assert_nothing_moves_when_the_pictures_arrive(page, f"{live_server.url}/rate/demo/sis/")
    assert page.locator("#instructions").get_attribute("open") is not None
    assert not errors, errors
    page.context.close()


def test_pictures_of_unknown_size_keep_the_track_in_place_in_a_4_by_3_frame(browser, live_server, demo, screenshot_dir):
    # A dataset served from a URL prefix records no sizes.
    assert Image.objects.filter(dataset=demo).update(width=None, height=None) > 0
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    errors = watch_errors(page)
    session_for(page, live_server)
    # The pictures themselves grow from nothing; their frames, the track and Submit stay.
    assert_nothing_moves_when_the_pictures_arrive(
        page, f"{live_server.url}/rate/demo/sis/", places=PLACES[1:], least_height=100
    )
    assert not page.locator(f"{PICTURES}.reserved").count()
    # Each frame is a 4:3 box (the shape most photographs have).
    for frame in boxes(page, [FRAMES]):
        assert frame["height"] == pytest.approx(frame["width"] * 3 / 4, abs=1), frame
    page.screenshot(path=str(screenshot_dir / "rating-pictures-of-unknown-size-1280.png"))
    assert not errors, errors
    page.context.close()


ITEMS_MODULE = "new URL('items.js', document.querySelector('script[type=module][src*=\"/rate/\"]').src)"


@pytest.mark.parametrize(("width", "height"), [(1920, 1080), (390, 844)])
def test_every_demo_picture_keeps_its_box_and_is_never_enlarged_or_squashed(
    browser, live_server, demo, screenshot_dir, width, height
):
    pictures = [
        {"type": "image", "url": image_url_of(demo, image), "width": image.width, "height": image.height}
        for image in Image.objects.filter(dataset=demo).order_by("pk")
    ]
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    errors = watch_errors(page)
    session_for(page, live_server)
    page.goto(f"{live_server.url}/rate/demo/sis/")
    page.wait_for_selector("#pair[data-ready]")
    # Instructions closed: the pair has the page's width, wider than some pictures' files.
    page.evaluate("document.querySelector('#instructions').open = false")
    held = HeldPictures(page)
    page.evaluate(
        f"""async pictures => {{
            const {{ itemNode }} = await import({ITEMS_MODULE});
            document.querySelector('#pair').replaceChildren(...pictures.map(itemNode));
        }}""",
        pictures,
    )
    assert page.locator(PICTURES).count() == len(pictures)
    before = boxes(page, PLACES)
    held.release(PICTURES)
    assert boxes(page, PLACES) == before
    drawn = page.locator(PICTURES).evaluate_all(
        "ps => ps.map(p => { const r = p.getBoundingClientRect(); "
        "return [r.width, r.height, p.naturalWidth, p.naturalHeight]; })"
    )
    for (shown_width, shown_height, file_width, file_height), picture in zip(drawn, pictures, strict=True):
        assert (file_width, file_height) == (picture["width"], picture["height"]), picture
        assert shown_width <= file_width + 0.5, (picture, shown_width)
        assert shown_width / shown_height == pytest.approx(file_width / file_height, rel=0.01), picture
    page.screenshot(path=str(screenshot_dir / f"rating-pictures-every-demo-picture-{width}.png"), full_page=True)
    # The review page reuses its <img>: the next picture of unknown size must not keep this one's box.
    left = page.evaluate(
        f"""async () => {{
            const {{ reserveBox }} = await import({ITEMS_MODULE});
            const img = document.querySelector('#pair img');
            reserveBox(img, {{}});
            return [img.className, img.getAttribute('width'), img.getAttribute('height'), img.getAttribute('style')];
        }}"""
    )
    assert left == ["", None, None, ""], left
    assert not errors, errors
    page.context.close()
