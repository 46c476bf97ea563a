"""The submit service: five ratings complete a pair, idempotent submission, bad values
refused with nothing stored, slots not held, and the database's own limits. Every test
taking ``engine`` runs on each engine (see queue_support.engine)."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from annotation.core.errors import Conflict, Forbidden, NotFound
from annotation.models import QueueCounter, Rating, RatingSlot, SlotState
from annotation.serving import QueueInputError, rating_submit
from tests.factories import SplitFactory
from tests.support import queue_support
from tests.support.queue_support import claim, queue_pairs, rater, submit, submit_kwargs

pytestmark = pytest.mark.django_db

engine = queue_support.engine  # every test taking it runs on each engine


def test_five_raters_complete_a_pair_and_a_sixth_gets_nothing(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    _, (pair,) = queue_pairs(split=split)
    assert QueueCounter.objects.get(dataset=dataset, kind="SIS").pairs_open == 1
    raters = [rater() for _ in range(5)]
    for i, user in enumerate(raters):
        assignment = claim(user, dataset)
        assert assignment.pair_id == pair.id
        submit(user, dataset, assignment.slot_id, f"k{i}", score=i)
        pair.refresh_from_db()
        assert pair.ratings_done == i + 1
        assert set(RatingSlot.objects.filter(pair=pair, state="open").values_list("pair_done", flat=True)) <= {i + 1}
    assert claim(rater(), dataset) is None
    assert sorted(Rating.objects.filter(pair=pair).values_list("rater_id", flat=True)) == sorted(u.id for u in raters)
    assert set(RatingSlot.objects.filter(pair=pair).values_list("state", "pair_complete")) == {("done", True)}
    assert QueueCounter.objects.get(dataset=dataset, kind="SIS").pairs_open == 0


def test_submit_is_idempotent_per_key(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    queue_pairs(split=split, n_pairs=2)
    user = rater()
    first = claim(user, dataset)
    stored = submit(user, dataset, first.slot_id, "key-1", score=4.25)
    clock.advance(5)
    again = submit(user, dataset, first.slot_id, "key-1", score=1.0)
    assert again.replayed is True
    assert (again.rating_id, again.created_at) == (stored.rating_id, stored.created_at)
    assert Rating.objects.get().score == 4.25
    with pytest.raises(Conflict, match="already rated by you"):
        submit(user, dataset, first.slot_id, "key-2")
    second = claim(user, dataset)
    with pytest.raises(Conflict, match="idempotency key 'key-1' was already used"):
        submit(user, dataset, second.slot_id, "key-1")
    assert Rating.objects.count() == 1
    assert RatingSlot.objects.get(pk=second.slot_id).state == SlotState.LEASED
    submit(user, dataset, second.slot_id, "key-2")
    assert Rating.objects.count() == 2


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"score": -0.01}, "score must be between 0 and 5"),
        ({"score": 5.000001}, "score must be between 0 and 5"),
        ({"score": float("nan")}, "score must be a finite number"),
        ({"score": float("inf")}, "score must be a finite number"),
        ({"score": "3"}, "score must be a number"),
        ({"score": True}, "score must be a number"),
        ({"score": None}, "score must be a number"),
        ({"time_on_item_ms": -1}, "time_on_item_ms must be between"),
        ({"time_on_item_ms": 1.5}, "time_on_item_ms must be a whole number"),
        ({"adjustments": -2}, "adjustments must be between"),
        ({"time_to_first_move_ms": 5000}, "time_to_first_move_ms must be between 0 and time_on_item_ms"),
        ({"idempotency_key": ""}, "idempotency_key must be a non-empty string"),
        ({"idempotency_key": "x" * 65}, "at most 64 characters"),
    ],
)
def test_submit_refuses_bad_values_and_stores_nothing(engine, clock, change, message):
    split = SplitFactory()
    queue_pairs(split=split)
    user = rater()
    held = claim(user, split.dataset)
    values = submit_kwargs("k") | change
    with pytest.raises(QueueInputError, match=message):
        rating_submit(rater=user, dataset=split.dataset.name, slot_id=held.slot_id, **values)
    assert Rating.objects.count() == 0
    assert RatingSlot.objects.get(pk=held.slot_id).state == SlotState.LEASED


def test_submit_on_a_slot_not_held_or_of_another_dataset(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    _, (pair,) = queue_pairs(split=split)
    other_split = SplitFactory()
    queue_pairs(split=other_split)
    alice, bob = rater(), rater()
    held = claim(alice, dataset)
    with pytest.raises(Forbidden, match="you do not hold this rating slot: it belongs to another rater"):
        submit(bob, dataset, held.slot_id, "b")
    free = RatingSlot.objects.filter(pair=pair, state=SlotState.OPEN).first()
    with pytest.raises(Forbidden, match="claim a pair first"):
        submit(bob, dataset, free.pk, "b")
    with pytest.raises(NotFound, match=f"not in dataset {other_split.dataset.name!r}"):
        rating_submit(rater=alice, dataset=other_split.dataset.name, slot_id=held.slot_id, **submit_kwargs("a"))
    with pytest.raises(NotFound, match="no such rating slot"):
        submit(alice, dataset, 999999, "a")
    assert Rating.objects.count() == 0


def test_database_refuses_a_sixth_rating_and_a_second_by_one_rater(clock):
    split = SplitFactory()
    _, (pair,) = queue_pairs(split=split, ratings_per_pair=2)
    alice, bob = rater(), rater()
    slots = list(RatingSlot.objects.filter(pair=pair).order_by("index"))
    values = {"pair": pair, "score": 2.0, "time_on_item_ms": 10}
    Rating.objects.create(slot=slots[0], rater=alice, idempotency_key="a", **values)
    with pytest.raises(IntegrityError), transaction.atomic():  # a slot holds one rating
        Rating.objects.create(slot=slots[0], rater=bob, idempotency_key="b", **values)
    with pytest.raises(IntegrityError), transaction.atomic():  # one rating per rater and pair
        Rating.objects.create(slot=slots[1], rater=alice, idempotency_key="c", **values)
    with pytest.raises(IntegrityError), transaction.atomic():  # one slot per rater and pair
        RatingSlot.objects.filter(pk__in=[s.pk for s in slots]).update(state=SlotState.DONE, rater=alice)
    for bad in (5.5, -1.0, float("nan")):
        with pytest.raises(IntegrityError), transaction.atomic():
            Rating.objects.create(slot=slots[1], rater=bob, idempotency_key=f"s{bad}", **(values | {"score": bad}))
    assert Rating.objects.count() == 1


def test_scores_are_stored_to_four_decimals(engine, clock):
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=2)
    user = rater()
    # What ten keyboard steps of 0.1 add up to in floating point.
    for key, sent, stored in (("k1", sum([0.1] * 10), 1.0), ("k2", 2.718281828, 2.7183)):
        assert sent != stored
        assignment = claim(user, split.dataset)
        result = submit(user, split.dataset, assignment.slot_id, key, score=sent)
        assert Rating.objects.get(pk=result.rating_id).score == stored
