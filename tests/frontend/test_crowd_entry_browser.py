"""In headless Chromium, on a phone (390x844) and a laptop (1280x800): a made-up
participant id and a burst of new accounts from one address get pages saying why, with
nobody signed in; the admin's link form names a bad id pattern and a kind whose quiz
cannot run. Screenshots go to test-artifacts/screenshots/."""

import pytest
from django.contrib.auth import get_user_model

from annotation.models import CampaignLink, Participant
from tests.frontend.crowd_setup import crowd_link
from tests.support.browser import session_for

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("demo_allowed")]

VIEWPORTS = {"phone": (390, 844), "laptop": (1280, 800)}


@pytest.fixture(params=sorted(VIEWPORTS))
def sized_page(request, browser, screenshot_dir):
    width, height = VIEWPORTS[request.param]
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.shot = lambda name: page.screenshot(path=str(screenshot_dir / f"{name}-{request.param}.png"), full_page=True)
    yield page
    context.close()


def fits(page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= page.viewport_size["width"], "no sideways scroll"


def test_a_made_up_id_and_a_burst_of_new_accounts_get_pages_saying_why(sized_page, live_server, demo, settings):
    page = sized_page
    settings.CROWD_NEW_PARTICIPANTS_PER_ADDRESS = 1
    link = crowd_link(demo, kinds=("SIS",), quota=3)
    users = get_user_model().objects.count()

    response = page.goto(f"{live_server.url}/join/{link.token}/?PROLIFIC_PID=throwaway-a")
    assert response.status == 400
    refused = page.locator("[data-testid=crowd-refused]")
    assert "is not a Prolific id (24 hexadecimal characters: 0-9, a-f)" in refused.inner_text()
    assert "Open the study from its page on the platform" in refused.inner_text()
    fits(page)
    page.shot("crowd-bad-id")
    assert get_user_model().objects.count() == users

    assert page.goto(f"{live_server.url}/join/{link.token}/?PROLIFIC_PID=5f0c8e2a9b1d4c3e2f1a0b9c").status == 200
    page.wait_for_url("**/rate/demo/sis/")
    page.context.clear_cookies()
    response = page.goto(f"{live_server.url}/join/{link.token}/?PROLIFIC_PID=6a1d9f3b0c2e5d4f3a2b1c0d")
    assert response.status == 429 and response.headers["retry-after"].isdigit()
    refused = page.locator("[data-testid=crowd-refused]")
    assert "Too many new participants joined from your network in the last 24 hours" in refused.inner_text()
    assert "Please try again in about 24 hours" in refused.inner_text()
    fits(page)
    page.shot("crowd-too-many-new")
    assert Participant.objects.count() == 1
    page.goto(f"{live_server.url}/rate/demo/sis/")
    page.wait_for_url("**/login/?next=/rate/demo/sis/")


def test_the_admin_link_form_names_a_bad_id_pattern_and_a_quiz_that_cannot_run(sized_page, live_server, demo):
    from tests.frontend.crowd_setup import sis_quiz

    page = sized_page
    sis_quiz(demo)
    demo.quality_settings.quiz_length = 3  # ten questions: too few for attempts of three
    demo.quality_settings.save(update_fields=["quiz_length"])
    session_for(page, live_server, username="admin")
    page.goto(f"{live_server.url}/admin/annotation/campaignlink/add/")
    page.fill("input[name=name]", "Pilot with our own ids")
    page.select_option("select[name=dataset]", label="demo")
    page.check("input[name=kinds][value=SIS]")
    page.fill("input[name=quota]", "5")
    page.fill("input[name=completion_code]", "C0DE42")
    page.fill("input[name=id_param]", "participant")
    page.fill("input[name=id_pattern]", "(lab-\\d+)?")
    help_text = page.locator(".field-id_pattern").inner_text()
    assert "A link with another id parameter needs one" in help_text
    page.click("input[name=_save]")
    errors = page.locator(".errornote, .errorlist")
    errors.first.wait_for()
    assert "the id pattern must not match an empty id" in page.locator(".field-id_pattern .errorlist").inner_text()
    page.shot("admin-link-bad-pattern")
    page.fill("input[name=id_pattern]", "lab-\\d{4}")
    page.click("input[name=_save]")
    page.locator(".errorlist").first.wait_for()
    text = page.locator(".field-kinds .errorlist").inner_text()
    assert "participants of this link could never rate SIS" in text and "attempts of 3 need at least 15" in text
    page.shot("admin-link-refused")
    assert not CampaignLink.objects.exists()
    demo.quality_settings.quiz_length = 2
    demo.quality_settings.save(update_fields=["quiz_length"])
    page.click("input[name=_save]")
    page.wait_for_selector(".messagelist")
    link = CampaignLink.objects.get()
    assert (link.id_param, link.id_pattern) == ("participant", "lab-\\d{4}")
