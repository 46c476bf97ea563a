"""Pages other than the rating page, as a person sees them in headless Chromium.

Screenshots go to test-artifacts/screenshots/ (home-rater.png, home-every-role.png,
not-found.png, server-error.png, api-docs.png).
"""

import pytest

from annotation.models import TaskKind
from tests.factories import DatasetFactory, SplitFactory, UserFactory
from tests.support.browser import only_the_live_server
from tests.support.queue_support import queue_pairs

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def log_in(page, live_server, username: str) -> None:
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", "pw-for-tests")
    with page.expect_navigation():
        page.click("button[type=submit]")


def test_rater_logs_in_and_lands_on_their_work(page, live_server, screenshot_dir):
    split = SplitFactory(dataset=DatasetFactory(name="coco"))
    queue_pairs(split=split, kind=TaskKind.STS, n_pairs=4)
    queue_pairs(split=split, kind=TaskKind.SITS, n_pairs=1)
    UserFactory(username="rita", roles=["rater"], qualified_for=["STS", "SITS"])
    left_the_server = only_the_live_server(page, live_server)

    log_in(page, live_server, "rita")
    assert page.url == f"{live_server.url}/"
    page.screenshot(path=str(screenshot_dir / "home-rater.png"), full_page=True)
    work = page.locator("#rater .task-list li")
    assert work.locator("a").all_inner_texts() == ["Compare two sentences", "Compare a sentence with a picture"]
    assert work.locator(".dataset").all_inner_texts() == ["coco", "coco"]
    assert work.locator(".pairs-left").all_inner_texts() == ["4 pairs waiting", "1 pair waiting"]
    assert "SQLite" not in page.content() and "PostgreSQL" not in page.content()

    page.click("text=Go to your tasks")
    assert page.url == f"{live_server.url}/rate/"
    page.click("text=Compare two sentences")
    assert page.url == f"{live_server.url}/rate/coco/sts/"
    assert left_the_server == []

    page.goto(f"{live_server.url}/")
    with page.expect_navigation():
        page.click("text=Log out")
    assert page.url == f"{live_server.url}/login/"
    assert page.locator("h1").inner_text() == "Log in"


def test_unknown_dataset_is_a_friendly_page(page, live_server, screenshot_dir):
    UserFactory(username="rita", roles=["rater"], qualified_for=["STS"])
    log_in(page, live_server, "rita")
    response = page.goto(f"{live_server.url}/rate/no-such-dataset/sts/")
    assert response.status == 404
    assert page.locator(".empty-state h2").inner_text() == "No such dataset"
    page.goto(f"{live_server.url}/no/such/page/")
    page.screenshot(path=str(screenshot_dir / "not-found.png"), full_page=True)
    assert page.locator("h1").inner_text() == "Page not found"
    assert page.locator(".topbar .brand").is_visible(), "the project's look"


def test_api_docs_render_offline_from_assets_served_by_the_app(page, live_server, screenshot_dir):
    left_the_server = only_the_live_server(page, live_server)
    page.goto(f"{live_server.url}/api/docs/")
    page.wait_for_selector(".swagger-ui .opblock", timeout=20_000)
    page.screenshot(path=str(screenshot_dir / "api-docs.png"))
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert "/api/datasets/" in paths and "/api/exports/" in paths
    assert page.locator(".swagger-ui .info .title").inner_text().startswith("CxC annotate API")
    assert left_the_server == []


def test_user_with_every_role_sees_each_section(page, live_server, screenshot_dir):
    DatasetFactory(name="coco")
    UserFactory(username="ada", roles=["rater", "researcher", "admin"], qualified_for=["SIS"], is_staff=True)
    log_in(page, live_server, "ada")
    page.screenshot(path=str(screenshot_dir / "home-every-role.png"), full_page=True)
    assert page.locator("section h2").all_inner_texts() == [
        "Your rating work",
        "Research and the API",
        "Administration",
    ]
    page.click("text=Open the admin")
    assert page.url == f"{live_server.url}/admin/"


def test_server_error_page_shows_no_traceback(page, live_server, screenshot_dir, monkeypatch):
    UserFactory(username="nemo")
    log_in(page, live_server, "nemo")

    def explode(*args, **kwargs):
        raise RuntimeError("secret-internal-detail")

    monkeypatch.setattr("frontend.views.home_sections", explode)
    response = page.goto(f"{live_server.url}/")
    assert response.status == 500
    page.screenshot(path=str(screenshot_dir / "server-error.png"), full_page=True)
    assert page.locator("h1").inner_text() == "Something went wrong"
    assert "secret-internal-detail" not in page.content() and "Traceback" not in page.content()
