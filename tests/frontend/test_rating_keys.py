"""The rating page's keys, driven by keyboard in a real headless Chromium: Enter submits
only from the slider or the Submit button; Skip, Flag and the instructions keep their own
meaning under Enter and Space; a flag's notice leaves the slider's value, its place on
screen and the keyboard focus alone."""

import re

import pytest

from annotation.models import Flag, GoldRating, PairSkip, Rating, RatingSlot, SlotState
from tests.frontend.crowd_setup import sis_quiz
from tests.frontend.rating_setup import rater
from tests.support.browser import held_slot, open_kind, session_for, shown

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("demo_allowed")]


def focused(page) -> str:
    """The focused element, named by its id or (the slider's track) its class."""
    return page.evaluate(
        "document.activeElement.id || document.activeElement.className || document.activeElement.tagName"
    )


def wait_for_next_pair(page, slot):
    page.wait_for_selector(f"#pair[data-ready]:not([data-ready='{shown(slot)}'])")


def set_slider_by_keys(page):
    """Place the handle with the keyboard from the slider, which has the focus when a pair shows."""
    assert focused(page) == "scale-track"
    page.keyboard.press("ArrowRight")  # from unset: the middle
    page.keyboard.press("ArrowRight")  # one fine step on
    assert page.locator("#submit").is_enabled()


def tab_to(page, target: str, limit: int = 8):
    for _ in range(limit):
        page.keyboard.press("Tab")
        if focused(page) == target:
            return
    raise AssertionError(f"Tab never reached #{target} (stopped at {focused(page)})")


@pytest.mark.parametrize("key", ["Enter", "Space"])
def test_enter_or_space_on_skip_skips_and_stores_no_rating(page, live_server, demo, key):
    session_for(page, live_server)
    open_kind(page, live_server, "sts")
    slot = held_slot()
    set_slider_by_keys(page)
    tab_to(page, "skip")
    page.keyboard.press(key)
    wait_for_next_pair(page, slot)
    assert not Rating.objects.exists(), f"{key} on Skip stored a rating"
    assert PairSkip.objects.filter(pair=slot.pair, rater=rater()).exists()
    assert RatingSlot.objects.get(pk=slot.pk).state == SlotState.OPEN
    assert not Flag.objects.exists()
    # The next pair's slider has the focus again, unset.
    page.wait_for_function("document.activeElement.className === 'scale-track'")
    assert page.locator(".scale-track").get_attribute("aria-valuetext") == "Not set"


@pytest.mark.parametrize("key", ["Enter", "Space"])
def test_enter_or_space_on_flag_flags_and_stores_no_rating(page, live_server, demo, key):
    session_for(page, live_server)
    open_kind(page, live_server, "sts")
    slot = held_slot()
    set_slider_by_keys(page)
    tab_to(page, "flag-reason")
    page.keyboard.press("ArrowDown")  # the first reason, chosen without opening the list
    reason = page.locator("#flag-reason").input_value()
    assert reason
    tab_to(page, "flag")  # through the note, which shows once a reason is chosen
    page.keyboard.press(key)
    wait_for_next_pair(page, slot)
    assert not Rating.objects.exists(), f"{key} on Flag stored a rating"
    flag = Flag.objects.get()
    assert (flag.pair_id, flag.reason) == (slot.pair_id, reason)
    assert "reported" in page.locator("#notice").inner_text()
    page.wait_for_function("document.activeElement.className === 'scale-track'")


def test_enter_on_the_slider_after_arrow_keys_stores_the_rating(page, live_server, demo):
    session_for(page, live_server)
    open_kind(page, live_server, "sts")
    slot = held_slot()
    set_slider_by_keys(page)
    page.keyboard.press("Shift+ArrowLeft")  # a coarse step back
    page.keyboard.press("Enter")
    wait_for_next_pair(page, slot)
    stored = Rating.objects.get()
    assert stored.slot_id == slot.pk and stored.score == pytest.approx(2.5 + 0.05 - 0.5, abs=0.001)
    assert stored.adjustments == 3
    assert not PairSkip.objects.exists()


def test_enter_on_submit_stores_the_rating(page, live_server, demo):
    session_for(page, live_server)
    open_kind(page, live_server, "sis")
    slot = held_slot()
    page.keyboard.press("End")  # Home and End choose an end from the unset state
    tab_to(page, "submit")
    page.keyboard.press("Enter")
    wait_for_next_pair(page, slot)
    assert Rating.objects.get().score == pytest.approx(5.0)
    # Enter on the slider of the next pair does nothing while it is unset.
    next_slot = held_slot()
    page.wait_for_function("document.activeElement.className === 'scale-track'")
    page.keyboard.press("Enter")
    page.wait_for_timeout(300)
    assert Rating.objects.count() == 1 and held_slot() == next_slot


