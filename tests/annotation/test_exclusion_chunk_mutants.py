"""Exclusion chunks, the details `make mutation` found untested on their ORM path: an undo
of one of two exclusions on the same pairs, runs in chunks of one pair, which open slot
an undo closes, the priority of a top-up slot, and a chunk written twice
(annotation.quality.exclusion.chunks)."""

import pytest

from annotation.models import Rating, RatingExclusion, RatingSlot, RatingStatus, SlotState
from annotation.quality.exclusion import services
from annotation.quality.exclusion.chunks import ChunkResult, exclude_chunk, restore_chunk
from annotation.quality.exclusion.services import rating_exclusion_create
from tests.factories import SplitFactory, UserFactory
from tests.support.exclusion_support import exclude, pair_problems, rate_all, undo
from tests.support.queue_support import claim, queue_pairs, rater, submit

pytestmark = [pytest.mark.django_db, pytest.mark.sql_paths]


@pytest.fixture
def two_on_three(clock):
    """Three SIS pairs of 3 slots, each rated by ``first`` and ``second``; an admin."""
    split = SplitFactory()
    _, pairs = queue_pairs(split=split, n_pairs=3, ratings_per_pair=3)
    first, second = rater(["SIS"]), rater(["SIS"])
    assert rate_all(first, split.dataset, "a") == rate_all(second, split.dataset, "b") == 3
    clock.advance(60)
    return split.dataset, pairs, first, second, UserFactory(roles=["admin"])


def statuses(user):
    return set(Rating.objects.filter(rater=user).values_list("status", "exclusion_id"))


def test_undoing_the_earlier_of_two_exclusions_on_the_same_pairs_restores_only_its_ratings(
    two_on_three, django_capture_on_commit_callbacks
):
    dataset, _, first, second, admin = two_on_three
    capture = django_capture_on_commit_callbacks
    earlier = exclude(capture, dataset=dataset, rater=first, reason="first", created_by=admin)
    later = exclude(capture, dataset=dataset, rater=second, reason="second", created_by=admin)
    earlier = undo(capture, earlier, admin)
    assert (earlier.ratings_restored, earlier.ratings_superseded) == (3, 0)
    assert statuses(first) == {(RatingStatus.VALID, None)}
    assert statuses(second) == {(RatingStatus.EXCLUDED, later.id)}
    assert pair_problems(dataset.id) == []


def test_an_exclusion_and_its_undo_in_chunks_of_one_pair_cover_every_pair(
    two_on_three, monkeypatch, django_capture_on_commit_callbacks
):
    dataset, _, first, _, admin = two_on_three
    monkeypatch.setattr(services, "CHUNK_PAIRS", 1)
    capture = django_capture_on_commit_callbacks
    exclusion = exclude(capture, dataset=dataset, rater=first, reason="x", created_by=admin)
    assert (exclusion.ratings_excluded, exclusion.slots_reopened) == (3, 3)
    assert pair_problems(dataset.id) == []
    exclusion = undo(capture, exclusion, admin)
    assert (exclusion.ratings_restored, exclusion.ratings_superseded) == (3, 0)
    assert statuses(first) == {(RatingStatus.VALID, None)}
    assert pair_problems(dataset.id) == []


def test_an_undo_closes_the_top_up_slot_and_keeps_the_slot_the_pair_still_had_open(
    clock, django_capture_on_commit_callbacks
):
    """A pair one rating short: the exclusion opens slot N beside the open slot N-1; the
    undo closes slot N, so the pair's slots are again 0 .. N-1."""
    split = SplitFactory()
    _, (pair,) = queue_pairs(split=split, n_pairs=1, ratings_per_pair=3)
    dataset, bad, good, admin = split.dataset, rater(["SIS"]), rater(["SIS"]), UserFactory(roles=["admin"])
    rate_all(bad, dataset, "bad")
    rate_all(good, dataset, "good")
    clock.advance(60)
    capture = django_capture_on_commit_callbacks
    exclusion = exclude(capture, dataset=dataset, rater=bad, reason="x", created_by=admin)
    slots = RatingSlot.objects.filter(pair=pair)
    assert list(slots.filter(state=SlotState.OPEN).order_by("index").values_list("index", flat=True)) == [2, 3]
    undo(capture, exclusion, admin)
    assert list(slots.order_by("index").values_list("index", "state")) == [
        (0, SlotState.DONE),
        (1, SlotState.DONE),
        (2, SlotState.OPEN),
    ]
    assert pair_problems(dataset.id) == []


