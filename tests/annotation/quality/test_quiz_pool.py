"""Quiz pools: a kind's pool must hold at least five times the quiz length; a
smaller one runs no quiz (the kind stays closed) and says so with its numbers: to the
rater, in the admin's pages and API, and when an admin makes a campaign link for it."""

import html

import pytest
from rest_framework.test import APIClient

from annotation.models import CampaignLink, GoldPair, QualitySettings, QuizAttempt
from annotation.quality.quiz import quiz_offered
from tests.factories import SplitFactory, UserFactory
from tests.support.queue_support import queue_pairs
from tests.support.quiz import api_attempt, make_quiz

pytestmark = pytest.mark.django_db


@pytest.fixture
def split():
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=3, ratings_per_pair=1)
    return split


def rater_api(user=None):
    client = APIClient()
    client.force_authenticate(user or UserFactory(roles=["rater"]))
    return client


def spread(n: int) -> list[float]:
    return [round(5 * index / max(1, n - 1), 2) for index in range(n)]


def test_a_pool_under_five_times_the_length_runs_no_quiz_and_names_the_numbers(split, tmp_path, client):
    make_quiz(split.dataset, spread(24), tmp_path)  # the default length 5 needs 25
    rater = UserFactory(roles=["rater"])
    api = rater_api(rater)
    answer = api.post(f"/api/rate/{split.dataset.name}/quiz/sis/", {}, format="json")
    assert answer.status_code == 409 and answer.json()["code"] == "quiz_too_small"
    assert answer.json()["detail"] == (
        "the SIS qualification quiz of this dataset cannot run: its pool holds 24 question(s) and attempts of 5 "
        "need at least 25 (5 times the quiz length); ask an admin to add questions"
    )
    assert not QuizAttempt.objects.exists()
    assert not quiz_offered(rater=rater, dataset_id=split.dataset.pk, kind="SIS")
    client.force_login(rater)
    page = client.get(f"/rate/{split.dataset.name}/sis/")
    assert page.status_code == 403 and "Not qualified" in page.content.decode()
    claim = api.post(f"/api/rate/{split.dataset.name}/claim/", {"kind": "SIS"}, format="json")
    assert claim.status_code == 403
    # One question more and the same rater takes it.
    QualitySettings.objects.create(dataset=split.dataset, quiz_length=4)
    state = api.post(f"/api/rate/{split.dataset.name}/quiz/sis/", {}, format="json")
    assert state.status_code == 200 and state.json()["total"] == 4


def test_a_pool_shrunk_under_five_times_the_length_after_attempt_one_opens_no_attempt_two(split, tmp_path):
    make_quiz(split.dataset, spread(5), tmp_path)
    QualitySettings.objects.create(dataset=split.dataset, quiz_length=1)
    client = rater_api()
    far = {gold.pk: 0.0 if gold.gold_score >= 2.5 else 5.0 for gold in GoldPair.objects.all()}
    ((asked, body),) = api_attempt(client, split.dataset, score_for=far.get, tag="one")
    assert not body["state"]["result"]["passed"]
    GoldPair.objects.exclude(pk=asked).filter(pk=GoldPair.objects.exclude(pk=asked).first().pk).update(active=False)
    answer = client.post(f"/api/rate/{split.dataset.name}/quiz/sis/", {"start": True}, format="json")
    assert answer.status_code == 409 and answer.json()["code"] == "quiz_too_small"
    assert "its pool holds 4 question(s) and attempts of 1 need at least 5" in answer.json()["detail"]


