"""A Prolific participant's whole study in headless Chromium, on a phone (390x844) and a
laptop (1280x800): the link, the consent page, a question before rating, the
quiz, the pairs with "Rated n of N" (gold items among them, counted), a question after
rating, and the completion code; and a participant who leaves the study mid-pair, whose
pair another rater gets at once. Screenshots of every step go to test-artifacts/screenshots/."""

import pytest

from annotation.models import GoldPurpose, GoldRating, Participant, ParticipantAnswer, QualitySettings, RatingSlot
from annotation.people.crowd.questions import study_question_add
from tests.frontend.crowd_setup import crowd_link, sis_quiz
from tests.support.browser import track_point
from tests.support.crowd_browser import END_PAGE, answer_quiz, items_of

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("demo_allowed")]

PID = "5f1a9c8e2b3d4c5e6f7a8b9c"
VIEWPORTS = {"phone": (390, 844), "laptop": (1280, 800)}
CONSENT = (
    "Welcome, and thank you for taking part.\n\n"
    "You will rate how similar two pictures are.\n\n"
    "- It takes about **5 minutes**\n"
    "- Your answers are stored under a pseudonym\n"
    "- You may leave at any time"
)


@pytest.fixture(params=sorted(VIEWPORTS))
def sized_page(request, browser, screenshot_dir):
    width, height = VIEWPORTS[request.param]
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.shot = lambda name: page.screenshot(
        path=str(screenshot_dir / f"study-{name}-{request.param}.png"), full_page=True
    )
    yield page
    context.close()


def study_link(demo, live_server, *, quota: int = 4):
    link = crowd_link(
        demo, kinds=("SIS",), quota=quota, return_url=f"{live_server.url}/login/?returned=yes", consent_text=CONSENT
    )
    study_question_add(link, phase="pre", prompt="How often do you look at photos online?", answer_type="choice",
                       options=["Daily", "Weekly", "Rarely"], required=True)  # fmt: skip
    study_question_add(link, phase="post", prompt="Was anything unclear?")
    return link


def rate_with_progress(page, quota: int) -> list[str]:
    """Rate pairs until the page leaves the rating page; returns the progress line read
    before each rating (waited for: "Rated n of quota" after n ratings)."""
    seen = []
    for _ in range(quota + 2):
        page.wait_for_selector("#pair[data-ready]:not([data-ready='']), [data-testid=crowd-questions]")
        if page.locator("[data-testid=crowd-questions]").count():
            return seen
        # The line is refreshed after each rating (the next pair may show a moment sooner).
        expected = f"Rated {len(seen)} of {quota}"
        page.wait_for_function("text => document.querySelector('#progress').textContent === text", arg=expected)
        seen.append(page.locator("#progress").inner_text())
        if len(seen) == 2:
            page.locator("#instructions").evaluate("el => el.open = false")
            page.shot("4-pairs")
        ready = page.locator("#pair").get_attribute("data-ready")
        page.locator("#submit").scroll_into_view_if_needed()  # the phone's slider is below the pictures
        page.mouse.click(*track_point(page, 0.6))
        page.wait_for_selector("#submit:enabled")
        page.click("#submit")
        page.wait_for_function(
            "r => !location.pathname.includes('/rate/') || document.querySelector('#pair')?.dataset.ready !== r",
            arg=ready,
        )
    raise AssertionError(f"still rating after {quota + 2} items: {seen}")


