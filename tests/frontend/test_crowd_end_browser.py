"""A crowd participant's way to the end in headless Chromium, at 1280x800 and 390x844:
waiting while the pairs left are held by other raters (a countdown, no reload loop) until
a lease frees one; the screen-out end page after a failed quiz (its code, a copy button,
the way back to Prolific, and no timed redirect); the first pair on a phone's first screen;
and the admin's link form, which names the numbers of a quota the data cannot fill."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import CampaignLink, Participant, QueueCounter, RatingSlot, SlotState, TaskKind
from annotation.people.crowd.links import campaign_link_create
from annotation.rating.policy import slot_claim
from annotation.serving.pairs import pairs_retire
from tests.factories import UserFactory
from tests.frontend.crowd_setup import sis_quiz
from tests.support.browser import session_for
from tests.support.crowd_support import quiz_fail_every_attempt

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("demo_allowed")]

PID = "5f0c8e2a9b1d4c3e2f1a0b9c"
LAPTOP, PHONE = {"width": 1280, "height": 800}, {"width": 390, "height": 844}


def link_of(demo, **extra) -> CampaignLink:
    values = {"name": "Prolific pilot", "kinds": ["STS"], "quota": 3, "completion_code": "C0DE42", **extra}
    return campaign_link_create(dataset=demo, **values)


def fits(page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= page.viewport_size["width"], "no sideways scroll"


def test_a_participant_waits_while_others_hold_the_pairs_and_gets_one_when_a_lease_ends(
    page, live_server, demo, screenshot_dir
):
    # One STS pair left, each of its slots held by another rater.
    pairs = list(demo.pairs.filter(kind=TaskKind.STS).order_by("id"))
    pairs_retire(pair_ids=[pair.pk for pair in pairs[1:]])
    last = pairs[0]
    holders = [UserFactory(roles=["rater"], qualified_for=["STS"]) for _ in range(last.ratings_required)]
    for holder in holders:
        assert slot_claim(rater=holder, dataset=demo.name, kind="STS").pair_id == last.pk
    link = link_of(demo)

    page.set_viewport_size(LAPTOP)
    navigations, claims = [], []
    page.on("framenavigated", lambda frame: frame == page.main_frame and navigations.append(frame.url))
    page.on("request", lambda request: "/claim/" in request.url and claims.append(request.url))
    page.goto(f"{live_server.url}/join/{link.token}/?PROLIFIC_PID={PID}")
    page.wait_for_url("**/rate/demo/sts/")
    arrived = len(navigations)
    # Over seven seconds: no page load at all, and the claim asked once at first and
    # again after 3 s (the next after 6 s more), where a reload loop asked every second.
    page.wait_for_timeout(7000)
    assert len(navigations) == arrived, navigations
    assert 2 <= len(claims) <= 3, claims
    state = page.locator("#state")
    assert state.is_visible() and "Pairs are being rated by others" in state.inner_text()
    assert "being rated by other people just now" in state.inner_text()
    assert "Checking again in" in page.locator("#waiting").inner_text()
    assert page.locator("#pair .item").count() == 0
    fits(page)
    page.screenshot(path=str(screenshot_dir / "crowd-waiting-laptop.png"), full_page=True)
    # On a phone (opened afresh there: the instructions start collapsed), the same wait.
    page.set_viewport_size(PHONE)
    page.reload()
    page.wait_for_selector("#waiting:not([hidden])")
    fits(page)
    page.screenshot(path=str(screenshot_dir / "crowd-waiting-phone.png"), full_page=True)
    arrived = len(navigations)

    # A holder's lease ends (they walked away): the next check serves the pair here.
    RatingSlot.objects.filter(rater=holders[0], state=SlotState.LEASED).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    page.wait_for_selector("#pair[data-ready]:not([data-ready=''])", timeout=20_000)
    assert state.is_hidden() and page.locator("#waiting").is_hidden()
    assert len(navigations) == arrived, "the pair came without a page load"
    page.screenshot(path=str(screenshot_dir / "crowd-waiting-served-phone.png"), full_page=True)


def test_a_failed_quiz_ends_on_a_page_that_stays_with_the_screen_out_code(page, live_server, demo, screenshot_dir):
    sis_quiz(demo)
    link = link_of(demo, kinds=["SIS"], partial_code="P4RT1", screenout_code="SCR33N")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page.route(
        "https://app.prolific.com/**",
        lambda route: route.fulfill(
            body='<html lang="en"><title>Prolific</title>Prolific</html>', content_type="text/html"
        ),
    )
    page.set_viewport_size(LAPTOP)
    page.goto(f"{live_server.url}/join/{link.token}/?PROLIFIC_PID={PID}")
    page.wait_for_url("**/rate/demo/sis/")
    quiz_fail_every_attempt(Participant.objects.get(link=link).user, demo, "SIS")
    page.goto(f"{live_server.url}/join/{link.token}/next/")

    ended = page.locator("[data-testid=crowd-screened_out]")
    ended.wait_for()
    assert "You did not pass the qualification quiz" in ended.inner_text()
    assert page.locator("[data-testid=completion-code]").inner_text() == "SCR33N"
    assert "C0DE42" not in page.content() and "P4RT1" not in page.content()
    assert page.locator("meta[http-equiv=refresh]").count() == 0
    back = page.locator("[data-testid=return-link]")
    assert back.inner_text() == "Back to Prolific"
    assert back.get_attribute("href") == "https://app.prolific.com/submissions/complete?cc=SCR33N"
    page.click("[data-testid=copy-code]")
    page.wait_for_function("document.getElementById('copy-status').textContent !== ''")
    assert page.locator("#copy-status").inner_text() == "Copied. Paste it on the platform."
    assert page.evaluate("navigator.clipboard.readText()") == "SCR33N"
    fits(page)
    page.screenshot(path=str(screenshot_dir / "crowd-screened-out-laptop.png"), full_page=True)
    page.set_viewport_size(PHONE)
    fits(page)
    page.screenshot(path=str(screenshot_dir / "crowd-screened-out-phone.png"), full_page=True)
    # Longer than the end pages used to wait before sending the participant away.
    page.wait_for_timeout(9000)
    assert page.url.endswith("/done/") and ended.is_visible(), "the code stays until they leave"
    back.click()
    page.wait_for_url("https://app.prolific.com/submissions/complete?cc=SCR33N")
    assert Participant.objects.get(link=link).outcome == "screened_out"


def test_the_first_pair_is_on_the_first_screen_of_a_phone(page, live_server, demo, screenshot_dir):
    link = link_of(demo, kinds=["SIS"])
    page.set_viewport_size(PHONE)
    page.goto(f"{live_server.url}/join/{link.token}/?PROLIFIC_PID={PID}")
    page.wait_for_selector("#pair[data-ready]:not([data-ready=''])")
    box = page.locator("#pair").bounding_box()
    assert box["y"] >= 0 and box["y"] + box["height"] <= PHONE["height"], box
    summary = page.locator("#instructions summary")
    assert not page.locator("#instructions").evaluate("el => el.open"), "collapsed on a phone"
    assert "How similar are the scenes in the two pictures?" in summary.inner_text()
    fits(page)
    page.screenshot(path=str(screenshot_dir / "crowd-first-pair-phone.png"))
    summary.click()
    assert page.locator("#instructions").evaluate("el => el.open"), "a tap opens them"
    # On a laptop the instructions open beside the pair, which stays on the first screen.
    page.set_viewport_size(LAPTOP)
    page.reload()
    page.wait_for_selector("#pair[data-ready]:not([data-ready=''])")
    box = page.locator("#pair").bounding_box()
    assert box["y"] + box["height"] <= LAPTOP["height"], box
    page.screenshot(path=str(screenshot_dir / "crowd-first-pair-laptop.png"))


def test_the_link_form_names_the_numbers_of_a_quota_the_data_cannot_fill(page, live_server, demo, screenshot_dir):
    session_for(page, live_server, username="admin")
    # The demo serves no gold: a participant can rate the STS pairs still open, no more.
    most = QueueCounter.objects.get(dataset=demo, kind=TaskKind.STS).pairs_open
    quota = most + 30
    for name, size in (("laptop", LAPTOP), ("phone", PHONE)):
        page.set_viewport_size(size)
        page.goto(f"{live_server.url}/admin/annotation/campaignlink/add/")
        page.fill("input[name=name]", f"Pilot on the {name}")
        page.select_option("select[name=dataset]", label="demo")
        page.check("input[name=kinds][value=STS]")
        page.fill("input[name=quota]", str(quota))
        page.fill("input[name=completion_code]", "C0DE42")
        page.fill("input[name=screenout_code]", "C0DE42")
        page.click("input[name=_save]")
        page.locator(".errorlist").first.wait_for()
        quota_error = page.locator(".field-quota .errorlist").inner_text()
        assert f"a participant can rate at most {most} items" in quota_error, quota_error
        assert (
            f"(STS: {most}, gold items included)" in quota_error and f"fewer than the quota of {quota}" in quota_error
        )
        assert "or tick “Keep a quota over the pairs left” to save it anyway." in quota_error
        screenout_error = page.locator(".field-screenout_code .errorlist").inner_text()
        assert "the screen-out code must differ from the completion code" in screenout_error
        page.screenshot(path=str(screenshot_dir / f"admin-link-quota-over-pairs-{name}.png"), full_page=True)
        assert not CampaignLink.objects.exists()
        page.fill("input[name=screenout_code]", "SCR33N")
        page.check("input[name=keep_quota]")
        page.click("input[name=_save]")
        page.wait_for_selector(".messagelist")
        link = CampaignLink.objects.get()
        assert (link.quota, link.screenout_code) == (quota, "SCR33N")
        link.delete()
