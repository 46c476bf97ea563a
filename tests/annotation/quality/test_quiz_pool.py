"""Quiz pools: a kind's pool must hold twice the attempt's length so the second attempt
never repeats a question; a smaller pool asks half of it per attempt, one question cannot
run a quiz (the kind stays closed), and the admin page and API say so."""

import html

import pytest
from rest_framework.test import APIClient

from annotation.models import GoldPair, QualitySettings, QuizAttempt
from tests.factories import SplitFactory, UserFactory
from tests.support.queue_support import queue_pairs
from tests.support.quiz import api_attempt, make_quiz

pytestmark = pytest.mark.django_db


@pytest.fixture
def split():
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=3, ratings_per_pair=1)
    return split


def rater_api():
    client = APIClient()
    client.force_authenticate(UserFactory(roles=["rater"]))
    return client


def test_a_pool_smaller_than_twice_the_length_asks_half_and_still_never_repeats(split, tmp_path, seeded):
    make_quiz(split.dataset, [0.0, 0.5, 1.0], tmp_path)  # default length 5: attempts of one
    for seed in range(6):
        seeded(seed)
        client = rater_api()
        first = api_attempt(client, split.dataset, score_for=lambda q: 5.0, tag="one")
        second = api_attempt(client, split.dataset, score_for=lambda q: 5.0, start=True)
        assert len(first) == len(second) == 1 and first[0][0] != second[0][0]


def test_a_one_question_pool_runs_no_quiz_and_leaves_the_kind_closed(split, tmp_path, client):
    make_quiz(split.dataset, [2.5], tmp_path)
    rater = UserFactory(roles=["rater"])
    api = APIClient()
    api.force_authenticate(rater)
    answer = api.post(f"/api/rate/{split.dataset.name}/quiz/sis/", {}, format="json")
    assert answer.status_code == 409 and answer.json()["code"] == "quiz_too_small"
    assert "too few questions" in answer.json()["detail"]
    assert not QuizAttempt.objects.exists()
    client.force_login(rater)
    page = client.get(f"/rate/{split.dataset.name}/sis/")
    assert page.status_code == 403 and "Not qualified" in page.content.decode()
    claim = api.post(f"/api/rate/{split.dataset.name}/claim/", {"kind": "SIS"}, format="json")
    assert claim.status_code == 403


def test_a_pool_shrunk_after_attempt_one_leaves_attempt_two_nothing_it_would_repeat(split, tmp_path):
    make_quiz(split.dataset, [0.0, 0.5], tmp_path)
    client = rater_api()
    ((asked, _),) = api_attempt(client, split.dataset, score_for=lambda q: 5.0, tag="one")
    GoldPair.objects.exclude(pk=asked).update(in_quiz=False)
    answer = client.post(f"/api/rate/{split.dataset.name}/quiz/sis/", {"start": True}, format="json")
    assert answer.status_code == 409 and answer.json()["code"] == "quiz_too_small"


def test_the_quiz_settings_api_sets_the_length_and_says_when_a_pool_is_too_small(split, tmp_path, admin_api):
    make_quiz(split.dataset, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], tmp_path)
    url = f"/api/datasets/{split.dataset.name}/quiz/"
    body = admin_api.get(url).json()
    assert (body["quiz_length"], body["quiz_max_error"]) == (5, 1.0)
    ((pool,),) = [body["pools"]]
    assert (pool["kind"], pool["size"], pool["attempt_length"], pool["too_small"]) == ("SIS", 6, 3, True)
    assert "too small for 5 per attempt" in pool["message"] and "attempts ask 3" in pool["message"]
    body = admin_api.put(url, {"quiz_length": 3}, format="json").json()
    assert body["quiz_length"] == 3 and body["pools"][0]["too_small"] is False
    assert QualitySettings.objects.get(dataset=split.dataset).quiz_length == 3
    for bad, field in (({"quiz_length": 0}, "quiz_length"), ({"quiz_max_error": 0}, "quiz_max_error")):
        answer = admin_api.put(url, bad, format="json")
        assert answer.status_code == 400 and field in str(answer.json())
    assert rater_api().get(url).status_code == 403


def test_the_admin_pages_say_when_a_pool_is_too_small(split, tmp_path, admin_client):
    make_quiz(split.dataset, [2.5], tmp_path)
    listing = html.unescape(admin_client.get("/admin/annotation/goldpair/").content.decode())
    assert f"Dataset {split.dataset.name}, SIS quiz: 1 question(s) in the pool: too small, the quiz cannot" in listing
    page = html.unescape(admin_client.get(f"/admin/annotation/dataset/{split.dataset.pk}/change/").content.decode())
    assert "SIS quiz: 1 question(s) in the pool: too small" in page


def test_the_gold_pair_admin_puts_pairs_in_the_quiz_and_takes_them_out(split, tmp_path, admin_client):
    make_quiz(split.dataset, [0.0, 1.5, 3.0, 4.5], tmp_path)
    ids = list(GoldPair.objects.order_by("pk").values_list("pk", flat=True))
    admin_client.post("/admin/annotation/goldpair/", {"action": "quiz_remove", "_selected_action": ids[:3]})
    assert list(GoldPair.objects.filter(in_quiz=True).values_list("pk", flat=True)) == ids[3:]
    admin_client.post("/admin/annotation/goldpair/", {"action": "quiz_add", "_selected_action": ids[:1]})
    assert sorted(GoldPair.objects.filter(in_quiz=True).values_list("pk", flat=True)) == [ids[0], ids[3]]
