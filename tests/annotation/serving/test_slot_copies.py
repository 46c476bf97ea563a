"""The pair's count on its slots (``RatingSlot.pair_done``), which the claim orders by: a
rating writes it on the open slots only (and marks every slot when the pair completes),
and a slot that opens again takes the pair's count then, so a pair closer to completion
is still served first. Every test taking ``engine`` runs on each engine (see
queue_support.engine)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from annotation.models import RatingSlot, SlotState
from annotation.serving import leases_release_expired, slot_flag, slot_skip
from tests.factories import SplitFactory
from tests.support import queue_support
from tests.support.queue_support import TTL, claim, queue_pairs, rater, submit

pytestmark = pytest.mark.django_db

engine = queue_support.engine  # every test taking it runs on each engine


def _copies(pair) -> list[tuple[int, str, int, bool]]:
    return list(
        RatingSlot.objects.filter(pair=pair)
        .order_by("index")
        .values_list("index", "state", "pair_done", "pair_complete")
    )


def test_a_rating_writes_the_count_on_open_slots_and_completion_on_all(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    _, (pair,) = queue_pairs(split=split, ratings_per_pair=4)
    raters = [rater() for _ in range(4)]
    first, second = claim(raters[0], dataset), claim(raters[1], dataset)
    submit(raters[0], dataset, first.slot_id, "a")
    # The open slots learn the count; the leased one is left as it was claimed (no write).
    assert _copies(pair) == [
        (0, "done", 1, False),
        (1, "leased", 0, False),
        (2, "open", 1, False),
        (3, "open", 1, False),
    ]
    submit(raters[1], dataset, second.slot_id, "b")
    assert _copies(pair) == [(0, "done", 1, False), (1, "done", 2, False), (2, "open", 2, False), (3, "open", 2, False)]
    for number, user in enumerate(raters[2:]):
        submit(user, dataset, claim(user, dataset).slot_id, f"c{number}")
    assert {(state, complete) for _, state, _, complete in _copies(pair)} == {("done", True)}


def _pair_ahead_but_its_open_slot_leased(engine, clock):
    """Two pairs of two slots, the later one (``ahead``) with one rating and its other
    slot leased to ``holder`` while it got it, so that slot's copy says 0; the earlier
    one unrated, first in the queue on a tie. Returns (dataset, ahead, holder, the held
    slot's id)."""
    split = SplitFactory()
    dataset = split.dataset
    _, (_, ahead) = queue_pairs(split=split, n_pairs=2, ratings_per_pair=2)  # the first: unrated
    first, holder = rater(), rater()
    slots = list(RatingSlot.objects.filter(pair=ahead).order_by("index").values_list("id", flat=True))
    expires = clock.now + timedelta(seconds=TTL)
    for slot_id, user in zip(slots, (first, holder), strict=True):
        RatingSlot.objects.filter(pk=slot_id).update(
            state=SlotState.LEASED, rater=user, leased_at=clock.now, lease_expires_at=expires
        )
    submit(first, dataset, slots[0], "first")
    assert RatingSlot.objects.get(pk=slots[1]).pair_done == 0
    return dataset, ahead, holder, slots[1]


@pytest.mark.parametrize("release", ["skip", "flag"])
def test_a_slot_given_back_takes_the_pairs_count_and_is_served_first(engine, clock, release):
    dataset, ahead, holder, held = _pair_ahead_but_its_open_slot_leased(engine, clock)
    if release == "skip":
        slot_skip(rater=holder, dataset=dataset.name, slot_id=held)
    else:
        slot_flag(rater=holder, dataset=dataset.name, slot_id=held, reason="broken_image")
    assert RatingSlot.objects.get(pk=held).pair_done == 1
    assert claim(rater(), dataset).pair_id == ahead.id  # one rating from done, before the unrated pair


def test_an_expired_lease_released_takes_the_pairs_count_and_is_served_first(engine, clock):
    dataset, ahead, _, held = _pair_ahead_but_its_open_slot_leased(engine, clock)
    clock.advance(TTL + 1)
    assert leases_release_expired() == 1
    assert RatingSlot.objects.get(pk=held).pair_done == 1
    assert claim(rater(), dataset).pair_id == ahead.id