def test_the_quiz_settings_api_sets_the_length_and_says_when_a_pool_is_too_small(split, tmp_path, admin_api):
    make_quiz(split.dataset, spread(15), tmp_path)
    url = f"/api/datasets/{split.dataset.name}/quiz/"
    body = admin_api.get(url).json()
    assert (body["quiz_length"], body["quiz_max_error"]) == (5, 1.0)
    ((pool,),) = [body["pools"]]
    assert (pool["kind"], pool["size"], pool["needed"], pool["attempt_length"], pool["too_small"]) == (
        "SIS",
        15,
        25,
        0,
        True,
    )
    assert "too small, the quiz cannot run: attempts of 5 need at least 25" in pool["message"]
    assert "add 10 more, or lower the quiz length to 3" in pool["message"]
    body = admin_api.put(url, {"quiz_length": 3}, format="json").json()
    assert body["quiz_length"] == 3 and body["pools"][0]["too_small"] is False
    assert body["pools"][0]["attempt_length"] == 3 and body["pools"][0]["needed"] == 15
    assert QualitySettings.objects.get(dataset=split.dataset).quiz_length == 3
    for bad, field in (({"quiz_length": 0}, "quiz_length"), ({"quiz_max_error": 0}, "quiz_max_error")):
        answer = admin_api.put(url, bad, format="json")
        assert answer.status_code == 400 and field in str(answer.json())
    assert rater_api().get(url).status_code == 403


def test_the_admin_pages_say_when_a_pool_is_too_small(split, tmp_path, admin_client):
    make_quiz(split.dataset, spread(7), tmp_path)
    listing = html.unescape(admin_client.get("/admin/annotation/goldpair/").content.decode())
    assert (
        f"Dataset {split.dataset.name}, SIS quiz: 7 question(s) in the pool: too small, the quiz cannot run: "
        "attempts of 5 need at least 25"
    ) in listing
    page = html.unescape(admin_client.get(f"/admin/annotation/dataset/{split.dataset.pk}/change/").content.decode())
    assert "SIS quiz: 7 question(s) in the pool: too small" in page and "lower the quiz length to 1" in page
    assert "needs at least five times this many gold pairs" in page, "the quiz length's help"


def test_a_campaign_link_for_a_kind_whose_quiz_cannot_run_is_refused_naming_the_numbers(
    split, tmp_path, admin_api, admin_client
):
    make_quiz(split.dataset, spread(7), tmp_path)
    body = {"name": "wave", "kinds": ["SIS"], "quota": 3, "completion_code": "DONE-1"}
    refused = admin_api.post(f"/api/datasets/{split.dataset.name}/campaign-links/", body, format="json")
    assert refused.status_code == 400, refused.content
    assert "participants of this link could never rate SIS. SIS quiz: 7 question(s)" in refused.json()["detail"]
    assert "attempts of 5 need at least 25" in refused.json()["detail"]
    form = {
        "name": "wave",
        "dataset": split.dataset.pk,
        "kinds": ["SIS"],
        "quota": 3,
        "completion_code": "DONE-1",
        "id_param": "PROLIFIC_PID",
        "active": "on",
        **{f"{prefix}-{field}": value for prefix in ("questions", "participants") for field, value in MANAGEMENT},
    }
    page = html.unescape(admin_client.post("/admin/annotation/campaignlink/add/", form).content.decode())
    assert "participants of this link could never rate SIS" in page and not CampaignLink.objects.exists()
    QualitySettings.objects.create(dataset=split.dataset, quiz_length=1)
    made = admin_api.post(f"/api/datasets/{split.dataset.name}/campaign-links/", body, format="json")
    assert made.status_code == 201, made.content


MANAGEMENT = (("TOTAL_FORMS", "0"), ("INITIAL_FORMS", "0"), ("MIN_NUM_FORMS", "0"), ("MAX_NUM_FORMS", "1000"))


def test_the_gold_pair_admin_puts_pairs_in_the_quiz_and_takes_them_out(split, tmp_path, admin_client):
    make_quiz(split.dataset, [0.0, 1.5, 3.0, 4.5], tmp_path)
    ids = list(GoldPair.objects.order_by("pk").values_list("pk", flat=True))
    admin_client.post("/admin/annotation/goldpair/", {"action": "quiz_remove", "_selected_action": ids[:3]})
    assert list(GoldPair.objects.filter(in_quiz=True).values_list("pk", flat=True)) == ids[3:]
    admin_client.post("/admin/annotation/goldpair/", {"action": "quiz_add", "_selected_action": ids[:1]})
    assert sorted(GoldPair.objects.filter(in_quiz=True).values_list("pk", flat=True)) == [ids[0], ids[3]]