def test_a_participant_goes_from_the_link_through_consent_questions_quiz_and_pairs_to_the_code(
    sized_page, live_server, demo
):
    page = sized_page
    sis_quiz(demo)
    link = study_link(demo, live_server)
    # Every claim serves gold while the participant has gold left: gold is drawn at
    # random, and one in two could miss all four claims.
    QualitySettings.objects.filter(dataset=demo).update(gold_one_in=1)
    page.goto(f"{live_server.url}/join/{link.token}/?PROLIFIC_PID={PID}&STUDY_ID=s1&SESSION_ID=x1")

    # Consent first: the text as paragraphs and a list, the neutral label, no account name.
    page.wait_for_url("**/consent/")
    consent = page.locator("[data-testid=crowd-consent]")
    assert "about 5 minutes" in consent.locator("li").first.inner_text()
    assert page.locator("[data-testid=participant-label]").inner_text() == "Study participant"
    assert PID not in page.content() and "Log out" not in page.content()
    page.shot("1-consent")
    page.click("[data-testid=consent-agree]")

    # The question before rating: sending it blank names the problem; then answered.
    page.wait_for_url("**/questions/pre/")
    page.click("[data-testid=questions-send]")
    page.wait_for_selector(".study-question.has-problem")
    assert "needs an answer" in page.locator(".study-question").inner_text()
    page.shot("2-question-before")
    page.check("input[value=Weekly]")
    page.click("[data-testid=questions-send]")

    # The quiz, answered near the references, then the pairs.
    page.wait_for_url("**/rate/demo/sis/")
    assert "Before your ratings count" in page.locator(".quiz-intro").inner_text()
    page.locator("#instructions").evaluate("el => el.open = false")
    page.wait_for_selector("#pair[data-ready]")
    page.shot("3-quiz")
    answer_quiz(page, near=True)
    assert "You passed the quiz" in page.locator("#quiz-result").inner_text()
    page.click("#quiz-proceed")
    page.wait_for_selector("#pair[data-ready]:not([data-ready=''])")
    assert page.locator("[data-testid=leave-study]").is_visible()
    assert PID not in page.content() and "Log out" not in page.content()
    seen = rate_with_progress(page, quota=4)
    assert seen == ["Rated 0 of 4", "Rated 1 of 4", "Rated 2 of 4", "Rated 3 of 4"]

    # The question after rating, then the code.
    page.wait_for_url("**/questions/post/")
    page.fill("textarea", "The middle of the scale.")
    page.shot("5-question-after")
    page.click("[data-testid=questions-send]")
    page.wait_for_selector("[data-testid=crowd-done]")
    assert page.locator("[data-testid=completion-code]").inner_text() == "C0DE42"
    page.shot("6-done")

    participant = Participant.objects.get(link=link)
    assert participant.outcome == "completed" and items_of(participant.user) == 4
    assert GoldRating.objects.filter(rater=participant.user, purpose=GoldPurpose.QUEUE).exists(), "gold counted"
    answers = dict(ParticipantAnswer.objects.filter(participant=participant).values_list("question__phase", "answer"))
    assert answers == {"pre": "Weekly", "post": "The middle of the scale."}


def test_a_participant_who_leaves_mid_pair_frees_it_and_is_sent_back(sized_page, live_server, demo):
    page = sized_page
    link = crowd_link(demo, kinds=("SIS",), quota=3, leave_url=f"{live_server.url}/login/?left=yes")
    QualitySettings.objects.filter(dataset=demo).update(gold_one_in=0)
    page.goto(f"{live_server.url}/join/{link.token}/?PROLIFIC_PID={PID}")
    page.wait_for_selector("#pair[data-ready]:not([data-ready=''])")
    page.wait_for_function("document.querySelector('#progress').textContent === 'Rated 0 of 3'")
    page.click("[data-testid=leave-study]")
    page.wait_for_selector("[data-testid=crowd-leave]")
    page.shot("7-leave-confirm")
    participant = Participant.objects.get(link=link)
    held = RatingSlot.objects.filter(rater=participant.user, state="leased").values_list("pair_id", flat=True).get()
    page.click("[data-testid=leave-confirm]")
    ended = page.locator("[data-testid=crowd-left]")
    ended.wait_for()
    assert "marked as returned" in ended.inner_text() and "C0DE42" not in page.content()
    page.shot("8-left")
    participant.refresh_from_db()
    assert participant.outcome == "left"
    assert not RatingSlot.objects.filter(rater=participant.user, state="leased").exists()
    assert RatingSlot.objects.filter(pair_id=held, state="open").exists(), "the pair is open to others at once"
    # No timed redirect: the button takes them back.
    assert page.locator("meta[http-equiv=refresh]").count() == 0
    page.click("[data-testid=return-link]")
    page.wait_for_url("**/login/?left=yes")
    assert page.locator(END_PAGE).count() == 0
