"""Skip and flag a held slot, and the rater's progress they change. Every test taking
``engine`` runs on each engine (see queue_support.engine)."""

from __future__ import annotations

from zoneinfo import ZoneInfo

import pytest

from annotation.core.errors import Forbidden
from annotation.models import Flag, FlagReason, PairSkip, Rating, RatingSlot, SlotState, TaskKind
from annotation.rating.progress import rater_progress
from annotation.serving import QueueInputError, slot_flag, slot_skip
from tests.factories import SplitFactory
from tests.support import queue_support
from tests.support.queue_support import claim, queue_pairs, rater, submit

pytestmark = pytest.mark.django_db

engine = queue_support.engine  # every test taking it runs on each engine


def test_skip_returns_the_slot_and_is_repeatable(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    _, (pair,) = queue_pairs(split=split)
    alice, bob = rater(), rater()
    held = claim(alice, dataset)
    assert slot_skip(rater=alice, dataset=dataset.name, slot_id=held.slot_id) == pair.id
    assert slot_skip(rater=alice, dataset=dataset.name, slot_id=held.slot_id) == pair.id
    slot = RatingSlot.objects.get(pk=held.slot_id)
    assert (slot.state, slot.rater_id) == (SlotState.OPEN, None)
    assert PairSkip.objects.filter(pair=pair, rater=alice).count() == 1
    assert claim(alice, dataset) is None
    assert claim(bob, dataset).pair_id == pair.id
    with pytest.raises(Forbidden):
        slot_skip(rater=rater(), dataset=dataset.name, slot_id=held.slot_id)


def test_flag_records_for_admins_and_returns_the_slot(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    queue_pairs(split=split, n_pairs=2)
    alice = rater()
    held = claim(alice, dataset)
    flag = slot_flag(
        rater=alice, dataset=dataset.name, slot_id=held.slot_id, reason=FlagReason.BROKEN_IMAGE, note=" no pixels "
    )
    assert (flag.pair_id, flag.rater_id, flag.reason, flag.note, flag.resolved) == (
        held.pair_id,
        alice.id,
        "broken_image",
        "no pixels",
        False,
    )
    assert RatingSlot.objects.get(pk=held.slot_id).state == SlotState.OPEN
    again = slot_flag(rater=alice, dataset=dataset.name, slot_id=held.slot_id, reason=FlagReason.BROKEN_IMAGE)
    assert again.pk == flag.pk
    nxt = claim(alice, dataset)
    assert nxt.pair_id != held.pair_id
    # A pair already rated can still be reported; the rating stays.
    submit(alice, dataset, nxt.slot_id, "k")
    slot_flag(rater=alice, dataset=dataset.name, slot_id=nxt.slot_id, reason=FlagReason.INAPPROPRIATE)
    assert Rating.objects.filter(slot_id=nxt.slot_id).exists()
    assert Flag.objects.count() == 2
    with pytest.raises(QueueInputError, match="reason must be one of"):
        slot_flag(rater=alice, dataset=dataset.name, slot_id=nxt.slot_id, reason="ugly")
    with pytest.raises(QueueInputError, match="needs a note"):
        slot_flag(rater=alice, dataset=dataset.name, slot_id=nxt.slot_id, reason=FlagReason.OTHER, note=" ")
    with pytest.raises(Forbidden):
        slot_flag(rater=rater(), dataset=dataset.name, slot_id=nxt.slot_id, reason=FlagReason.INAPPROPRIATE)
    assert Flag.objects.count() == 2


def test_progress_counts_today_and_pairs_left(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    queue_pairs(split=split, n_pairs=4)
    queue_pairs(split=split, kind=TaskKind.STS, n_pairs=2)
    alice = rater(kinds=["SIS"])
    progress = rater_progress(rater=alice, dataset=dataset.name)
    assert (progress.ratings_today, progress.pairs_left, progress.held_slot_id) == (0, 4, None)
    first = claim(alice, dataset)
    progress = rater_progress(rater=alice, dataset=dataset.name)
    assert (progress.pairs_left, progress.held_slot_id) == (4, first.slot_id)
    submit(alice, dataset, first.slot_id, "a")
    slot_skip(rater=alice, dataset=dataset.name, slot_id=claim(alice, dataset).slot_id)
    progress = rater_progress(rater=alice, dataset=dataset.name)
    assert (progress.ratings_today, progress.pairs_left, progress.kinds) == (1, 2, ["SIS"])
    # Midnight passes in Berlin (UTC+1 in March) before it passes in UTC.
    clock.now = clock.now.replace(hour=23, minute=30)
    berlin = rater_progress(rater=alice, dataset=dataset.name, tz=ZoneInfo("Europe/Berlin"))
    utc = rater_progress(rater=alice, dataset=dataset.name)
    assert (berlin.ratings_today, utc.ratings_today) == (0, 1)
