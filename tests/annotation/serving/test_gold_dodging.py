"""A rater who wants to dodge gold, probing the rating API: nothing they receive or can
count tells a gold pair from an ordinary one (ids, progress, empty queues, error texts),
gold skips show on the dashboard, and gold never repeats a pair they met elsewhere (a
queued pair, a quiz question)."""

from __future__ import annotations

import csv
import io
import itertools

import pytest

from annotation.models import GoldLease, GoldPair, Pair, PairSkip, QualitySettings, QuizAttempt, RaterPause, Rating
from annotation.quality.gold.upload import GoldInputError, gold_pairs_promote, gold_pairs_upload
from annotation.serving.pairs_left import rater_pairs_left
from tests.factories import ImageFactory, SplitFactory, UserFactory
from tests.support import queue_support
from tests.support.crowd_support import gold_upload
from tests.support.gold_serving import campaign, is_gold, set_rate
from tests.support.queue_support import TTL, client_for, queue_pairs, rate_url, rater, submit_kwargs
from tests.support.rating_support import db_id, rate_pair

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("auth_way")]

auth_way = queue_support.auth_way  # each test with a token (fast path) and forced (DRF)
engine = queue_support.engine


def claim(client, dataset):
    return client.post(rate_url(dataset, "claim"), {}, format="json")


def submit(client, dataset, slot_id, key):
    response = client.post(rate_url(dataset, "submit", slot_id), submit_kwargs(key), format="json")
    assert response.status_code == 201, response.content
    return response.json()


def rate_until_dry(client, dataset) -> list[dict]:
    """Claim and rate until the claim answers 204; returns the assignments served, in order."""
    served = []
    for step in itertools.count():
        response = claim(client, dataset)
        if response.status_code == 204:
            return served
        served.append(response.json())
        submit(client, dataset, response.json()["slot_id"], f"k{step}")


def progress(client, dataset) -> dict:
    return client.get(rate_url(dataset, "progress")).json()


def test_ids_do_not_order_gold_after_ordinary_pairs(engine, clock, tmp_path):
    dataset = campaign(tmp_path, n_pairs=70, n_gold=30)
    client = client_for(rater(["SIS"]))
    served = []
    for step in range(60):
        answer = claim(client, dataset).json()
        served.append((int(answer["slot_id"]), int(answer["pair_id"]), is_gold(answer)))
        rated = submit(client, dataset, answer["slot_id"], f"k{step}")
        served[-1] += (int(rated["rating_id"]),)
    gold = [row for row in served if row[2]]
    ordinary = [row for row in served if not row[2]]
    assert len(gold) >= 5 and len(ordinary) >= 20, (len(gold), len(ordinary))
    for column, name in ((0, "slot"), (1, "pair"), (3, "rating")):
        assert min(row[column] for row in gold) < max(row[column] for row in ordinary), f"gold {name} ids on top"
        in_order = [row[column] for row in served]
        assert in_order != sorted(in_order), f"{name} ids grow with the claims"


def test_progress_moves_alike_for_a_gold_and_an_ordinary_pair(engine, clock, tmp_path):
    dataset = campaign(tmp_path, n_pairs=3, n_gold=1, one_in=1)
    client = client_for(rater(["SIS"]))
    changes = {}
    for _ in range(2):  # the one gold pair first (one claim in one), then an ordinary one
        before = progress(client, dataset)
        answer = claim(client, dataset).json()
        claimed = progress(client, dataset)
        submit(client, dataset, answer["slot_id"], f"k-{answer['slot_id']}")
        rated = progress(client, dataset)
        changes[is_gold(answer)] = [
            (
                later["pairs_left"] - earlier["pairs_left"],
                later["pairs_left_by_kind"]["SIS"] - earlier["pairs_left_by_kind"]["SIS"],
                later["ratings_today"] - earlier["ratings_today"],
                later["held_slot_id"] is not None,
            )
            for earlier, later in ((before, claimed), (claimed, rated))
        ]
    assert set(changes) == {True, False}
    assert changes[True] == changes[False] == [(0, 0, 0, True), (-1, -1, 1, False)]


def test_no_gold_once_the_raters_ordinary_work_is_done(engine, clock, tmp_path):
    dataset = campaign(tmp_path, n_pairs=4, n_gold=30, ratings_per_pair=2, one_in=2)
    user = rater(["SIS"])
    client = client_for(user)
    rate_until_dry(client, dataset)
    assert Rating.objects.filter(rater=user).count() == 4, "the rater rated every ordinary pair"
    gold_met = GoldLease.objects.filter(rater=user).count()
    assert gold_met < 30
    # The queue is empty for this rater: every claim answers 204, never a gold pair.
    assert [claim(client, dataset).status_code for _ in range(30)] == [204] * 30
    assert GoldLease.objects.filter(rater=user).count() == gold_met
    assert progress(client, dataset)["pairs_left"] == 0


