"""Leases with a controlled clock: an expired lease is claimed again, a late submission
is accepted while the slot is free, heartbeats keep and take back a lease. Every test
taking ``engine`` runs on each engine (see queue_support.engine)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from annotation.core.errors import Conflict, Forbidden
from annotation.models import Rating, RatingSlot, SlotState
from annotation.serving import leases_release_expired, slot_heartbeat
from tests.factories import SplitFactory
from tests.support import queue_support
from tests.support.queue_support import TTL, claim, queue_pairs, rater, submit

pytestmark = pytest.mark.django_db

engine = queue_support.engine  # every test taking it runs on each engine


def test_expired_lease_is_claimed_again_and_late_submit_gets_409(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    queue_pairs(split=split, ratings_per_pair=1)
    alice, bob = rater(), rater()
    held = claim(alice, dataset)
    clock.advance(TTL - 1)
    assert claim(bob, dataset) is None  # still leased
    clock.advance(2)
    taken = claim(bob, dataset)
    assert taken.slot_id == held.slot_id
    slot = RatingSlot.objects.get(pk=held.slot_id)
    assert (slot.rater_id, slot.previous_rater_id) == (bob.id, alice.id)
    with pytest.raises(Conflict, match="expired and it was claimed by another rater"):
        submit(alice, dataset, held.slot_id, "late")
    with pytest.raises(Conflict, match="expired"):
        slot_heartbeat(rater=alice, dataset=dataset.name, slot_id=held.slot_id)
    submit(bob, dataset, held.slot_id, "bob")
    with pytest.raises(Conflict, match="expired and it was rated by another rater"):
        submit(alice, dataset, held.slot_id, "late")
    assert list(Rating.objects.values_list("rater_id", flat=True)) == [bob.id]


def test_late_submit_is_accepted_while_the_slot_is_still_free(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    queue_pairs(split=split, ratings_per_pair=2)
    alice = rater()
    held = claim(alice, dataset)
    clock.advance(TTL * 3)
    result = submit(alice, dataset, held.slot_id, "late-but-free")
    assert result.replayed is False
    assert Rating.objects.get(pk=result.rating_id).rater_id == alice.id


def test_late_submit_is_accepted_after_tidy_up_released_the_slot(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    queue_pairs(split=split, ratings_per_pair=2)
    alice = rater()
    held = claim(alice, dataset)
    clock.advance(TTL + 1)
    assert leases_release_expired() == 1
    slot = RatingSlot.objects.get(pk=held.slot_id)
    assert (slot.state, slot.rater_id, slot.previous_rater_id) == (SlotState.OPEN, None, alice.id)
    # The heartbeat of a page left open takes the free slot back.
    expires = slot_heartbeat(rater=alice, dataset=dataset.name, slot_id=held.slot_id)
    assert expires == clock.now + timedelta(seconds=TTL)
    clock.advance(TTL + 1)
    leases_release_expired()
    submit(alice, dataset, held.slot_id, "after-release")
    assert RatingSlot.objects.get(pk=held.slot_id).state == SlotState.DONE


def test_heartbeat_keeps_the_lease(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    queue_pairs(split=split, ratings_per_pair=1)
    alice, bob = rater(), rater()
    held = claim(alice, dataset)
    for _ in range(5):
        clock.advance(TTL - 5)
        assert slot_heartbeat(rater=alice, dataset=dataset.name, slot_id=held.slot_id) == clock.now + timedelta(
            seconds=TTL
        )
        assert claim(bob, dataset) is None
    with pytest.raises(Forbidden, match="you do not hold"):
        slot_heartbeat(rater=bob, dataset=dataset.name, slot_id=held.slot_id)


def test_heartbeat_cannot_take_back_a_released_slot_while_holding_another(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    queue_pairs(split=split, ratings_per_pair=1)
    alice = rater()
    first = claim(alice, dataset)
    clock.advance(TTL + 1)
    leases_release_expired()
    _, (urgent,) = queue_pairs(split=split, ratings_per_pair=1, priority=9)
    second = claim(alice, dataset)
    assert second.pair_id == urgent.id
    with pytest.raises(Conflict, match="you have since claimed another SIS slot"):
        slot_heartbeat(rater=alice, dataset=dataset.name, slot_id=first.slot_id)
    assert RatingSlot.objects.get(pk=first.slot_id).state == SlotState.OPEN
