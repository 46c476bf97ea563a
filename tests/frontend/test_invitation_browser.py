"""An invited rater sets their password in a real headless Chromium and lands on their
tasks; the link then says it was used."""

import pytest

from annotation.people.onboarding import rater_list_read, raters_add

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("demo_allowed")]


def test_an_invited_rater_sets_a_password_and_starts(page, live_server, demo, tmp_path, screenshot_dir):
    path = tmp_path / "raters.csv"
    path.write_text("username,email,kinds\nnewcomer,newcomer@example.org,STS SIS\n")
    (invited,) = raters_add(rows=rater_list_read(path))
    page.goto(f"{live_server.url}/invite/{invited.token}/")
    assert "Welcome, newcomer" in page.locator("main").inner_text()
    page.screenshot(path=str(screenshot_dir / "invitation.png"), full_page=True)
    page.fill("#id_new_password1", "newcomer")
    page.fill("#id_new_password2", "newcomer")
    page.click("button[type=submit]")
    assert "similar to the username" in page.locator("main").inner_text()
    page.fill("#id_new_password1", "a-good-long-passphrase")
    page.fill("#id_new_password2", "a-good-long-passphrase")
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/rate/")
    assert "newcomer" in page.locator("header").inner_text()
    page.goto(f"{live_server.url}/invite/{invited.token}/")
    assert "used already" in page.locator("main").inner_text()