def test_enter_on_the_instructions_opens_them_and_stores_no_rating(page, live_server, demo):
    session_for(page, live_server)
    open_kind(page, live_server, "sts")
    instructions = page.locator("#instructions")
    was_open = instructions.evaluate("el => el.open")
    set_slider_by_keys(page)
    page.locator("#instructions summary").focus()
    page.keyboard.press("Enter")
    assert instructions.evaluate("el => el.open") is not was_open
    page.wait_for_timeout(300)
    assert not Rating.objects.exists()
    assert page.locator(".scale-track").get_attribute("aria-valuetext") != "Not set"


def choose_reason(page, reason: str):
    """Choose a flag reason with the arrow keys on the focused list."""
    assert focused(page) == "flag-reason"
    for _ in range(8):
        if page.locator("#flag-reason").input_value() == reason:
            return
        page.keyboard.press("ArrowDown")
    raise AssertionError(f"no flag reason {reason!r} in the list")


def test_a_note_missing_keeps_the_slider_its_value_and_place_and_the_focus_in_the_note(
    page, live_server, demo, screenshot_dir
):
    session_for(page, live_server)
    open_kind(page, live_server, "sts")
    slot = held_slot()
    track = page.locator(".scale-track")
    page.keyboard.press("End")
    before = track.bounding_box()
    tab_to(page, "flag-reason")
    choose_reason(page, "other")
    tab_to(page, "flag")  # past the empty note
    page.keyboard.press("Enter")
    notice = page.locator("#notice")
    notice.wait_for(state="visible")
    assert "needs one" in notice.inner_text()
    assert focused(page) == "flag-note"
    assert track.get_attribute("aria-valuetext") == "Equivalent"
    assert track.bounding_box() == before, "the notice moved the slider"
    page.screenshot(path=str(screenshot_dir / "keys-note-missing.png"))
    assert not Flag.objects.exists() and not Rating.objects.exists()

    page.keyboard.type("Both sentences are the same text.")
    page.keyboard.press("Enter")
    wait_for_next_pair(page, slot)
    assert Flag.objects.get().note == "Both sentences are the same text."
    assert not Rating.objects.exists()
    # The thanks stand under the controls, and the next pair's slider has the focus.
    assert "reported" in notice.inner_text()
    controls = page.locator(".controls").bounding_box()
    assert notice.bounding_box()["y"] >= controls["y"] + controls["height"]
    page.wait_for_function("document.activeElement.className === 'scale-track'")
    # Rating the next pair clears the thanks for the one before.
    page.keyboard.press("Home")
    page.keyboard.press("Enter")
    page.wait_for_function("document.getElementById('notice').hidden")
    assert Rating.objects.count() == 1


def test_a_failed_flag_keeps_the_slider_and_gives_the_focus_back_to_flag(page, live_server, demo):
    session_for(page, live_server)
    open_kind(page, live_server, "sis")
    slot = held_slot()
    track = page.locator(".scale-track")
    set_slider_by_keys(page)
    value = track.get_attribute("aria-valuetext")
    before = track.bounding_box()
    page.route("**/flag/", lambda route: route.abort("internetdisconnected"))
    tab_to(page, "flag-reason")
    choose_reason(page, "broken_image")
    tab_to(page, "flag")
    page.keyboard.press("Enter")
    page.wait_for_selector("#notice.error:not([hidden])")
    assert "No connection" in page.locator("#notice").inner_text()
    page.wait_for_function("document.activeElement.id === 'flag'")
    assert track.get_attribute("aria-valuetext") == value
    assert track.bounding_box() == before, "the notice moved the slider"
    assert not Flag.objects.exists() and not Rating.objects.exists()
    # Back online, the same key sends the report.
    page.unroute("**/flag/")
    page.keyboard.press("Enter")
    wait_for_next_pair(page, slot)
    assert Flag.objects.get().reason == "broken_image" and not Rating.objects.exists()


PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1280, "height": 800}


@pytest.fixture
def new_page(browser):
    """A page factory with its own context (viewport, touch); every context is closed after the test."""
    contexts = []

    def make(viewport, *, touch=False):
        context = browser.new_context(viewport=viewport, has_touch=touch, is_mobile=touch)
        contexts.append(context)
        return context.new_page()

    yield make
    for context in contexts:
        context.close()


def open_instructions(page) -> None:
    """Open the instructions as a rater does: on a phone they start collapsed."""
    if not page.locator("#instructions").evaluate("el => el.open"):
        page.locator("#instructions summary").click()


def visible_details(page) -> list[str]:
    return [detail.inner_text() for detail in page.locator(".scale-detail").all() if detail.is_visible()]


