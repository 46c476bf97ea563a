"""The rating page in a real headless Chromium against the live server (PostgreSQL in CI).

Screenshots of each task kind go to test-artifacts/screenshots/ (README: "Rater UI").
"""

import re

import pytest

from annotation.models import Qualification, Rating, RatingSlot, SlotState
from tests.frontend.rating_setup import rater
from tests.support.browser import assert_heading_outline, held_slot, open_kind, session_for, shown, track_point

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("demo_allowed")]


def log_in(page, live_server, username="rater1", password="rater-demo-pass", next_path="/rate/"):
    page.goto(f"{live_server.url}/login/?next={next_path}")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")


def test_log_in_read_instructions_drag_keyboard_submit_and_store(page, live_server, demo, screenshot_dir):
    log_in(page, live_server, next_path="/rate/demo/sts/")
    page.wait_for_selector("#pair[data-ready]")
    # Instructions are open on the first visit, with worked examples named by level.
    instructions = page.locator("#instructions")
    assert instructions.evaluate("el => el.open")
    assert "How close in meaning are the two sentences?" in instructions.inner_text()
    assert page.locator(".example").count() == 3
    assert "Mostly equivalent" in page.locator(".example").first.inner_text()
    assert_heading_outline(page)
    page.screenshot(path=str(screenshot_dir / "sts.png"), full_page=True)
    page.click("#instructions summary")
    assert not instructions.evaluate("el => el.open")

    # No default position: the handle is hidden and submit disabled until the rater sets it.
    assert page.locator("#scale").get_attribute("data-state") == "unset"
    assert not page.locator(".scale-handle").is_visible()
    assert page.locator("#submit").is_disabled()
    assert page.locator(".scale-track").get_attribute("aria-valuetext") == "Not set"

    slot = held_slot()
    page.mouse.move(*track_point(page, 0.70))
    page.mouse.down()
    page.mouse.move(*track_point(page, 0.65), steps=5)
    page.mouse.move(*track_point(page, 0.60), steps=5)
    page.mouse.up()
    assert page.locator(".scale-handle").is_visible()
    assert page.locator(".scale-track").get_attribute("aria-valuetext") == "Roughly equivalent"
    for _ in range(3):
        page.keyboard.press("ArrowLeft")  # fine steps: 3 x 0.05
    page.keyboard.press("Shift+ArrowRight")  # coarse step: 0.5
    assert page.locator("#submit").is_enabled()
    page.keyboard.press("Enter")
    page.wait_for_selector(f"#pair[data-ready]:not([data-ready='{shown(slot)}'])")

    stored = Rating.objects.get(slot=slot)
    assert stored.rater == rater()
    # 0.60 of the track is 3.0; minus three fine steps, plus one coarse step.
    assert stored.score == pytest.approx(3.0 - 0.15 + 0.5, abs=0.02)
    assert round(stored.score, 2) != round(stored.score)  # continuous, not snapped to a level
    assert stored.adjustments == 5  # one drag gesture (counted once) and four key presses
    assert stored.time_to_first_move_ms is not None
    assert 0 < stored.time_to_first_move_ms <= stored.time_on_item_ms
    assert RatingSlot.objects.get(pk=slot.pk).state == SlotState.DONE
    # The progress line counts the rating.
    page.wait_for_function("document.getElementById('progress').textContent.includes('Rated today: 1')")


def test_no_digit_of_the_value_is_visible(page, live_server, demo):
    session_for(page, live_server)
    open_kind(page, live_server, "sts")
    page.mouse.click(*track_point(page, 0.6943))
    scale_text = page.locator("#scale").evaluate(
        """root => [root.innerText, ...[root, ...root.querySelectorAll('*')].flatMap(
            el => [...el.attributes].map(a => a.value))].join(' ')"""
    )
    assert not re.search(r"\d", scale_text), f"a digit in the slider's text or attributes: {scale_text!r}"
    page_text = page.evaluate(
        """() => [document.body.innerText, ...[...document.querySelectorAll('*')].flatMap(
            el => [...el.attributes].map(a => a.value))].join(' ')"""
    )
    slot = held_slot()
    page.keyboard.press("Enter")
    page.wait_for_selector(f"#pair[data-ready]:not([data-ready='{shown(slot)}'])")
    value = Rating.objects.get(slot=slot).score
    assert value == pytest.approx(5 * 0.6943, abs=0.02)
    for text in {f"{value:.1f}", f"{value:.2f}", f"{value:.3f}", f"{value * 20:.0f}%", f"{value * 20:.1f}"}:
        assert text not in page_text, f"the value appears in the page as {text!r}"


