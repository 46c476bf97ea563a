"""A rater who wants to dodge gold, probing what the API answers beyond the pair itself:
an idempotency key reused across items, and the held lease progress names. Neither may
tell a gold pair from an ordinary one."""

from __future__ import annotations

import pytest

from tests.support import queue_support
from tests.support.crowd_support import crowd_dataset
from tests.support.gold_serving import campaign, is_gold, set_rate
from tests.support.queue_support import client_for, rate_url, rater, submit_kwargs
from tests.support.rating_support import db_id

pytestmark = pytest.mark.django_db
engine = queue_support.engine

KEY_USED = "idempotency key {key!r} was already used for another rating slot; use a new key for each item"


def _submit(client, dataset, slot_id, key):
    return client.post(rate_url(dataset, "submit", slot_id), submit_kwargs(key), format="json")


def _claim_one(client, dataset, *, gold: bool, kind: str | None = None) -> dict:
    """Claim a gold lease (gold_one_in 1) or an ordinary slot (gold_one_in 0)."""
    set_rate(dataset, 1 if gold else 0)
    body = {"kind": kind} if kind else {}
    answer = client.post(rate_url(dataset, "claim"), body, format="json")
    assert answer.status_code == 200, answer.content
    answer = answer.json()
    assert is_gold(answer) == gold
    return answer


def test_a_key_used_on_gold_is_refused_on_any_item_alike(engine, clock, tmp_path):
    dataset = campaign(tmp_path, n_pairs=12, n_gold=6)
    client = client_for(rater(["SIS"]))
    first = {}
    for gold, key in ((True, "used-on-gold"), (False, "used-on-pair")):
        first[gold] = _claim_one(client, dataset, gold=gold)
        assert _submit(client, dataset, first[gold]["slot_id"], key).status_code == 201
    for step, gold in enumerate((True, False, True, False)):
        answer = _claim_one(client, dataset, gold=gold)
        for key in ("used-on-gold", "used-on-pair"):
            refused = _submit(client, dataset, answer["slot_id"], key)
            assert (refused.status_code, refused.json()) == (
                409,
                {"detail": KEY_USED.format(key=key), "code": "conflict"},
            ), (gold, key)
        assert _submit(client, dataset, answer["slot_id"], f"fresh-{step}").status_code == 201
    for gold, key in ((True, "used-on-gold"), (False, "used-on-pair")):
        replay = _submit(client, dataset, first[gold]["slot_id"], key)
        assert replay.status_code == 200 and replay.json()["replayed"] is True, (gold, replay.content)


@pytest.mark.parametrize("older_is_gold", [True, False])
def test_progress_names_the_oldest_held_lease_whichever_is_gold(engine, clock, tmp_path, older_is_gold):
    dataset = crowd_dataset(tmp_path)
    client = client_for(rater(["SIS", "STS"]))
    older = _claim_one(client, dataset, gold=older_is_gold, kind="SIS")
    clock.advance(5)
    newer = _claim_one(client, dataset, gold=not older_is_gold, kind="STS")
    assert newer["slot_id"] != older["slot_id"]
    held = client.get(rate_url(dataset, "progress")).json()["held_slot_id"]
    assert held == older["slot_id"]


def test_progress_breaks_a_tie_of_lease_times_alike_for_gold_and_ordinary(engine, clock, tmp_path):
    dataset = crowd_dataset(tmp_path)
    client = client_for(rater(["SIS", "STS"]))
    leases = [_claim_one(client, dataset, gold=True, kind="SIS"), _claim_one(client, dataset, gold=False, kind="STS")]
    held = client.get(rate_url(dataset, "progress")).json()["held_slot_id"]
    # Both leased at the same instant: the lower id (one sequence for both tables) is named.
    assert held == min((lease["slot_id"] for lease in leases), key=lambda slot: db_id("slot", slot))