def test_sits_says_tap_on_a_touch_screen_and_a_tap_shows_a_description(new_page, live_server, demo, screenshot_dir):
    page = new_page(PHONE, touch=True)
    session_for(page, live_server)
    open_kind(page, live_server, "sits")
    instructions = page.locator("#instructions")
    # On a phone they start collapsed, even on the first visit (the pair comes first): a tap opens them.
    assert not instructions.evaluate("el => el.open")
    page.locator("#instructions summary").tap()
    assert instructions.evaluate("el => el.open")
    assert page.get_by_text("Tap a level name under the slider").is_visible()
    assert not page.get_by_text("Hover over a level name").is_visible()
    assert "hover" not in instructions.inner_text().lower()
    # A full-page capture resizes the page and drops the touch emulation for its length
    # (the capture then shows the mouse wording): capture the screen as the rater sees it.
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(screenshot_dir / "keys-sits-touch-390.png"))

    names = page.locator(".scale-name")
    names.nth(4).tap()
    assert visible_details(page) == [
        "The sentence describes the picture well; only unimportant details are off or missing."
    ]
    names.nth(1).tap()
    assert visible_details(page) == ["The sentence only shares the picture's general topic or theme."]
    page.screenshot(path=str(screenshot_dir / "keys-sits-touch-tapped-390.png"))
    # A tap on the track places the handle: the nearest level's description shows.
    box = page.locator(".scale-track").bounding_box()
    page.touchscreen.tap(box["x"] + box["width"] - 2, box["y"] + box["height"] / 2)
    page.wait_for_function("document.querySelector('.scale-track').getAttribute('aria-valuetext') === 'Equivalent'")
    assert visible_details(page) == [page.locator(".scale-detail").nth(5).inner_text()]


@pytest.mark.parametrize("viewport", [PHONE, LAPTOP], ids=["phone", "laptop"])
def test_with_a_mouse_sits_says_hover_and_a_click_pins_nothing(new_page, live_server, demo, screenshot_dir, viewport):
    page = new_page(viewport)
    session_for(page, live_server)
    open_kind(page, live_server, "sits")
    open_instructions(page)
    assert page.get_by_text("Hover over a level name under the slider").is_visible()
    assert not page.get_by_text("Tap a level name").is_visible()
    page.screenshot(path=str(screenshot_dir / f"keys-sits-{viewport['width']}.png"))
    page.locator(".scale-name").nth(4).click()
    assert len(visible_details(page)) == 1
    page.mouse.move(0, 0)
    assert visible_details(page) == []  # the slider is unset: no description without a hover


@pytest.mark.parametrize("viewport", [PHONE, LAPTOP], ids=["phone", "laptop"])
def test_sts_page_at_phone_and_laptop_size(new_page, live_server, demo, screenshot_dir, viewport):
    page = new_page(viewport, touch=viewport is PHONE)
    session_for(page, live_server)
    open_kind(page, live_server, "sts")
    open_instructions(page)
    assert "Skip a pair you cannot judge" in page.locator("#instructions").inner_text()
    page.keyboard.press("End")
    page.screenshot(path=str(screenshot_dir / f"keys-sts-{viewport['width']}.png"), full_page=True)


@pytest.mark.parametrize("viewport", [PHONE, LAPTOP], ids=["phone", "laptop"])
def test_quiz_by_keyboard_and_its_instructions_name_no_skip_or_flag(
    new_page, live_server, demo, screenshot_dir, viewport
):
    newcomer = rater("rater2")
    newcomer.qualifications.filter(kind="SIS").delete()
    sis_quiz(demo)
    page = new_page(viewport, touch=viewport is PHONE)
    session_for(page, live_server, "rater2")
    page.goto(f"{live_server.url}/rate/demo/sis/")
    page.wait_for_selector("#pair[data-ready]")
    instructions = page.locator("#instructions")
    assert "Before your ratings count" in page.locator(".quiz-intro").inner_text()
    assert not re.search(r"\b(skip|flag)", instructions.inner_text(), re.IGNORECASE), instructions.inner_text()
    assert page.locator("#skip, #flag, #flag-reason").count() == 0
    page.screenshot(path=str(screenshot_dir / f"keys-quiz-{viewport['width']}.png"), full_page=True)

    # Enter on the instructions opens or closes them and answers nothing.
    assert focused(page) == "scale-track"
    page.keyboard.press("End")
    was_open = instructions.evaluate("el => el.open")
    page.locator("#instructions summary").focus()
    page.keyboard.press("Enter")
    assert instructions.evaluate("el => el.open") is not was_open
    page.wait_for_timeout(300)
    assert not GoldRating.objects.exists()
    # Enter on the slider answers and the next question comes with the focus on its
    # slider; after the last, the result's button has the focus and the review shows.
    first = page.locator("#pair").get_attribute("data-ready")
    page.locator(".scale-track").focus()
    page.keyboard.press("Enter")
    page.wait_for_selector(f"#pair[data-ready]:not([data-ready='{first}'])")
    assert GoldRating.objects.filter(rater=newcomer, purpose="quiz").count() == 1
    assert focused(page) == "scale-track"
    assert page.locator("#quiz-review").is_hidden()
    page.keyboard.press("End")
    page.keyboard.press("Enter")
    page.locator("#quiz-review").wait_for(state="visible")
    assert GoldRating.objects.filter(rater=newcomer, purpose="quiz").count() == 2
    assert focused(page) in ("quiz-again", "quiz-proceed")
    page.screenshot(path=str(screenshot_dir / f"keys-quiz-review-{viewport['width']}.png"), full_page=True)
