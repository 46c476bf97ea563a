"""Submit with claim_next_kind: the answer carries the next pair, so the rating page
shows it without a second round trip."""

import pytest

from annotation.models import Rating, RatingSlot, SlotState
from tests.factories import SplitFactory, UserFactory
from tests.support import queue_support
from tests.support.queue_support import client_for, queue_pairs, submit_kwargs
from tests.support.rating_support import db_id

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("auth_way")]

auth_way = queue_support.auth_way  # each test with a token (fast path) and forced (DRF)


def rater_client():
    user = UserFactory(roles=["rater"], qualified_for=["STS", "SIS", "SITS"])
    return user, client_for(user)


def submit(client, dataset, slot_id, key, **extra):
    return client.post(
        f"/api/rate/{dataset.name}/slots/{slot_id}/submit/", {**submit_kwargs(key, 3.21), **extra}, format="json"
    )


def test_submit_returns_the_next_pair_of_the_kind_then_null():
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=2)
    user, client = rater_client()
    first = client.post(f"/api/rate/{split.dataset.name}/claim/", {"kind": "SIS"}, format="json").json()
    answer = submit(client, split.dataset, first["slot_id"], "k1", claim_next_kind="SIS")
    assert answer.status_code == 201
    following = answer.json()["next"]
    assert following["kind"] == "SIS"
    assert following["pair_id"] != first["pair_id"]
    assert RatingSlot.objects.get(pk=db_id("slot", following["slot_id"])).state == SlotState.LEASED
    assert RatingSlot.objects.get(pk=db_id("slot", following["slot_id"])).rater == user
    last = submit(client, split.dataset, following["slot_id"], "k2", claim_next_kind="SIS")
    assert last.status_code == 201
    assert last.json()["next"] is None
    assert Rating.objects.filter(rater=user).count() == 2


def test_without_claim_next_kind_no_next_is_claimed():
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=2)
    user, client = rater_client()
    first = client.post(f"/api/rate/{split.dataset.name}/claim/", {}, format="json").json()
    answer = submit(client, split.dataset, first["slot_id"], "k1")
    assert "next" not in answer.json()
    assert not RatingSlot.objects.filter(rater=user, state=SlotState.LEASED).exists()


def test_replayed_submit_with_claim_next_returns_the_held_pair():
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=3)
    _, client = rater_client()
    first = client.post(f"/api/rate/{split.dataset.name}/claim/", {}, format="json").json()
    one = submit(client, split.dataset, first["slot_id"], "same", claim_next_kind="SIS").json()
    again = submit(client, split.dataset, first["slot_id"], "same", claim_next_kind="SIS")
    assert again.status_code == 200 and again.json()["replayed"] is True
    assert again.json()["next"]["slot_id"] == one["next"]["slot_id"]
    assert again.json()["next"]["resumed"] is True


def test_bad_claim_next_kind_is_400_and_stores_nothing():
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=1)
    _, client = rater_client()
    first = client.post(f"/api/rate/{split.dataset.name}/claim/", {}, format="json").json()
    answer = submit(client, split.dataset, first["slot_id"], "k", claim_next_kind="XYZ")
    assert answer.status_code == 400
    assert "claim_next_kind" in answer.json()["detail"]
    assert Rating.objects.count() == 0
