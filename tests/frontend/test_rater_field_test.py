"""Rating-page points from the field test, in headless Chromium against the live server:
the flag note, the level mark reset per pair, per-kind progress, and the layout at a
390 px phone and a 1280x800 laptop (screenshots in test-artifacts/screenshots/)."""

import pytest

from annotation.models import Flag, Pair, QueueCounter, Rating
from annotation.rating.progress import rater_progress
from tests.frontend.rating_setup import rater
from tests.support.browser import held_slot, open_kind, session_for, shown, track_point

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("demo_allowed")]

PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1280, "height": 800}


@pytest.fixture
def sized_page(browser):
    """A page factory at a given viewport; every context is closed after the test."""
    contexts = []

    def make(viewport):
        context = browser.new_context(viewport=viewport)
        contexts.append(context)
        return context.new_page()

    yield make
    for context in contexts:
        context.close()


def overlap(a: dict, b: dict) -> bool:
    """Whether two bounding boxes ({x, y, width, height}) share any area."""
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and b["y"] < a["y"] + a["height"]
    )


def inside_viewport(box: dict, viewport: dict) -> bool:
    return (
        box["x"] >= 0
        and box["y"] >= 0
        and box["x"] + box["width"] <= viewport["width"]
        and box["y"] + box["height"] <= viewport["height"]
    )


def wait_for_next_pair(page, slot):
    page.wait_for_selector(f"#pair[data-ready]:not([data-ready='{shown(slot)}'])")


def test_flag_with_reason_other_asks_for_a_note_and_sends_it(page, live_server, demo):
    session_for(page, live_server)
    open_kind(page, live_server, "sis")
    slot = held_slot()
    assert not page.locator("#flag-note").is_visible()
    page.select_option("#flag-reason", "other")
    assert page.locator("#flag-note").is_visible()
    page.click("#flag")
    notice = page.locator("#notice")
    assert notice.is_visible() and "needs one" in notice.inner_text()
    assert page.locator("#flag-note").get_attribute("aria-invalid") == "true"
    assert page.evaluate("document.activeElement.id") == "flag-note"
    assert not Flag.objects.exists()

    page.fill("#flag-note", "  The picture is upside down.  ")
    page.keyboard.press("Enter")  # Enter in the note sends the report, not a rating
    wait_for_next_pair(page, slot)
    flag = Flag.objects.get()
    assert (flag.pair_id, flag.reason, flag.note) == (slot.pair_id, "other", "The picture is upside down.")
    assert not Rating.objects.exists()
    assert "reported" in notice.inner_text()
    # The form is empty again for the next pair.
    assert page.locator("#flag-reason").input_value() == ""
    assert not page.locator("#flag-note").is_visible()


def test_no_level_is_marked_when_a_new_pair_comes(page, live_server, demo):
    session_for(page, live_server)
    open_kind(page, live_server, "sts")
    nearest = page.locator(".scale-label.nearest")
    for action in ("submit", "skip", "flag"):
        slot = held_slot()
        page.mouse.click(*track_point(page, 0.95))
        assert nearest.count() == 1 and nearest.get_attribute("data-level") == "Equivalent"
        if action == "submit":
            page.click("#submit")
        elif action == "skip":
            page.click("#skip")
        else:
            page.select_option("#flag-reason", "unreadable_caption")
            page.click("#flag")
        wait_for_next_pair(page, slot)
        assert nearest.count() == 0, f"a level is still marked after {action}"
        assert page.locator(".scale-track").get_attribute("aria-valuetext") == "Not set"
        assert page.locator(".scale-track").get_attribute("aria-describedby") is None


def test_pairs_left_counts_this_kind_and_no_work_links_the_kinds_with_work(page, live_server, demo):
    progress = rater_progress(rater=rater(), dataset="demo")
    by_kind = progress.pairs_left_by_kind
    # The demo's raters may review failures too (REV), none queued yet.
    assert set(by_kind) == {"STS", "SIS", "SITS", "REV"} and sum(by_kind.values()) == progress.pairs_left
    assert by_kind["REV"] == 0
    assert len(set(by_kind.values())) > 1, "the demo should have different counts per kind for this test"
    session_for(page, live_server)
    for kind in ("sts", "sis"):
        open_kind(page, live_server, kind)
        # The held pair still counts: it is left for this rater until rated.
        page.wait_for_function(
            "text => document.getElementById('progress').textContent.endsWith(text)",
            arg=f"Pairs left for you: {by_kind[kind.upper()]}",
        )
    Pair.objects.filter(kind="SIS").delete()
    page.goto(f"{live_server.url}/rate/demo/sis/")
    page.wait_for_selector("#other-work:not([hidden])")
    assert "No work left" in page.locator("#state").inner_text()
    assert page.locator("#waiting").is_hidden(), "a rater has no study to wait in"
    links = page.locator("#other-work a")
    assert [(a.inner_text(), a.get_attribute("href")) for a in links.all()] == [
        ("Compare a sentence with a picture", "/rate/demo/sits/"),
        ("Compare two sentences", "/rate/demo/sts/"),
    ]
    # Deleting pairs bypasses the services that keep the counters: empty them by hand.
    Pair.objects.filter(kind="STS").delete()
    QueueCounter.objects.filter(kind="STS").update(pairs_open=0)
    page.reload()
    page.wait_for_selector("#state:not([hidden])")
    page.wait_for_function("document.querySelectorAll('#other-work a').length === 1")
    links.first.click()
    page.wait_for_selector("#pair[data-ready]")
    assert page.url.endswith("/rate/demo/sits/")


