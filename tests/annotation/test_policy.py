"""The rating policy at the crowd boundary, through the HTTP API as a participant (or a
rater) who wants more than their due would send it, on every path (``engine``: the
PostgreSQL statements, their stepwise fallback, the portable ORM path): the quota counts
held items and gold and holds at submit too, participants act only in their study's
dataset and kinds, a pause since the claim refuses the submit."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import GoldLease, GoldRating, Qualification, Rating, RatingSlot, SlotState
from annotation.quality.pauses import rater_pause
from tests.factories import UserFactory
from tests.support import queue_support
from tests.support.policy_actions import SUBMISSION, claim, gold_sis_pairs, join, rate_n, submit, two_kind_dataset
from tests.support.queue_support import client_for, rater
from tests.support.rating_support import api_id, db_id

pytestmark = pytest.mark.django_db
engine = queue_support.engine


def items_done(user) -> int:
    return Rating.objects.filter(rater=user).count() + GoldRating.objects.filter(rater=user).count()


def test_at_the_quota_with_items_held_a_participant_is_served_only_those(engine):
    dataset = two_kind_dataset()
    browser, user = join(dataset, kinds=["SIS", "STS"], quota=5)
    rate_n(browser, dataset, "SIS", 3)
    first = claim(browser, dataset, "SIS")
    assert first.status_code == 200
    second = claim(browser, dataset, "STS")
    assert second.status_code == 200, "three done and one held: a fifth item is still due"
    third = claim(browser, dataset, "STS")
    assert third.json()["slot_id"] == second.json()["slot_id"], "the held item is resumed, not another"
    refused = claim(browser, dataset, "SIS")
    assert refused.status_code == 200 and refused.json()["resumed"], "a held item of the kind is resumed"
    refused = claim(browser, dataset)
    assert refused.status_code == 200 and refused.json()["resumed"]
    # Three done and two held fill the quota: only the held ones are served, then nothing.
    for slot in (first, second):
        assert submit(browser, dataset, slot.json()["slot_id"], f"last-{slot.json()['slot_id']}").status_code == 201
    over = claim(browser, dataset, "STS")
    assert (over.status_code, over.json()["code"]) == (403, "quota_reached")
    assert items_done(user) == 5


def test_a_participant_claiming_two_kinds_at_once_is_refused_at_the_fifth_item_of_five(engine):
    dataset = two_kind_dataset()
    browser, user = join(dataset, kinds=["SIS", "STS"], quota=5)
    rate_n(browser, dataset, "SIS", 4)
    assert claim(browser, dataset, "SIS").status_code == 200
    refused = claim(browser, dataset, "STS")
    assert (refused.status_code, refused.json()["code"]) == (403, "quota_reached"), refused.content
    assert RatingSlot.objects.filter(rater=user, state=SlotState.LEASED).count() == 1


def test_a_participant_stores_nothing_in_a_dataset_outside_their_study(engine):
    own, other = two_kind_dataset(), two_kind_dataset()
    browser, user = join(own, kinds=["SIS"], quota=5)
    # Even with a grant for every dataset (an admin's), the study's dataset is the only one.
    Qualification.objects.create(rater=user, kind="SIS")
    refused = claim(browser, other, "SIS")
    assert refused.status_code == 403, refused.content
    # A lease of the other dataset they came to hold (before they joined, or by any way):
    # the submit is refused all the same and nothing is stored.
    slot = RatingSlot.objects.filter(dataset=other, kind="SIS", state=SlotState.OPEN).first()
    now = timezone.now()
    RatingSlot.objects.filter(pk=slot.pk).update(
        state=SlotState.LEASED, rater=user, leased_at=now, lease_expires_at=now + timedelta(minutes=10)
    )
    stored = submit(browser, other, api_id("slot", slot.pk), "elsewhere")
    assert stored.status_code == 403, stored.content
    assert client_for(user).post(f"/api/rate/{other.name}/slots/{slot.pk}/skip/").status_code == 403
    assert not Rating.objects.filter(rater=user).exists()


def test_a_participant_of_a_one_kind_link_claims_no_other_kind(engine):
    dataset = two_kind_dataset()
    browser, user = join(dataset, kinds=["SIS"], quota=5)
    Qualification.objects.create(rater=user, dataset=dataset, kind="STS")
    refused = claim(browser, dataset, "STS")
    assert refused.status_code == 403, refused.content
    assert "not STS" in refused.json()["detail"]
    for _ in range(3):
        served = claim(browser, dataset)
        assert served.json()["kind"] == "SIS"
    quiz = browser.post(f"/api/rate/{dataset.name}/quiz/sts/", {}, content_type="application/json")
    assert quiz.status_code == 403
    assert browser.get(f"/rate/{dataset.name}/sts/").status_code == 403


def test_the_quota_counts_gold_items_held_and_rated(engine, tmp_path):
    dataset = two_kind_dataset(gold_one_in=2, n_pairs=30)
    gold_sis_pairs(dataset, 10, tmp_path)
    browser, user = join(dataset, kinds=["SIS", "STS"], quota=4)
    held_gold = None
    for step in range(60):
        served = claim(browser, dataset, "SIS")
        assert served.status_code == 200, served.content
        slot_id = served.json()["slot_id"]
        is_gold = GoldLease.objects.filter(pk=db_id("slot", slot_id)).exists()
        if is_gold and items_done(user) == 3:
            held_gold = slot_id
            break
        if items_done(user) < 3:
            assert submit(browser, dataset, slot_id, f"k{step}").status_code == 201
        else:
            assert browser.post(f"/api/rate/{dataset.name}/slots/{slot_id}/skip/").status_code == 200
    assert held_gold is not None, "one in two claims is gold: sixty claims bring one"
    # Three done and a gold item held fill the quota of four.
    refused = claim(browser, dataset, "STS")
    assert (refused.status_code, refused.json()["code"]) == (403, "quota_reached"), refused.content
    assert submit(browser, dataset, held_gold, "gold").status_code == 201
    over = claim(browser, dataset, "SIS")
    assert (over.status_code, over.json()["code"]) == (403, "quota_reached")
    assert items_done(user) == 4 and GoldRating.objects.filter(rater=user).exists()


def test_a_rater_paused_between_claim_and_submit_stores_nothing(engine):
    dataset = two_kind_dataset()
    user = rater()
    api = client_for(user)
    held = api.post(f"/api/rate/{dataset.name}/claim/", {"kind": "SIS"}, format="json")
    rater_pause(rater=user, dataset=dataset, reason="checking", created_by=UserFactory(roles=["admin"]))
    body = {**SUBMISSION, "idempotency_key": "after-pause"}
    refused = api.post(f"/api/rate/{dataset.name}/slots/{held.json()['slot_id']}/submit/", body, format="json")
    assert (refused.status_code, refused.json()["code"]) == (403, "rater_paused"), refused.content
    assert not Rating.objects.filter(rater=user).exists()
    assert RatingSlot.objects.get(pk=db_id("slot", held.json()["slot_id"])).state == SlotState.LEASED


def test_a_participant_at_quota_with_a_held_lease_cannot_submit_beyond_it(engine):
    dataset = two_kind_dataset()
    browser, user = join(dataset, kinds=["SIS", "STS"], quota=2)
    rate_n(browser, dataset, "STS", 1)
    first = claim(browser, dataset, "SIS").json()["slot_id"]
    # The lease expires and the tidy-up returns the slot to the queue: a submit of it is
    # still accepted while nobody takes it (annotation.serving.slots.holds).
    RatingSlot.objects.filter(pk=db_id("slot", first)).update(
        state=SlotState.OPEN, rater=None, previous_rater=user, leased_at=None, lease_expires_at=None
    )
    second = claim(browser, dataset, "STS")
    assert second.status_code == 200
    # One done and one held fill the quota of two: the old lease's submit would be a third.
    refused = submit(browser, dataset, first, "old-lease")
    assert (refused.status_code, refused.json()["code"]) == (403, "quota_reached"), refused.content
    assert submit(browser, dataset, second.json()["slot_id"], "last").status_code == 201
    assert items_done(user) == 2


def test_a_rater_paused_while_holding_a_gold_item_stores_nothing_either(engine, tmp_path):
    dataset = two_kind_dataset(gold_one_in=1)
    gold_sis_pairs(dataset, 2, tmp_path)
    user = rater()
    api = client_for(user)
    held = api.post(f"/api/rate/{dataset.name}/claim/", {"kind": "SIS"}, format="json").json()["slot_id"]
    assert GoldLease.objects.filter(pk=db_id("slot", held)).exists(), "one in one claims is gold"
    rater_pause(rater=user, dataset=dataset, reason="checking", created_by=UserFactory(roles=["admin"]))
    body = {**SUBMISSION, "idempotency_key": "gold-after-pause"}
    refused = api.post(f"/api/rate/{dataset.name}/slots/{held}/submit/", body, format="json")
    assert (refused.status_code, refused.json()["code"]) == (403, "rater_paused"), refused.content
    assert not GoldRating.objects.filter(rater=user).exists()
