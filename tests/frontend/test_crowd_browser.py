"""A Prolific participant's whole path in a real headless Chromium, with gold pairs served
and links of two kinds: the campaign link, the quiz first with its review once an attempt
ends (the reference level's name of each question answered, never a number; failed once,
passed on the second attempt with other questions), pairs up to the quota, the
completion code and the button back; a run whose pairs ran out first, over both kinds, to
the partial code; and a link whose id names another account, refused with nobody signed
in."""

import pytest
from django.contrib.auth import get_user_model

from annotation.models import GoldRating, Participant, QuizAttempt, Rating
from annotation.serving.pairs import pairs_retire
from tests.frontend.crowd_setup import QUIZ_LENGTH, crowd_link, sis_quiz
from tests.support.browser import track_point
from tests.support.crowd_browser import END_PAGE, answer_quiz, items_of

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("demo_allowed")]

PID = "5f0c8e2a9b1d4c3e2f1a0b9c"


def rate_until_the_end_page(page, *, limit: int = 40) -> list[str]:
    """Rate the pair shown, page after page (the link moves the participant from kind to
    kind), until an end page shows; returns the rating pages' paths, one per item."""
    paths = []
    for _ in range(limit):
        page.wait_for_selector(f"#pair[data-ready]:not([data-ready='']), {END_PAGE}")
        if page.locator(END_PAGE).count():
            return paths
        ready = page.locator("#pair").get_attribute("data-ready")
        path = page.evaluate("location.pathname")
        page.mouse.click(*track_point(page, 0.5))
        page.keyboard.press("Enter")
        page.wait_for_function(
            "([ready, path]) => location.pathname !== path || document.querySelector('#pair')?.dataset.ready !== ready",
            arg=[ready, path],
        )
        paths.append(path)
    raise AssertionError(f"no end page after {limit} items")


def test_a_participant_goes_from_the_link_through_the_quiz_and_quota_to_the_code(
    page, live_server, demo, screenshot_dir
):
    page.screenshot_dir = screenshot_dir
    sis_quiz(demo)
    returned = f"{live_server.url}/login/?returned=yes"
    link = crowd_link(demo, kinds=("SIS", "STS"), quota=3, return_url=returned, partial_code="P4RT1")
    page.goto(f"{live_server.url}/join/{link.token}/?PROLIFIC_PID={PID}&STUDY_ID=study1&SESSION_ID=session1")
    # The link signs them in and opens the quiz-gated kind's page in quiz mode first.
    page.wait_for_url("**/rate/demo/sis/")
    assert page.locator("#instructions").evaluate("el => el.open")
    assert "Before your ratings count" in page.locator(".quiz-intro").inner_text()

    first_order = answer_quiz(page, near=False)
    result = page.locator("#quiz-result")
    assert "Not passed this time" in result.inner_text()
    page.screenshot(path=str(screenshot_dir / "crowd-quiz-failed.png"), full_page=True)
    page.click("#quiz-again")
    result.wait_for(state="hidden")
    assert page.locator("#quiz-review").is_hidden(), "attempt 1's review goes with it"
    second_order = answer_quiz(page, near=True)
    assert len(first_order) == len(second_order) == QUIZ_LENGTH and not set(first_order) & set(second_order)
    assert "You passed the quiz" in result.inner_text()
    page.click("#quiz-proceed")

    # The task itself, gold pairs among the others, up to the quota.
    assert len(rate_until_the_end_page(page)) == 3
    page.wait_for_selector("[data-testid=crowd-done]")
    assert page.locator("[data-testid=completion-code]").inner_text() == "C0DE42"
    assert "(3 of 3)" in page.locator("[data-testid=crowd-done]").inner_text()
    page.screenshot(path=str(screenshot_dir / "crowd-done.png"), full_page=True)
    # The page stays until the participant goes back (no timed redirect).
    assert page.locator("meta[http-equiv=refresh]").count() == 0
    page.click("[data-testid=return-link]")
    page.wait_for_url("**/login/?returned=yes")

    users = get_user_model().objects.filter(username=f"prolific-{link.pk}-{PID}")
    assert users.count() == 1
    participant = Participant.objects.get(link=link)
    assert (participant.study_id, participant.session_id) == ("study1", "session1")
    assert participant.finished_at is not None and participant.items_done == 3
    assert participant.outcome == "completed"
    assert items_of(users.get()) == 3
    attempts = QuizAttempt.objects.filter(rater=users.get()).order_by("number")
    assert [(a.number, a.passed) for a in attempts] == [(1, False), (2, True)]
    assert GoldRating.objects.filter(rater=users.get(), purpose="quiz").count() == 2 * QUIZ_LENGTH


