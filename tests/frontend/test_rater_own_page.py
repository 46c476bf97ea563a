"""A rater's own page: ratings today and in total per kind, quizzes to take, quiz results."""

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from annotation.models import Rating
from annotation.quality.quiz import quiz_answer, quiz_state
from frontend.instructions import INSTRUCTIONS
from tests.frontend.crowd_setup import sis_quiz
from tests.frontend.rating_setup import rater
from tests.support.rating_support import rate_pair

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("demo_allowed")]


def test_counts_today_and_in_total_and_quiz_results(demo):
    someone = rater("rater1")
    pairs = list(demo.pairs.filter(kind="STS").order_by("id")[:3])
    for pair in pairs:
        rate_pair(pair, [2.0], raters=[someone])
    Rating.objects.filter(pair=pairs[0]).update(created_at=timezone.now() - timedelta(days=2))
    newcomer = rater("rater2")
    newcomer.qualifications.filter(kind="SIS").delete()
    sis_quiz(demo)
    state = quiz_state(rater=newcomer, dataset="demo", kind="SIS")
    quiz_answer(
        rater=newcomer,
        dataset="demo",
        kind="SIS",
        gold_pair_id=state.gold_pair_id,
        score=1.0,
        time_on_item_ms=2000,
        time_to_first_move_ms=100,
        adjustments=1,
        idempotency_key="q1",
    )
    client = Client()
    client.force_login(someone)
    page = client.get("/rate/me/").content.decode()
    rows = re.findall(
        r'<tr><td>([^<]+)</td><td>demo</td><td class="number">(\d+)</td><td class="number">(\d+)</td></tr>', page
    )
    assert rows == [(INSTRUCTIONS["STS"]["title"], "2", "3")]
    assert "No quiz taken" in page
    client.force_login(newcomer)
    page = client.get("/rate/me/").content.decode()
    assert "open (1 of 2 answered)" in page and "quiz-offers" in page
    home = client.get("/rate/").content.decode()
    assert "Qualification quizzes" in home and "/rate/demo/sis/" in home and "/rate/me/" in home
    client.force_login(rater("researcher"))
    assert client.get("/rate/me/").status_code == 403


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_page_as_a_rater_sees_it(page, live_server, demo, screenshot_dir):
    from tests.support.browser import session_for

    someone = rater("rater1")
    for pair in demo.pairs.filter(kind="SIS").order_by("id")[:2]:
        rate_pair(pair, [3.0], raters=[someone])
    session_for(page, live_server)
    page.goto(f"{live_server.url}/rate/me/")
    page.wait_for_selector("#rated-counts")
    page.screenshot(path=str(screenshot_dir / "rater-own.png"), full_page=True)
    assert "2" in page.locator("#rated-counts tbody").inner_text()