@pytest.mark.parametrize("viewport", [PHONE, LAPTOP], ids=["phone", "laptop"])
@pytest.mark.parametrize("kind", ["sts", "sis", "sits"])
def test_level_names_do_not_overlap(sized_page, live_server, demo, screenshot_dir, viewport, kind):
    page = sized_page(viewport)
    session_for(page, live_server)
    for instructions_open in (True, False):  # open instructions narrow the scale on a laptop
        open_kind(page, live_server, kind)
        page.evaluate(f"document.getElementById('instructions').open = {str(instructions_open).lower()}")
        names = [name.bounding_box() for name in page.locator(".scale-name").all()]
        track = page.locator(".scale-track").bounding_box()
        for i, a in enumerate(names):
            assert a["x"] >= track["x"] - 1 and a["x"] + a["width"] <= track["x"] + track["width"] + 1
            for b in names[i + 1 :]:
                assert not overlap(a, b), f"level names overlap at {viewport['width']} px: {a} {b}"
        state = "open" if instructions_open else "closed"
        page.locator("#scale").screenshot(path=str(screenshot_dir / f"scale-{kind}-{viewport['width']}-{state}.png"))


@pytest.mark.parametrize("viewport", [PHONE, LAPTOP], ids=["phone", "laptop"])
@pytest.mark.parametrize("kind", ["sts", "sits"])
def test_one_description_at_a_time_and_clear_of_the_buttons(
    sized_page, live_server, demo, screenshot_dir, viewport, kind
):
    page = sized_page(viewport)
    session_for(page, live_server)
    open_kind(page, live_server, kind)
    track = page.locator(".scale-track")
    track.focus()
    page.keyboard.press("End")  # the keyboard puts the handle at the top level
    assert track.get_attribute("aria-valuetext") == "Equivalent"
    details = page.locator(".scale-detail")
    page.locator(".scale-name").nth(2).hover()
    shown = [d for d in details.all() if d.is_visible()]
    if kind == "sits" or viewport is PHONE:
        assert len(shown) == 1, "a hovered and a focused description show at once"
        assert "share some details" in shown[0].inner_text() or "some of its details" in shown[0].inner_text()
    skip = page.locator("#skip").bounding_box()
    submit = page.locator("#submit").bounding_box()
    for detail in shown:
        assert not overlap(detail.bounding_box(), skip) and not overlap(detail.bounding_box(), submit)
    page.screenshot(path=str(screenshot_dir / f"hover-{kind}-{viewport['width']}.png"))
    page.mouse.move(0, 0)
    shown = [d for d in details.all() if d.is_visible()]
    if kind == "sits" or viewport is PHONE:
        # Without a hover, the description of the level the handle is nearest to.
        assert [d.get_attribute("id") for d in shown] == [track.get_attribute("aria-describedby")]
        assert "perfect" in shown[0].inner_text() or "mean the same" in shown[0].inner_text()


@pytest.mark.parametrize("viewport", [PHONE, LAPTOP], ids=["phone", "laptop"])
def test_tab_goes_from_the_slider_to_submit(sized_page, live_server, demo, viewport):
    page = sized_page(viewport)
    session_for(page, live_server)
    open_kind(page, live_server, "sits")
    assert page.evaluate("document.activeElement.className") == "scale-track"
    page.keyboard.press("Tab")  # submit is disabled until the slider is set
    assert page.evaluate("document.activeElement.id") == "skip"
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "submit"
    # The level names are still in the page for screen readers, just not Tab stops.
    assert page.locator(".scale-labels li").count() == 6
    assert page.evaluate("[...document.querySelectorAll('.scale-labels *')].every(el => el.tabIndex < 0)")


@pytest.mark.parametrize("kind", ["sts", "sis", "sits"])
def test_submit_in_view_with_instructions_open_on_a_laptop(sized_page, live_server, demo, screenshot_dir, kind):
    page = sized_page(LAPTOP)
    session_for(page, live_server)
    open_kind(page, live_server, kind)  # first visit: the instructions are open
    assert page.locator("#instructions").evaluate("el => el.open")
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(screenshot_dir / f"laptop-instructions-{kind}.png"))
    assert inside_viewport(page.locator("#submit").bounding_box(), LAPTOP)
    assert inside_viewport(page.locator("#instructions summary").bounding_box(), LAPTOP)
    assert inside_viewport(page.locator(".scale-track").bounding_box(), LAPTOP)
    # The instructions scroll within their own column down to the last worked example.
    page.locator(".example").last.scroll_into_view_if_needed()
    assert inside_viewport(page.locator(".example").last.bounding_box(), LAPTOP)
    assert inside_viewport(page.locator("#submit").bounding_box(), LAPTOP)
