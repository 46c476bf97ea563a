"""The question a campaign link asks a visitor signed in as someone else, in a
real headless Chromium on a laptop and a phone screen: an admin who opens a crafted link
stays signed in until they press the page's button; Cancel leaves them as they were."""

import pytest
from django.contrib.auth import get_user_model

from annotation.models import Participant
from tests.factories import UserFactory
from tests.frontend.crowd_setup import crowd_link
from tests.support.browser import session_for

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("demo_allowed")]

SIZES = {"1280": {"width": 1280, "height": 800}, "390": {"width": 390, "height": 844}}
PLANTED = "9a1d2c3b4e5f60718293a4b5"  # a Prolific id the crafted link plants


def test_an_admin_is_asked_before_a_link_signs_them_out(page, live_server, demo, screenshot_dir):
    admin = UserFactory(username="ops-admin", roles=["admin"], is_staff=True)
    session_for(page, live_server, admin.username)
    link = crowd_link(demo, kinds=("SIS",), quota=3)
    url = f"{live_server.url}/join/{link.token}/?PROLIFIC_PID={PLANTED}"
    for name, size in SIZES.items():
        page.set_viewport_size(size)
        page.goto(url)
        question = page.locator("[data-testid=crowd-switch]")
        assert "You are signed in as ops-admin." in question.inner_text()
        assert "This signs you out of ops-admin." in question.inner_text()
        # Both choices fit the screen: nothing scrolls sideways, the buttons are in view.
        assert page.evaluate("document.documentElement.scrollWidth") <= size["width"]
        for choice in ("switch-confirm", "switch-cancel"):
            box = page.locator(f"[data-testid={choice}]").bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= size["width"], (name, choice, box)
        page.screenshot(path=str(screenshot_dir / f"crowd-switch-{name}.png"), full_page=True)
    assert not Participant.objects.filter(link=link).exists()

    page.click("[data-testid=switch-cancel]")
    page.wait_for_url(f"{live_server.url}/**")
    page.goto(f"{live_server.url}/admin/")
    assert "/admin/login/" not in page.url, "Cancel left the admin signed in"

    page.goto(url)
    page.click("[data-testid=switch-confirm]")
    page.wait_for_url("**/rate/demo/sis/")
    participant = Participant.objects.get(link=link, external_id=PLANTED)
    assert participant.user.username != admin.username
    page.goto(f"{live_server.url}/admin/")
    assert "/admin/login/" in page.url, "the switch signed the admin out"
    assert get_user_model().objects.filter(pk=admin.pk, is_active=True).exists()