def test_sis_and_sits_pages_and_sits_descriptions_on_hover_and_for_the_set_level(
    page, live_server, demo, screenshot_dir
):
    session_for(page, live_server)
    open_kind(page, live_server, "sis")
    assert page.locator("#pair img").count() == 2
    for img in page.locator("#pair img").all():
        assert img.evaluate("el => el.naturalWidth > 0 && el.getAttribute('width') !== null")
    page.screenshot(path=str(screenshot_dir / "sis.png"), full_page=True)

    open_kind(page, live_server, "sits")
    assert page.locator("#pair .caption").count() == 1 and page.locator("#pair img").count() == 1
    page.screenshot(path=str(screenshot_dir / "sits.png"), full_page=True)
    detail = page.locator(".scale-label").nth(5).locator(".scale-detail")
    assert not detail.is_visible()
    page.locator(".scale-label").nth(5).locator(".scale-name").hover()
    assert detail.is_visible()
    assert "almost perfect description" in detail.inner_text()
    page.mouse.move(0, 0)
    assert not detail.is_visible()
    # The slider tells screen readers the nearest level by name and describes it; the
    # description of that level shows once the handle is placed.
    page.locator(".scale-track").focus()
    page.keyboard.press("Home")
    assert page.locator(".scale-track").get_attribute("aria-valuetext") == "Unrelated"
    first = page.locator(".scale-label").nth(0).locator(".scale-detail")
    assert first.is_visible() and page.locator(".scale-track").get_attribute("aria-describedby") == first.get_attribute(
        "id"
    )
    page.keyboard.press("End")
    assert page.locator(".scale-track").get_attribute("aria-valuetext") == "Equivalent"
    assert detail.is_visible() and not first.is_visible()


def test_response_lost_after_the_server_stored_it_is_retried_once(page, live_server, demo):
    """The server stores the rating but the answer never arrives: the page keeps the
    rating, sends it again with the same idempotency key, and exactly one is stored."""
    session_for(page, live_server)
    open_kind(page, live_server, "sts")
    slot = held_slot()
    calls = []

    def lose_first_answer(route):
        calls.append(route.request.post_data_json["idempotency_key"])
        if len(calls) == 1:
            route.fetch()  # reaches the server, which stores the rating
            route.abort("connectionreset")  # ... but the page never hears back
        else:
            route.continue_()

    page.route("**/submit/", lose_first_answer)
    page.mouse.click(*track_point(page, 0.3))
    page.keyboard.press("Enter")
    page.wait_for_selector(f"#pair[data-ready]:not([data-ready='{shown(slot)}'])", timeout=15000)
    assert len(calls) >= 2 and len(set(calls)) == 1
    assert Rating.objects.filter(slot=slot).count() == 1
    assert Rating.objects.filter(rater=rater()).count() == 1
    assert page.evaluate("() => localStorage.getItem('cxc-outbox:rater1:demo')") == "[]"


def test_offline_during_submit_keeps_the_rating_until_back_online(page, live_server, demo):
    session_for(page, live_server)
    open_kind(page, live_server, "sts")
    slot = held_slot()
    page.mouse.click(*track_point(page, 0.82))
    page.context.set_offline(True)
    page.keyboard.press("Enter")
    page.wait_for_selector("#connection:not([hidden])")
    assert "Your rating is kept" in page.locator("#connection").inner_text()
    assert Rating.objects.filter(slot=slot).count() == 0
    pending = page.evaluate("() => JSON.parse(localStorage.getItem('cxc-outbox:rater1:demo'))")
    assert [p["slot_id"] for p in pending] == [shown(slot)]
    page.context.set_offline(False)
    page.wait_for_selector(f"#pair[data-ready]:not([data-ready='{shown(slot)}'])", timeout=20000)
    assert Rating.objects.filter(slot=slot).count() == 1
    assert Rating.objects.get(slot=slot).score == pytest.approx(0.82 * 5, abs=0.02)


def test_rating_kept_across_a_reload_is_sent_once(page, live_server, demo):
    """A submission still in the page's outbox when the tab is reloaded is sent first."""
    session_for(page, live_server)
    open_kind(page, live_server, "sts")
    slot = held_slot()
    page.route("**/submit/", lambda route: route.abort("internetdisconnected"))
    page.mouse.click(*track_point(page, 0.5))
    page.keyboard.press("Enter")
    page.wait_for_selector("#connection:not([hidden])")
    page.unroute("**/submit/")
    page.reload()
    page.wait_for_selector(f"#pair[data-ready]:not([data-ready='{shown(slot)}'])")
    assert Rating.objects.filter(slot=slot).count() == 1