def test_no_gold_once_the_queue_is_rated_by_others(engine, clock, tmp_path):
    dataset = campaign(tmp_path, n_pairs=2, n_gold=10, ratings_per_pair=1, one_in=1)
    client = client_for(rater(["SIS"]))
    for pair in Pair.objects.filter(dataset=dataset):
        rate_pair(pair, [3.0])
    assert [claim(client, dataset).status_code for _ in range(20)] == [204] * 20
    assert not GoldLease.objects.exists()


def _answers(client, dataset, slot_id, steps, *, clock, keys: str) -> list[tuple]:
    """(step, status, detail, code, fields) of each step on one slot; "expire" moves the
    clock past the lease."""
    answers = []
    for step in steps:
        if step == "expire":
            clock.advance(TTL + 5)
            continue
        action, _, key = step.partition(":")
        body = {"reason": "broken_image"} if action == "flag" else submit_kwargs(keys + key) if key else {}
        response = client.post(rate_url(dataset, action, slot_id), body, format="json")
        data = response.json()
        answers.append((step, response.status_code, data.get("detail"), data.get("code"), sorted(data)))
    return answers


SCRIPTS = {
    "rated": ["heartbeat", "submit:a", "submit:a", "submit:b", "heartbeat", "skip", "flag", "flag"],
    "skipped": ["skip", "skip", "heartbeat", "submit:c", "flag", "flag"],
    "expired": ["expire", "heartbeat", "expire", "skip", "flag", "submit:e"],
    "expired-then-rated": ["expire", "submit:d", "heartbeat", "skip"],
}


@pytest.mark.parametrize("script", list(SCRIPTS))
def test_every_slot_action_answers_gold_and_ordinary_alike(engine, clock, tmp_path, script):
    dataset = campaign(tmp_path, n_pairs=10, n_gold=4)
    holder, other = client_for(rater(["SIS"])), client_for(rater(["SIS"]))
    answers = {}
    for gold in (True, False):
        set_rate(dataset, 1 if gold else 0)
        answer = claim(holder, dataset).json()
        assert is_gold(answer) is gold
        keys = "gold-" if gold else "pair-"
        # Another rater on the slot the holder has: refused alike.
        others = ["heartbeat", "submit:x", "skip", "flag"]
        answers[gold] = _answers(other, dataset, answer["slot_id"], others, clock=clock, keys=keys)
        answers[gold] += _answers(holder, dataset, answer["slot_id"], SCRIPTS[script], clock=clock, keys=keys)
    assert answers[True] == answers[False]


def _raters_csv(admin_client, dataset, capture) -> dict[str, dict]:
    with capture(execute=True):
        assert admin_client.post(f"/campaigns/{dataset.name}/refresh/").status_code == 302
    response = admin_client.get(f"/campaigns/{dataset.name}/raters/?format=csv")
    assert response.status_code == 200
    rows = csv.DictReader(io.StringIO(response.content.decode()))
    return {row["username"]: row for row in rows}


def test_gold_skips_count_on_the_dashboards_rater_table(
    engine, clock, tmp_path, client, django_capture_on_commit_callbacks
):
    dataset = campaign(tmp_path, n_pairs=10, n_gold=5, one_in=1)
    dodger = rater(["SIS"])
    api = client_for(dodger)
    for _ in range(5):  # every gold pair skipped unseen
        answer = claim(api, dataset).json()
        assert is_gold(answer)
        assert api.post(rate_url(dataset, "skip", answer["slot_id"])).status_code == 200
    answer = claim(api, dataset).json()  # no gold left: an ordinary pair, skipped too
    assert not is_gold(answer)
    assert api.post(rate_url(dataset, "skip", answer["slot_id"])).status_code == 200
    client.force_login(UserFactory(roles=["admin"], is_staff=True))
    rows = _raters_csv(client, dataset, django_capture_on_commit_callbacks)
    assert rows[dodger.username]["skips"] == "6"
    assert rows[dodger.username]["gold_passed"] == "5"
    assert PairSkip.objects.filter(rater=dodger).count() == 1


