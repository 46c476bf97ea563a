"""Browser fixtures: Playwright driving Debian's Chromium against pytest-django's live server.

Never downloads a browser. Without /usr/bin/chromium the browser tests skip, unless
REQUIRE_SERVICES=1 (CI), where they fail. Every page a test opens, through ``page`` or
through ``browser.new_context()``, is checked with axe-core (WCAG 2.1 A and AA, see
tests/support/accessibility.py); a violation fails the test at its teardown.
"""

import os
from pathlib import Path

import pytest

from annotation.models import TaskKind
from tests.conftest import REPO_DIR
from tests.factories import DatasetFactory, PairFactory, SamplingBatchFactory, SplitFactory, UserFactory
from tests.frontend.campaign_setup import rate_campaign
from tests.frontend.rating_setup import rater
from tests.support.accessibility import AccessibilityAudit
from tests.support.campaign_views import RATER_NAMES

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
SCREENSHOT_DIR = Path(os.environ.get("SCREENSHOT_DIR", REPO_DIR / "test-artifacts" / "screenshots"))
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]

# Playwright's sync API keeps an event loop on the test thread; the ORM calls the tests
# make around it are ordinary synchronous calls.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(scope="session")
def chromium():
    if not Path(CHROMIUM).exists():
        message = f"Chromium not found at {CHROMIUM} (apt-get install chromium)"
        if os.environ.get("REQUIRE_SERVICES") == "1":
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        yield browser
        browser.close()


class CheckedBrowser:
    """The session's Chromium as one test sees it: every context it makes is watched by
    the test's accessibility audit, and closed (after its pages are checked) at the end."""

    def __init__(self, chromium, audit: AccessibilityAudit):
        self._chromium = chromium
        self.audit = audit
        self.contexts = []

    def new_context(self, **options):
        context = self._chromium.new_context(**options)
        self.contexts.append(context)
        return self.audit.watch_context(context)

    def new_page(self, **options):
        return self.new_context(**options).new_page()

    def __getattr__(self, name):
        return getattr(self._chromium, name)


@pytest.fixture
def accessibility() -> AccessibilityAudit:
    """What axe-core found in the pages of this test (``browser`` fails the test on it)."""
    return AccessibilityAudit()


@pytest.fixture
def browser(chromium, accessibility):
    checked = CheckedBrowser(chromium, accessibility)
    with accessibility.gate():
        yield checked
        for context in checked.contexts:
            context.close()
    accessibility.assert_clean()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.screenshot = patient_screenshot(page)
    yield page
    context.close()


def patient_screenshot(page):
    """``page.screenshot`` that asks again, after the next frame is painted, when Chromium
    answers "Unable to capture screenshot": a busy compositor refuses a full-page capture
    now and then on a loaded machine. A second refusal is raised."""
    from playwright.sync_api import Error

    take = page.screenshot

    def screenshot(**options):
        try:
            return take(**options)
        except Error as refusal:
            if "Unable to capture screenshot" not in str(refusal):
                raise
            page.evaluate("() => new Promise(painted => requestAnimationFrame(() => painted()))")
            return take(**options)

    return screenshot


@pytest.fixture
def screenshot_dir() -> Path:
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    return SCREENSHOT_DIR


@pytest.fixture
def demo_allowed(settings):
    """load_demo's guard wants the embedded mode; the database is still the test database."""
    settings.RUN_MODE = "embedded"


@pytest.fixture
def demo(demo_allowed):
    """The demo dataset with six pairs of each kind queued."""
    from tests.frontend.rating_setup import demo_with_pairs

    return demo_with_pairs(per_kind=6)


@pytest.fixture
def campaign():
    """Dataset "coco": 4 STS, 3 SIS and 3 SITS pairs rated by five raters (two pairs
    partly), with a fresh snapshot."""
    batch = SamplingBatchFactory(split=SplitFactory(dataset=DatasetFactory(name="coco")))
    for kind, n in ((TaskKind.STS, 4), (TaskKind.SIS, 3), (TaskKind.SITS, 3)):
        for _ in range(n):
            PairFactory(batch=batch, kind=kind)
    raters = [UserFactory(username=name, roles=["rater"]) for name in RATER_NAMES]
    return rate_campaign(batch.dataset, raters)


@pytest.fixture
def rated(demo):
    """The demo's pairs rated by its five raters (most of them complete)."""
    rate_campaign(demo, [rater(f"rater{i}") for i in range(1, 6)])
    return demo


@pytest.fixture
def exports_dir(settings, tmp_path):
    settings.EXPORT_DIR = str(tmp_path / "exports")
    return Path(settings.EXPORT_DIR)
