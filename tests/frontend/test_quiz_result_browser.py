"""The finished quiz attempt states its mean error beside the limit a pass stays under
(the one number the quiz shows, as the admin guide says), in headless Chromium: a failed
first attempt at 1280x800, a passed second one at 390x844. Screenshots:
test-artifacts/screenshots/quiz-result-*.png."""

import pytest

from annotation.models import QuizAttempt
from tests.factories import UserFactory
from tests.frontend.crowd_setup import sis_quiz
from tests.support.browser import session_for, watch_errors
from tests.support.crowd_browser import answer_quiz

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _expected(attempt: QuizAttempt) -> str:
    return (
        f"Your answers were on average {attempt.mean_error:.2f} levels from the reference levels; "
        f"a pass needs less than {attempt.threshold:.2f} levels."
    )


def test_the_quiz_result_states_the_mean_error_and_the_limit(browser, live_server, demo, screenshot_dir):
    sis_quiz(demo)
    newcomer = UserFactory(username="newcomer", roles=["rater"])
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    errors = watch_errors(page)
    session_for(page, live_server, username="newcomer")
    page.goto(f"{live_server.url}/rate/demo/sis/")

    answer_quiz(page, near=False)
    first = QuizAttempt.objects.get(rater=newcomer, number=1)
    assert not first.passed and first.mean_error > 1
    result = page.locator("#quiz-result")
    assert "Not passed this time" in result.inner_text()
    assert page.locator("#quiz-mean-error").inner_text() == _expected(first)
    page.screenshot(path=str(screenshot_dir / "quiz-result-failed-1280.png"), full_page=True)

    page.set_viewport_size({"width": 390, "height": 844})
    page.click("#quiz-again")
    result.wait_for(state="hidden")
    answer_quiz(page, near=True)
    second = QuizAttempt.objects.get(rater=newcomer, number=2)
    assert second.passed
    assert "You passed the quiz" in result.inner_text()
    shown = page.locator("#quiz-mean-error")
    assert shown.inner_text() == _expected(second)
    assert shown.evaluate("el => el.scrollWidth <= el.clientWidth && el.getBoundingClientRect().right <= innerWidth")
    result.scroll_into_view_if_needed()
    page.screenshot(path=str(screenshot_dir / "quiz-result-passed-390.png"))
    assert not errors, errors
    page.context.close()