@pytest.mark.parametrize("reverse", [False, True])
def test_a_gold_pair_equal_to_a_queued_pair_is_refused(tmp_path, reverse):
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=3)
    pair = Pair.objects.select_related("image_a", "image_b").order_by("id")[1]
    keys = (pair.image_b.key, pair.image_a.key) if reverse else (pair.image_a.key, pair.image_b.key)
    spare = [ImageFactory(split=split, dataset=split.dataset) for _ in range(2)]
    path = tmp_path / "gold.csv"
    path.write_text(f"image1,image2,gold_score\n{spare[0].key},{spare[1].key},2.0\n{keys[0]},{keys[1]},3.0\n")
    admin = client_for(UserFactory(roles=["admin"]))
    with open(path, "rb") as handle:
        response = admin.post(f"/api/datasets/{split.dataset.name}/gold/", {"file": handle}, format="multipart")
    assert response.status_code == 400, response.content
    detail = response.json()["detail"]
    assert "line 3" in detail and keys[0] in detail and keys[1] in detail and "queued" in detail
    assert not GoldPair.objects.exists()
    with pytest.raises(GoldInputError, match="line 3"):
        gold_pairs_upload(dataset=split.dataset, path=path)


def test_a_pair_met_in_a_quiz_is_never_served_as_gold(engine, clock, tmp_path, admin_client):
    dataset = campaign(tmp_path, n_pairs=8, n_gold=6, ratings_per_pair=2, one_in=1)
    quiz_ids = sorted(GoldPair.objects.values_list("pk", flat=True))[:5]
    GoldPair.objects.filter(pk__in=quiz_ids).update(in_quiz=True)
    # Five questions: the smallest pool for attempts of one (five times the quiz length).
    QualitySettings.objects.filter(dataset=dataset).update(quiz_length=1)
    user = rater(["SIS"])
    client = client_for(user)
    state = client.post(f"/api/rate/{dataset.name}/quiz/sis/", {}, format="json").json()
    answer = {**submit_kwargs("quiz-1"), "gold_pair_id": state["gold_pair_id"]}
    assert client.post(f"/api/rate/{dataset.name}/quiz/sis/answer/", answer, format="json").status_code == 201
    # The admin takes the questions out of the quiz: they become gold pairs of the queue.
    admin_client.post("/admin/annotation/goldpair/", {"action": "quiz_remove", "_selected_action": quiz_ids})
    assert not GoldPair.objects.filter(in_quiz=True).exists()
    served = [is_gold(assignment) for assignment in rate_until_dry(client, dataset)]
    asked = set(QuizAttempt.objects.get(rater=user).order)  # the questions of the attempt
    assert db_id("question", state["gold_pair_id"]) in asked and asked <= set(quiz_ids)
    met = set(GoldLease.objects.filter(rater=user).values_list("gold_pair_id", flat=True))
    assert met == set(GoldPair.objects.values_list("pk", flat=True)) - asked, "every gold pair but those asked"
    assert served.count(True) == len(met) and served.count(False) == 8


def test_a_retired_gold_pair_is_never_served(engine, clock, tmp_path):
    dataset = campaign(tmp_path, n_pairs=6, n_gold=4, ratings_per_pair=2, one_in=1)
    kept = GoldPair.objects.order_by("pk").first()
    GoldPair.objects.exclude(pk=kept.pk).update(active=False)
    user = rater(["SIS"])
    client = client_for(user)
    rate_until_dry(client, dataset)
    assert list(GoldLease.objects.filter(rater=user).values_list("gold_pair_id", flat=True)) == [kept.pk]


def test_a_promoted_gold_pair_is_never_served_to_its_own_raters(engine, clock, tmp_path):
    dataset = campaign(tmp_path, n_pairs=6, n_gold=1, ratings_per_pair=3, one_in=1)
    raters = [rater(["SIS"]) for _ in range(3)]
    source = Pair.objects.order_by("id").first()
    rate_pair(source, [2.0, 2.1, 2.2], raters=raters)
    assert gold_pairs_promote(dataset=dataset, kind="SIS", max_sd=0.5) == 1
    promoted = GoldPair.objects.get(source_pair=source)
    client = client_for(raters[0])
    rate_until_dry(client, dataset)
    met = set(GoldLease.objects.filter(rater=raters[0]).values_list("gold_pair_id", flat=True))
    assert met == set(GoldPair.objects.exclude(pk=promoted.pk).values_list("pk", flat=True)), "only the uploaded one"
    # A rater who never met the source pair is served the promoted gold pair.
    newcomer = client_for(rater(["SIS"]))
    first = claim(newcomer, dataset).json()
    second = (submit(newcomer, dataset, first["slot_id"], "n1"), claim(newcomer, dataset).json())[1]
    assert {is_gold(first), is_gold(second)} == {True}


# --- which gold pairs a rater may still meet (gold_unmet): served and counted alike ----


def served_gold_ids(user, dataset, **claim_kwargs) -> set[int]:
    """Claims and rates (service calls) until nothing is left; the gold pairs served."""
    served = set()
    for step in itertools.count():
        held = queue_support.claim(user, dataset, **claim_kwargs)
        if held is None:
            return served
        if GoldLease.objects.filter(pk=held.slot_id).exists():
            served.add(held.pair_id)
        queue_support.submit(user, dataset, held.slot_id, f"u{step}")


