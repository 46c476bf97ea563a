"""Serving's per-process memories (annotation/serving/claim.py's gold seen lately and gold
rate) are an optimisation only: the
setting SERVING_PROCESS_MEMORY reaches every one of them, and with it off the same claims
and submits through the HTTP API give the same answers (on PostgreSQL's paths; the
portable paths keep no memory). The serving tests run with it off
(tests/annotation/serving/conftest.py)."""

import pytest

from annotation.models import GoldLease, GoldRating, Rating
from annotation.serving import claim as claim_module
from tests.support.hot_path import BODY, rated_dataset

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


def memories() -> tuple[dict, dict]:
    return claim_module._gold_seen, claim_module._gold_one_in


@pytest.mark.parametrize("memory", [True, False], ids=["memory on", "memory off"])
def test_the_setting_reaches_every_memory_and_changes_no_answer(settings, tmp_path, memory):
    settings.SERVING_PROCESS_MEMORY = memory
    # Gold served one in one item: every claim is gold's turn while gold pairs are left.
    dataset, client = rated_dataset(settings, tmp_path, gold_one_in=1)
    for memory_of in memories():
        memory_of.clear()
    claimed = client.post(f"/api/rate/{dataset}/claim/", {"kind": "SIS"}, format="json")
    assert claimed.status_code == 200, claimed.content
    lease_id = GoldLease.objects.order_by("-id").values_list("id", flat=True).first()
    seen, one_in = memories()
    if memory:
        assert dataset in seen and one_in[dataset] == 1
    else:
        assert seen == {} and one_in == {}
    stored = client.post(
        f"/api/rate/{dataset}/slots/{claimed.json()['slot_id']}/submit/",
        {**BODY, "idempotency_key": "gold item"},
        format="json",
    )
    assert stored.status_code == 201, stored.content
    # The gold item was stored as gold, and nothing as an ordinary rating, either way.
    assert GoldRating.objects.filter(lease_id=lease_id).count() == 1
    assert not Rating.objects.filter(idempotency_key="gold item").exists()
