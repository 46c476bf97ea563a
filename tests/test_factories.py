"""The pair, slot and rating factories write what the real services write."""

import pytest

from annotation.models import QueueCounter, RatingSlot, SlotState, TaskKind
from tests.factories import (
    CaptionFactory,
    ImageFactory,
    PairFactory,
    RatingFactory,
    RatingSlotFactory,
    SplitFactory,
    UserFactory,
)
from tests.support.rating_support import rate_pair

pytestmark = pytest.mark.django_db


def open_pairs(pair) -> int:
    return QueueCounter.objects.get(dataset_id=pair.dataset_id, kind=pair.kind).pairs_open


@pytest.mark.parametrize("kind", [TaskKind.STS, TaskKind.SIS, TaskKind.SITS])
def test_pair_factory_queues_a_pair_of_its_kind_with_open_slots_and_counts_it(kind):
    pair = PairFactory(kind=kind, batch__ratings_per_pair=3)
    if kind == TaskKind.STS:
        assert pair.caption_a.image_id == pair.caption_b.image_id and pair.caption_a_id < pair.caption_b_id
    elif kind == TaskKind.SIS:
        assert pair.image_a_id < pair.image_b_id and pair.caption_a_id is None
    else:
        assert pair.caption_a.image_id == pair.image_a_id and pair.image_b_id is None
    assert (pair.dataset_id, pair.split_id) == (pair.batch.dataset_id, pair.batch.split_id)
    slots = list(pair.slots.order_by("index").values_list("index", "state", "kind", "dataset_id"))
    assert slots == [(i, SlotState.OPEN, kind, pair.dataset_id) for i in range(3)]
    assert open_pairs(pair) == 1


def test_pair_factory_stores_given_items_canonically_and_refuses_a_repeat():
    split = SplitFactory()
    first, second = ImageFactory(split=split), ImageFactory(split=split)
    pair = PairFactory(batch__split=split, image_a=second, image_b=first)
    assert (pair.image_a_id, pair.image_b_id) == (first.id, second.id)
    with pytest.raises(ValueError, match="already has the SIS pair"):
        PairFactory(batch=pair.batch, image_a=first, image_b=second)
    caption = CaptionFactory(image=first)
    sits = PairFactory(batch=pair.batch, kind=TaskKind.SITS, caption_a=caption, image_a=first)
    assert (sits.caption_a_id, sits.image_a_id) == (caption.id, first.id)


def test_rating_factory_and_rate_pair_leave_counts_as_the_rating_service_does():
    pair = PairFactory(batch__ratings_per_pair=3)
    rating = RatingFactory(pair=pair, score=4.5)
    assert (rating.score, rating.slot.index, rating.slot.state) == (4.5, 0, SlotState.DONE)
    assert rating.slot.rater_id == rating.rater_id
    rate_pair(pair, [1.0, 2.0])
    assert pair.ratings_done == 3
    assert set(RatingSlot.objects.filter(pair=pair).values_list("state", "pair_done", "pair_complete")) == {
        (SlotState.DONE, 3, True)
    }
    assert open_pairs(pair) == 0
    with pytest.raises(ValueError, match="0 open slots, too few for 1 ratings"):
        rate_pair(pair, [3.0])


def test_rate_pair_refuses_mismatched_lengths():
    pair = PairFactory()
    with pytest.raises(ValueError, match="2 scores need as many raters"):
        rate_pair(pair, [1.0, 2.0], raters=[UserFactory(password=None)])


def test_rating_slot_factory_looks_up_the_slot_the_service_made():
    slot = RatingSlotFactory(index=1)
    assert (slot.index, slot.state, slot.pair.ratings_required) == (1, SlotState.OPEN, 5)
    with pytest.raises(TypeError, match="not \\['state'\\]"):
        RatingSlotFactory(pair=slot.pair, state=SlotState.DONE)
    with pytest.raises(ValueError, match="has no slot 9"):
        RatingSlotFactory(pair=slot.pair, index=9)