def test_gold_made_from_a_pair_the_rater_skipped_is_never_theirs_but_another_raters_skip_is_no_bar(
    engine, clock, tmp_path
):
    dataset = campaign(tmp_path, n_pairs=6, n_gold=1, ratings_per_pair=3, one_in=1)
    user, other = rater(["SIS"]), rater(["SIS"])
    mine, others = Pair.objects.order_by("id")[:2]
    PairSkip.objects.create(pair=mine, rater=user, created_at=clock.now)
    PairSkip.objects.create(pair=others, rater=other, created_at=clock.now)
    for pair in (mine, others):
        rate_pair(pair, [2.0, 2.1, 2.2])
    assert gold_pairs_promote(dataset=dataset, kind="SIS", max_sd=0.5) == 2
    uploaded = GoldPair.objects.get(dataset=dataset, source_pair=None).pk
    from_others = GoldPair.objects.get(source_pair=others).pk
    # 4 ordinary pairs open, the uploaded gold pair and the one made from the other's skip.
    assert rater_pairs_left(rater=user, kinds=["SIS"], dataset_id=dataset.pk) == {(dataset.pk, "SIS"): 6}
    assert served_gold_ids(user, dataset) == {uploaded, from_others}


def test_a_gold_pair_in_the_quiz_is_neither_served_nor_counted(engine, clock, tmp_path):
    dataset = campaign(tmp_path, n_pairs=2, n_gold=3, ratings_per_pair=2, one_in=1)
    quiz_pair = GoldPair.objects.order_by("pk").first()
    GoldPair.objects.filter(pk=quiz_pair.pk).update(in_quiz=True)
    user = rater(["SIS"])
    assert rater_pairs_left(rater=user, kinds=["SIS"], dataset_id=dataset.pk) == {(dataset.pk, "SIS"): 4}
    assert quiz_pair.pk not in served_gold_ids(user, dataset)


def test_a_claim_for_one_kind_is_served_no_gold_of_another(engine, clock, tmp_path):
    dataset = campaign(tmp_path, n_pairs=3, n_gold=1, ratings_per_pair=2, one_in=1)
    split = dataset.splits.first()
    queue_pairs(split=split, kind="STS", n_pairs=2, ratings_per_pair=2)
    gold_upload(split, "STS", 3, tmp_path)
    served = served_gold_ids(rater(["SIS", "STS"]), dataset, kind="SIS")
    assert served == set(GoldPair.objects.filter(dataset=dataset, kind="SIS").values_list("pk", flat=True))


def test_a_dataset_without_gold_serves_no_gold_pair_of_another_dataset(engine, clock, tmp_path):
    with_gold = campaign(tmp_path, n_pairs=2, n_gold=2, ratings_per_pair=2, one_in=1)
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=3, ratings_per_pair=2)
    set_rate(split.dataset, 1)
    user = rater(["SIS"])
    assert served_gold_ids(user, split.dataset) == set()
    assert GoldLease.objects.filter(rater=user).count() == 0
    assert rater_pairs_left(rater=user, kinds=["SIS"], dataset_id=with_gold.pk) == {(with_gold.pk, "SIS"): 4}


def test_a_paused_rater_re_sending_old_submissions_is_answered_alike_for_gold_and_ordinary(engine, clock, tmp_path):
    dataset = campaign(tmp_path, n_pairs=4, n_gold=3)
    user = rater(["SIS"])
    client = client_for(user)
    sent = []
    for one_in in (1, 0):  # a gold item, then an ordinary one
        set_rate(dataset, one_in)
        answer = claim(client, dataset).json()
        assert is_gold(answer) is (one_in == 1)
        sent.append((answer["slot_id"], f"key-{one_in}", submit(client, dataset, answer["slot_id"], f"key-{one_in}")))
    RaterPause.objects.create(rater=user, dataset=dataset, reason="exclusion", created_at=clock())
    for slot_id, key, first in sent:
        again = client.post(rate_url(dataset, "submit", slot_id), submit_kwargs(key), format="json")
        assert again.status_code == 200, again.content  # the repeat, not the pause
        assert again.json()["rating_id"] == first["rating_id"] and again.json()["replayed"] is True
    # A new key on an item already rated is refused with the same answer for either.
    set_rate(dataset, 0)
    refusals = [
        client.post(rate_url(dataset, "submit", slot_id), submit_kwargs(f"new-key-{n}"), format="json")
        for n, (slot_id, _, _) in enumerate(sent)
    ]
    assert [answer.status_code for answer in refusals] == [409, 409]
    assert refusals[0].json() == refusals[1].json()