def test_a_participant_whose_pairs_run_out_over_both_kinds_gets_the_partial_code(
    page, live_server, demo, screenshot_dir
):
    # Three pairs of each kind are enough to run out of (the demo queues more).
    for kind in ("SIS", "STS"):
        pairs_retire(pair_ids=list(demo.pairs.filter(kind=kind).order_by("id").values_list("id", flat=True)[3:]))
    link = crowd_link(demo, kinds=("SIS", "STS"), quota=100, partial_code="P4RT1")
    page.goto(f"{live_server.url}/join/{link.token}/?PROLIFIC_PID={PID}")
    paths = rate_until_the_end_page(page)
    assert {"/rate/demo/sis/", "/rate/demo/sts/"} <= set(paths)
    ended = page.locator("[data-testid=crowd-partial]")
    ended.wait_for()
    assert page.locator("[data-testid=completion-code]").inner_text() == "P4RT1"
    assert f"you rated {len(paths)} of 100 items" in ended.inner_text()
    assert "C0DE42" not in page.content()
    page.screenshot(path=str(screenshot_dir / "crowd-partial.png"), full_page=True)
    participant = Participant.objects.get(link=link)
    assert (participant.outcome, participant.items_done) == ("partial", len(paths))
    assert items_of(participant.user) == len(paths)
    assert set(Rating.objects.filter(rater=participant.user).values_list("pair__kind", flat=True)) == {"SIS", "STS"}


def test_a_link_whose_id_names_another_account_signs_nobody_in(page, live_server, demo, screenshot_dir):
    from tests.factories import UserFactory

    link = crowd_link(demo, kinds=("SIS",), quota=3)
    alice = "a11ce0a11ce0a11ce0a11ce0"
    UserFactory(username=f"prolific-{link.pk}-{alice}", roles=["rater"])
    response = page.goto(f"{live_server.url}/join/{link.token}/?PROLIFIC_PID={alice}")
    assert response.status == 409
    refused = page.locator("[data-testid=crowd-refused]")
    assert "cannot be used" in refused.inner_text() and "contact the researcher" in refused.inner_text()
    page.screenshot(path=str(screenshot_dir / "crowd-refused.png"), full_page=True)
    page.goto(f"{live_server.url}/rate/demo/sis/")
    page.wait_for_url("**/login/?next=/rate/demo/sis/")
    page.goto(f"{live_server.url}/admin/")
    page.wait_for_url("**/admin/login/?next=/admin/")


def test_a_second_link_of_the_same_data_set_refuses_a_participant_of_the_first(page, live_server, demo, screenshot_dir):
    first = crowd_link(demo, kinds=("SIS",), quota=3)
    second = crowd_link(demo, kinds=("SIS",), quota=3)
    page.goto(f"{live_server.url}/join/{first.token}/?PROLIFIC_PID={PID}")
    page.wait_for_selector("#pair[data-ready]")
    page.context.clear_cookies()
    response = page.goto(f"{live_server.url}/join/{second.token}/?PROLIFIC_PID={PID}")
    assert response.status == 409
    refused = page.locator("[data-testid=crowd-refused]")
    assert "already take part in a study on this data set" in refused.inner_text()
    page.screenshot(path=str(screenshot_dir / "crowd-in-another-study.png"), full_page=True)
    assert not Participant.objects.filter(link=second).exists()


def test_the_link_opened_again_in_another_tab_resumes_the_same_participant(page, live_server, demo):
    link = crowd_link(demo, kinds=("SIS", "STS"), quota=2)
    url = f"{live_server.url}/join/{link.token}/?PROLIFIC_PID={PID}"
    page.goto(url)
    page.wait_for_selector("#pair[data-ready]")
    first = page.locator("#pair").get_attribute("data-ready")
    second_tab = page.context.new_page()
    second_tab.goto(url)
    second_tab.wait_for_selector("#pair[data-ready]")
    # The held pair (ordinary or gold) comes back in the second tab: one rater, one lease.
    assert second_tab.locator("#pair").get_attribute("data-ready") == first
    assert get_user_model().objects.filter(username=f"prolific-{link.pk}-{PID}").count() == 1
    assert Participant.objects.filter(link=link).count() == 1