def test_a_top_up_slot_is_served_with_its_pairs_priority(clock, django_capture_on_commit_callbacks):
    """The urgent pair's top-up comes before an ordinary pair's open slot of the same
    progress, though the ordinary pair is older."""
    split = SplitFactory()
    _, (ordinary,) = queue_pairs(split=split, n_pairs=1, ratings_per_pair=3)
    _, (urgent,) = queue_pairs(split=split, n_pairs=1, ratings_per_pair=2, priority=5)
    dataset, bad, good, admin = split.dataset, rater(["SIS"]), rater(["SIS"]), UserFactory(roles=["admin"])
    for user in (bad, good):
        assignment = claim(user, dataset)
        assert assignment.pair_id == urgent.id
        submit(user, dataset, assignment.slot_id, "urgent")
    submit(good, dataset, claim(good, dataset).slot_id, "ordinary")
    clock.advance(60)
    exclude(django_capture_on_commit_callbacks, dataset=dataset, rater=bad, reason="x", created_by=admin)
    assert ordinary.id < urgent.id and ordinary.ratings.count() == 1 == urgent.ratings.filter(rater=good).count()
    assert claim(rater(["SIS"]), dataset).pair_id == urgent.id
    assert pair_problems(dataset.id) == []


def test_a_chunk_written_twice_changes_nothing_the_second_time(two_on_three):
    """Two runs of one exclusion may hand the same pairs to a chunk, one after the other."""
    dataset, pairs, first, _, admin = two_on_three
    exclusion = rating_exclusion_create(dataset=dataset, rater=first, reason="x", created_by=admin)  # not run
    ids = [pair.id for pair in pairs]
    assert exclude_chunk(exclusion=exclusion, pair_ids=ids) == ChunkResult(excluded=3, reopened=3)
    assert exclude_chunk(exclusion=exclusion, pair_ids=ids) == ChunkResult()
    assert pair_problems(dataset.id) == []
    assert restore_chunk(exclusion=exclusion, pair_ids=ids) == ChunkResult(restored=3)
    assert restore_chunk(exclusion=exclusion, pair_ids=ids) == ChunkResult()
    assert statuses(first) == {(RatingStatus.VALID, None)}
    assert pair_problems(dataset.id) == []


IDLE = ChunkResult()


def run_scripted(passes: list[list[ChunkResult]]) -> list[list[int]]:
    """Runs an exclusion's passes as scripted: ``passes[k]`` holds what each chunk of pass
    k (one pair each: 1, 2 ...) changes; every pass after the last finds nothing. Returns
    the pairs of each chunk written. A run asking for pairs past 20 passes fails the test
    (only a run looping for ever does that)."""
    place = {"pass": -1, "chunk": 0}
    written = []

    def next_pairs(exclusion, after):
        if after == 0:
            place["pass"], place["chunk"] = place["pass"] + 1, 0
        if place["pass"] > 20:
            raise AssertionError("the run asks for pairs without end")
        chunks = passes[place["pass"]] if place["pass"] < len(passes) else []
        return [after + 1] if place["chunk"] < len(chunks) else []

    def write_chunk(*, exclusion, pair_ids):
        written.append(list(pair_ids))
        place["chunk"] += 1
        return passes[place["pass"]][place["chunk"] - 1]

    services._run_chunks(RatingExclusion(), next_pairs, write_chunk)
    return written


@pytest.mark.parametrize(
    "change",
    [
        ChunkResult(excluded=1),
        ChunkResult(restored=1),
        ChunkResult(superseded=1),
        ChunkResult(restored=1, superseded=1),
        ChunkResult(excluded=1, restored=1),
    ],
    ids=repr,
)
def test_passes_that_change_ratings_go_on_until_a_pass_finds_nothing(change):
    assert run_scripted([[change, change], [change], [change]]) == [[1], [2], [1], [1]]


@pytest.mark.parametrize(
    "passes",
    [
        [[IDLE], [IDLE]],
        [[IDLE], [ChunkResult(excluded=1)], [IDLE], [IDLE]],
        [[ChunkResult(excluded=1), IDLE]] * 3,
    ],
    ids=["two-idle-passes", "idle-passes-apart", "progress-in-an-early-chunk"],
)
def test_fewer_than_three_idle_passes_in_a_row_end_normally(passes):
    """A pass that changes nothing happens when a second run of the exclusion took its
    pairs first; progress anywhere in a pass makes it no idle pass."""
    assert len(run_scripted(passes)) == sum(len(chunks) for chunks in passes)


def test_three_idle_passes_in_a_row_raise_instead_of_looping():
    with pytest.raises(services.ExclusionStalled) as stalled:
        run_scripted([[IDLE, IDLE]] * 3)
    assert str(stalled.value) == "exclusion #None: 3 passes in a row found pairs to handle and changed none"


@pytest.mark.parametrize(("answer", "message"), [([1], "after 1 began at 1"), ([1, 2], "after 2 began at 1")])
def test_pairs_that_do_not_move_on_raise_instead_of_looping(answer, message):
    calls = []

    def next_pairs(exclusion, after):
        calls.append(after)
        if len(calls) > 100:
            raise AssertionError("the run asks for pairs without end")
        return answer

    def write_chunk(*, exclusion, pair_ids):
        return ChunkResult(excluded=1)

    with pytest.raises(services.ExclusionStalled) as stalled:
        services._run_chunks(RatingExclusion(), next_pairs, write_chunk)
    assert str(stalled.value) == f"exclusion #None: the pairs {message}"
