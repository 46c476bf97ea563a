"""axe-core in every page the Chromium tests open: WCAG 2.1 A and AA, 0 violations.

axe-core is the copy pinned in requirements-dev.txt (the ``axe_playwright_python`` package
bundles it as ``axe.min.js``), evaluated into the page from disk: nothing is fetched.

An ``AccessibilityAudit`` watches browser contexts. It checks a page's document

- once it has loaded: its navigation is noted, and the test's next Playwright call waits
  until the document has loaded and been checked (``gate``);
- before each screenshot, at the viewport the screenshot is taken at;
- before the page or its context is closed, and at the end of the test for every page
  still open.

(A check cannot wait for the moment a document is left: Chromium answers no script in a
document while the navigation away from it is held by a route.)

Only HTML documents are checked (a JSON answer or a CSV file shown by the browser is not a
page of ours). The violations are kept with the page's URL, and ``assert_clean`` fails the
test naming each rule, its impact, the page and the elements.
"""

from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.resources import files

import greenlet
from playwright._impl._sync_base import SyncBase
from playwright.sync_api import Error

WCAG_21_AA = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa")

AXE_SOURCE = (files("axe_playwright_python") / "axe.min.js").read_text(encoding="utf-8")

# Runs one axe check in the page. A check asked for while another runs in the same
# document waits for it (axe refuses two runs at once).
RUN_AXE = """async (tags) => {
  if (!['text/html', 'application/xhtml+xml'].includes(document.contentType)) return null;
  const previous = window.__accessibilityCheck || Promise.resolve();
  const check = previous.catch(() => null).then(() =>
    axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']}));
  window.__accessibilityCheck = check;
  const results = await check;
  return {
    url: location.href,
    violations: results.violations.map(rule => ({
      rule: rule.id,
      impact: rule.impact,
      help: rule.help,
      nodes: rule.nodes.map(node => ({target: node.target.join(' '), summary: node.failureSummary})),
    })),
  };
}"""


@dataclass(frozen=True)
class Violation:
    """One axe rule broken on one page: ``nodes`` are (selector, axe's summary) pairs."""

    url: str
    rule: str
    impact: str
    help: str
    nodes: tuple[tuple[str, str], ...]

    def __str__(self) -> str:
        """The rule and the page, then each element; axe's advice is given once, for the
        first element (the others differ in their figures at most)."""
        lines = [f"{self.rule} ({self.impact}) on {self.url}: {self.help}"]
        for number, (target, summary) in enumerate(self.nodes):
            lines.append(f"    {target}")
            if number == 0:
                lines.extend(f"        {line.strip()}" for line in summary.splitlines() if line.strip())
        return "\n".join(lines)


@dataclass
class AccessibilityAudit:
    """The checks of one test. ``visited`` lists the URLs the watched pages' main frames
    navigated to, ``checked`` the URL of each document checked, in order."""

    tags: tuple[str, ...] = WCAG_21_AA
    visited: list[str] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)
    pages: list = field(default_factory=list)
    pending: list = field(default_factory=list)  # pages whose new document awaits its check
    _checking: bool = False

    def watch_context(self, context):
        """Checks every page of ``context``: those open now and those opened later."""
        context.on("page", self.watch_page)
        for page in context.pages:
            self.watch_page(page)
        close = context.close

        def checked_close(**options):
            try:
                for page in context.pages:
                    self.check_settled(page)
            finally:
                close(**options)

        context.close = checked_close
        return context

    def watch_page(self, page):
        if page in self.pages:
            return
        self.pages.append(page)
        page.on("framenavigated", lambda frame: self._navigated(page, frame))
        screenshot, close = page.screenshot, page.close

        def checked_screenshot(**options):
            self.check(page)
            return screenshot(**options)

        def checked_close(**options):
            try:
                self.check_settled(page)
            finally:
                close(**options)

        page.screenshot, page.close = checked_screenshot, checked_close

    def check(self, page) -> list[Violation]:
        """Runs axe in ``page``'s document as it is now; returns (and keeps) what it found."""
        while page in self.pending:
            self.pending.remove(page)  # this check is the one its navigation asked for
        if page.is_closed() or not page.url.startswith(("http://", "https://")):
            return []
        with self._not_gated():
            if not page.evaluate("() => Boolean(window.axe)"):
                page.evaluate(f"{AXE_SOURCE}\n;null")
            report = page.evaluate(RUN_AXE, list(self.tags))
        if report is None:
            return []
        self.checked.append(report["url"])
        found = [
            Violation(
                url=report["url"],
                rule=rule["rule"],
                impact=rule["impact"] or "",
                help=rule["help"],
                nodes=tuple((node["target"], node["summary"] or "") for node in rule["nodes"]),
            )
            for rule in report["violations"]
        ]
        self.violations.extend(found)
        return found

    def check_settled(self, page) -> None:
        """Checks ``page`` once its document has loaded (a navigation the test started
        last may still be on its way)."""
        if page.is_closed():
            return
        try:
            with self._not_gated():
                page.wait_for_load_state()
            self.check(page)
        except Error as error:
            self.unchecked.append(f"{page.url}: {error.message}")

    def assert_clean(self) -> None:
        # A document checked twice (at a screenshot, then at the end) reports once.
        problems = [str(violation) for violation in dict.fromkeys(self.violations)]
        problems += [f"not checked: {what}" for what in self.unchecked]
        if problems:
            found = "\n".join(problems)
            raise AssertionError(f"The accessibility check (axe-core, WCAG 2.1 A/AA) failed:\n{found}")

    def _navigated(self, page, frame) -> None:
        if frame == page.main_frame:
            self.visited.append(frame.url)
            self.pending.append(page)

    def check_pending(self) -> None:
        """Checks the documents navigated to since the last call, once loaded."""
        while self.pending:
            page = self.pending[0]
            if page.is_closed():  # closed by its own script: nothing left to check
                self.pending.remove(page)
                continue
            try:
                with self._not_gated():
                    page.wait_for_load_state()
                self.check(page)
            except Error as error:
                self.unchecked.append(f"{page.url}: {error.message}")
                while page in self.pending:
                    self.pending.remove(page)

    @contextmanager
    def _not_gated(self):
        """The audit's own calls do not wait for checks (they are the checks)."""
        checking, self._checking = self._checking, True
        try:
            yield
        finally:
            self._checking = checking

    @contextmanager
    def gate(self):
        """While open, every Playwright call the test makes (from the main greenlet, not
        from an event or route handler) first checks the documents navigated to
        meanwhile. A sync call is the only time Playwright runs at all, so no document is
        left before it is checked unless a script leaves it on its own."""
        main = greenlet.getcurrent()
        sync = SyncBase._sync
        audit = self

        def gated_sync(self, awaitable):
            __tracebackhide__ = True
            if audit.pending and not audit._checking and greenlet.getcurrent() is main:
                audit.check_pending()
            return sync(self, awaitable)

        SyncBase._sync = gated_sync
        try:
            yield self
        finally:
            SyncBase._sync = sync