def test_skip_and_flag(page, live_server, demo):
    session_for(page, live_server)
    open_kind(page, live_server, "sis")
    first = held_slot()
    page.click("#skip")
    page.wait_for_selector(f"#pair[data-ready]:not([data-ready='{shown(first)}'])")
    assert RatingSlot.objects.get(pk=first.pk).state == SlotState.OPEN
    second = held_slot()
    page.select_option("#flag-reason", "broken_image")
    page.click("#flag")
    page.wait_for_selector(f"#pair[data-ready]:not([data-ready='{shown(second)}'])")
    assert second.pair.flags.get().reason == "broken_image"
    assert "reported" in page.locator("#notice").inner_text()


def test_friendly_states(page, live_server, demo):
    # Not qualified for a kind.
    Qualification.objects.filter(rater=rater("rater2"), kind="SIS").delete()
    session_for(page, live_server, "rater2")
    page.goto(f"{live_server.url}/rate/demo/sis/")
    assert "Not qualified for this task" in page.locator("main").inner_text()
    # No work left: every STS pair already rated by this rater.
    page.context.clear_cookies()
    session_for(page, live_server, "rater3")
    from annotation.models import Pair

    Pair.objects.filter(kind="STS").delete()
    page.goto(f"{live_server.url}/rate/demo/sts/")
    page.wait_for_selector("#state:not([hidden])")
    assert "No work left" in page.locator("#state").inner_text()
    # Session expired while rating.
    page.goto(f"{live_server.url}/rate/demo/sits/")
    page.wait_for_selector("#pair[data-ready]")
    page.mouse.click(*track_point(page, 0.4))
    page.context.clear_cookies()
    page.keyboard.press("Enter")
    page.wait_for_selector("#state:not([hidden])")
    assert "Your session has ended" in page.locator("#state").inner_text()
    assert page.locator("#login-again").is_visible()
    # The rating waits in the page for the next visit after logging in, and is then stored once.
    pending = page.evaluate("() => JSON.parse(localStorage.getItem('cxc-outbox:rater3:demo'))")
    assert len(pending) == 1
    session_for(page, live_server, "rater3")
    page.goto(f"{live_server.url}/rate/demo/sits/")
    page.wait_for_function("localStorage.getItem('cxc-outbox:rater3:demo') === '[]'")
    assert Rating.objects.filter(rater=rater("rater3")).count() == 1
    # The page goes on to claim the next pair: let that request end before the test's
    # database is emptied (a claim still running deadlocks the TRUNCATE).
    page.wait_for_selector("#pair[data-ready]")


def test_lease_is_renewed_while_the_page_is_open(page, live_server, demo, settings):
    """With a 6 s lease the page sends a heartbeat every 5 s; after 9 s open, the slot is
    still held by the rater and its lease ends later than it first did."""
    settings.LEASE_TTL_SECONDS = 6
    session_for(page, live_server)
    open_kind(page, live_server, "sits")
    slot = held_slot()
    first_expiry = slot.lease_expires_at
    page.wait_for_timeout(9000)
    slot.refresh_from_db()
    assert slot.state == SlotState.LEASED and slot.rater == rater()
    assert slot.lease_expires_at > first_expiry
    page.mouse.click(*track_point(page, 0.9))
    page.keyboard.press("Enter")
    page.wait_for_selector(f"#pair[data-ready]:not([data-ready='{shown(slot)}'])")
    assert Rating.objects.filter(slot=slot, rater=rater()).count() == 1


def test_the_page_reads_its_progress_from_the_claim_and_submit_answers(page, live_server, demo, screenshot_dir):
    """No request of its own for the progress line while pairs come: the claim's and the
    submit's answers carry it; only an empty queue (204, no body) asks for it."""
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    session_for(page, live_server)
    open_kind(page, live_server, "sis")
    page.wait_for_function("document.getElementById('progress').textContent.includes('Rated today: 0')")
    left = int(re.search(r"Pairs left for you: (\d+)", page.locator("#progress").inner_text()).group(1))
    for rated in range(1, 4):
        slot = held_slot()
        page.mouse.click(*track_point(page, 0.3 * rated))
        page.keyboard.press("Enter")
        page.wait_for_selector(f"#pair[data-ready]:not([data-ready='{shown(slot)}'])")
        page.wait_for_function(
            "text => document.getElementById('progress').textContent === text",
            arg=f"Rated today: {rated} · Pairs left for you: {left - rated}",
        )
    page.screenshot(path=str(screenshot_dir / "sis-progress-after-three.png"), full_page=True)
    assert Rating.objects.filter(rater=rater()).count() == 3
    assert [url for url in requests if "/progress/" in url] == []
    assert len([url for url in requests if url.endswith("/claim/")]) == 1  # the rest came with the submits
