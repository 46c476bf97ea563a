"""Two tabs of one rater racing through the qualification quiz over the HTTP API: the
attempt's row lock (``annotation.quality.quiz``) makes each answer see the one before it.

A rater who answers one question from two tabs at once gets one answer stored and the
other refused (never two answers to one question, each counted in the attempt's error); a
double click (one key sent twice at once) is the same answer replayed, not a clash; two
tabs starting attempt two at once share one attempt (never attempts two and three).

Each race is made certain: a connection of its own holds the attempt's row lock while both
requests are sent, until PostgreSQL shows both waiting for it. For the two starts, the lock
lines them up and the attempts' unique constraint shares the one attempt: the second start,
having locked attempt one, tries to begin attempt two too and takes the first tab's."""

from __future__ import annotations

import pytest

from annotation.models import GoldPair, GoldPurpose, GoldRating, QuizAttempt
from tests.factories import UserFactory
from tests.support.queue_support import client_for
from tests.support.quiz import answer_body, api_attempt, sis_quiz_dataset
from tests.support.row_locks import hold_row_lock, in_thread, wait_for_lock_waiters

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def dataset(tmp_path):
    return sis_quiz_dataset(tmp_path, n_pairs=2)


def quiz_url(dataset) -> str:
    return f"/api/rate/{dataset.name}/quiz/sis/"


def both_at_once(user, posts: list[tuple[str, dict]]) -> list:
    """Each (url, body) POSTed from a tab (client) of its own while the rater's latest
    attempt is locked by another connection, let go only once both requests wait for it;
    returns the answers in the order sent."""
    attempt = QuizAttempt.objects.filter(rater=user).order_by("-number").first()
    holder = hold_row_lock("SELECT 1 FROM annotation_quizattempt WHERE id = %s FOR UPDATE", [attempt.pk])
    results: list[list] = [[] for _ in posts]
    threads = []
    try:
        for (url, body), into in zip(posts, results, strict=True):
            threads.append(in_thread(lambda url=url, body=body: client_for(user).post(url, body, format="json"), into))
        # No way out when the threads end unblocked: without the attempt's lock they
        # would not wait, and the race would be left to chance.
        wait_for_lock_waiters(holder, len(posts))
        assert all(thread.is_alive() for thread in threads)
    finally:
        holder.rollback()
        holder.close()
        for thread in threads:
            thread.join(30)
    assert not [thread for thread in threads if thread.is_alive()], "a request never came back"
    answers = [into[0] for into in results]
    assert not [a for a in answers if isinstance(a, Exception)], answers
    return answers


def quiz_answers(user) -> list[GoldRating]:
    return list(GoldRating.objects.filter(rater=user, purpose=GoldPurpose.QUIZ))


def test_one_question_answered_from_two_tabs_at_once_is_stored_once(dataset):
    user = UserFactory(roles=["rater"])
    first = client_for(user).post(quiz_url(dataset), {}, format="json").json()
    question = first["gold_pair_id"]
    answers = both_at_once(
        user,
        [
            (f"{quiz_url(dataset)}answer/", answer_body(question, "tab-a", 1.0)),
            (f"{quiz_url(dataset)}answer/", answer_body(question, "tab-b", 4.0)),
        ],
    )
    assert sorted(a.status_code for a in answers) == [201, 409], [a.content for a in answers]
    refused = next(a for a in answers if a.status_code == 409)
    assert "not the question you were asked" in refused.json()["detail"]
    assert len(quiz_answers(user)) == 1
    assert QuizAttempt.objects.get(rater=user).answered == 1


def test_a_double_click_is_one_answer_replayed_not_a_clash(dataset):
    user = UserFactory(roles=["rater"])
    question = client_for(user).post(quiz_url(dataset), {}, format="json").json()["gold_pair_id"]
    body = answer_body(question, "click", 2.5)
    answers = both_at_once(user, [(f"{quiz_url(dataset)}answer/", body), (f"{quiz_url(dataset)}answer/", body)])
    assert sorted(a.status_code for a in answers) == [200, 201], [a.content for a in answers]
    assert [a.json()["replayed"] for a in sorted(answers, key=lambda a: a.status_code)] == [True, False]
    assert len(quiz_answers(user)) == 1
    assert QuizAttempt.objects.get(rater=user).answered == 1


def test_two_tabs_starting_attempt_two_at_once_get_attempt_two_only(dataset):
    user = UserFactory(roles=["rater"])
    references = dict(GoldPair.objects.values_list("pk", "gold_score"))
    asked = api_attempt(client_for(user), dataset, score_for=lambda q: 0.0 if references[q] >= 2.5 else 5.0)
    state = asked[-1][1]["state"]  # each answer at the far end of the scale from its reference
    assert state["result"] is not None and not state["result"]["passed"], state
    answers = both_at_once(user, [(quiz_url(dataset), {"start": True}), (quiz_url(dataset), {"start": True})])
    assert [a.status_code for a in answers] == [200, 200], [a.content for a in answers]
    assert [a.json()["attempt"] for a in answers] == [2, 2]
    assert answers[0].json()["gold_pair_id"] == answers[1].json()["gold_pair_id"]
    assert sorted(QuizAttempt.objects.filter(rater=user).values_list("number", flat=True)) == [1, 2]
