"""Excluding a rater's ratings with top-up to N, and undoing it (annotation.quality.exclusion)."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.core.errors import Conflict
from annotation.models import (
    ExclusionState,
    Pair,
    QueueCounter,
    Rating,
    RatingExclusion,
    RatingSlot,
    RatingStatus,
    SlotState,
    TaskKind,
)
from annotation.quality.exclusion import services
from annotation.quality.exclusion.chunks import ChunkResult, exclude_chunk, restore_chunk
from annotation.quality.exclusion.services import (
    ExclusionInputError,
    rating_exclusion_create,
    rating_exclusion_run,
    rating_exclusion_undo,
)
from annotation.serving.pairs import pairs_retire
from annotation.serving.pauses import RaterPaused
from tests.factories import SplitFactory, UserFactory
from tests.support.exclusion_support import exclude, pair_problems, rate_all, undo
from tests.support.queue_support import claim, queue_pairs, rater, submit

pytestmark = [pytest.mark.django_db, pytest.mark.sql_paths]

N = 3


def rate_everything(user, dataset, prefix: str) -> int:
    """Claim and rate until the queue has nothing left for ``user``; returns how many."""
    done = 0
    while (assignment := claim(user, dataset)) is not None:
        submit(user, dataset, assignment.slot_id, f"{prefix}-{done}", score=1.0 + done % 3)
        done += 1
    return done


@pytest.fixture
def campaign(clock):
    """Four SIS pairs of N slots, fully rated by three raters (bad rates first)."""
    split = SplitFactory()
    _, pairs = queue_pairs(split=split, n_pairs=4, ratings_per_pair=N)
    bad, good1, good2 = rater(), rater(), rater()
    for number, user in enumerate((bad, good1, good2)):
        assert rate_everything(user, split.dataset, f"r{number}") == 4
        clock.advance(60)
    admin = UserFactory(roles=["admin"])
    return split.dataset, pairs, bad, (good1, good2), admin


def test_excluding_a_rater_marks_their_ratings_and_reopens_one_slot_per_pair(
    campaign, django_capture_on_commit_callbacks
):
    dataset, pairs, bad, _, admin = campaign
    assert QueueCounter.objects.get(dataset=dataset, kind=TaskKind.SIS).pairs_open == 0
    exclusion = exclude(
        django_capture_on_commit_callbacks, dataset=dataset, rater=bad, reason="random scores", created_by=admin
    )
    assert exclusion.state == ExclusionState.APPLIED
    assert (exclusion.ratings_excluded, exclusion.slots_reopened) == (4, 4)
    theirs = Rating.objects.filter(rater=bad)
    assert theirs.count() == 4, "excluded ratings are kept"
    assert set(theirs.values_list("status", "exclusion_id")) == {(RatingStatus.EXCLUDED, exclusion.id)}
    for pair in Pair.objects.filter(id__in=[p.id for p in pairs]):
        assert pair.ratings_done == N - 1
        slots = RatingSlot.objects.filter(pair=pair)
        assert slots.count() == N + 1
        assert list(slots.filter(state=SlotState.OPEN).values_list("index", flat=True)) == [N]
        assert set(slots.values_list("pair_done", "pair_complete")) == {(N - 1, False)}
    assert QueueCounter.objects.get(dataset=dataset, kind=TaskKind.SIS).pairs_open == 4
    assert pair_problems(dataset.id) == []


def test_top_up_slots_go_to_other_raters_and_never_to_the_excluded_one(campaign, django_capture_on_commit_callbacks):
    dataset, pairs, bad, good, admin = campaign
    # keep_active: even an excluded rater left unpaused is never served their own pairs again
    exclude(
        django_capture_on_commit_callbacks,
        dataset=dataset,
        rater=bad,
        reason="spam",
        created_by=admin,
        keep_active=True,
    )
    assert claim(bad, dataset) is None
    assert all(claim(user, dataset) is None for user in good), "they rated these pairs already"
    newcomer = rater()
    assert rate_everything(newcomer, dataset, "new") == 4
    for pair in Pair.objects.filter(id__in=[p.id for p in pairs]):
        valid = pair.ratings.filter(status=RatingStatus.VALID)
        assert pair.ratings_done == N == valid.count() == len(set(valid.values_list("rater_id", flat=True)))
        assert bad.id not in set(valid.values_list("rater_id", flat=True))
    assert QueueCounter.objects.get(dataset=dataset, kind=TaskKind.SIS).pairs_open == 0
    assert pair_problems(dataset.id) == []


def test_a_window_excludes_only_the_ratings_created_in_it(clock, django_capture_on_commit_callbacks):
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=4, ratings_per_pair=N)
    dataset, bad, admin = split.dataset, rater(), UserFactory(roles=["admin"])
    times = []
    for number in range(4):
        assignment = claim(bad, dataset)
        times.append(clock.advance(60))
        submit(bad, dataset, assignment.slot_id, f"w{number}")
    exclusion = exclude(
        django_capture_on_commit_callbacks,
        dataset=dataset,
        rater=bad,
        reason="bad afternoon",
        created_by=admin,
        window_start=times[1],
        window_end=times[3],
    )
    statuses = list(Rating.objects.filter(rater=bad).order_by("created_at").values_list("status", flat=True))
    assert statuses == [RatingStatus.VALID, RatingStatus.EXCLUDED, RatingStatus.EXCLUDED, RatingStatus.VALID]
    assert exclusion.ratings_excluded == 2
    assert pair_problems(dataset.id) == []


def test_ratings_given_after_the_exclusion_stay_valid(campaign, clock, django_capture_on_commit_callbacks):
    dataset, pairs, bad, _, admin = campaign
    _, more = queue_pairs(split=pairs[0].split, n_pairs=1, ratings_per_pair=N)
    assignment = claim(bad, dataset)  # held while the admin excludes
    # keep_active: a paused rater's submit is refused (the policy); the exclusion's own
    # scope, ratings created before it, is what this test is about.
    capture = django_capture_on_commit_callbacks
    exclude(capture, dataset=dataset, rater=bad, reason="spam", created_by=admin, keep_active=True)
    clock.advance(5)
    submit(bad, dataset, assignment.slot_id, "late")
    assert Rating.objects.get(rater=bad, pair=more[0]).status == RatingStatus.VALID
    assert pair_problems(dataset.id) == []


def test_an_excluded_rater_is_paused_and_their_held_item_is_refused(
    campaign, clock, django_capture_on_commit_callbacks
):
    dataset, pairs, bad, _, admin = campaign
    queue_pairs(split=pairs[0].split, n_pairs=1, ratings_per_pair=N)
    assignment = claim(bad, dataset)  # held while the admin excludes
    exclude(django_capture_on_commit_callbacks, dataset=dataset, rater=bad, reason="spam", created_by=admin)
    stored = Rating.objects.filter(rater=bad).count()
    clock.advance(5)
    with pytest.raises(RaterPaused):
        submit(bad, dataset, assignment.slot_id, "late")
    assert Rating.objects.filter(rater=bad).count() == stored


def test_undo_restores_the_ratings_and_closes_the_unrated_top_up_slots(campaign, django_capture_on_commit_callbacks):
    dataset, pairs, bad, _, admin = campaign
    exclusion = exclude(django_capture_on_commit_callbacks, dataset=dataset, rater=bad, reason="x", created_by=admin)
    exclusion = undo(django_capture_on_commit_callbacks, exclusion, admin)
    assert exclusion.state == ExclusionState.UNDONE
    assert (exclusion.ratings_restored, exclusion.ratings_superseded) == (4, 0)
    assert exclusion.undone_by == admin and exclusion.undo_reason == "mistake"
    assert set(Rating.objects.filter(rater=bad).values_list("status", "exclusion_id")) == {(RatingStatus.VALID, None)}
    assert RatingSlot.objects.filter(pair__in=pairs).count() == 4 * N
    assert set(RatingSlot.objects.filter(pair__in=pairs).values_list("pair_done", "pair_complete")) == {(N, True)}
    assert QueueCounter.objects.get(dataset=dataset, kind=TaskKind.SIS).pairs_open == 0
    assert pair_problems(dataset.id) == []


def test_undo_after_the_top_up_keeps_the_top_up_and_supersedes_the_restored(
    campaign, django_capture_on_commit_callbacks
):
    dataset, _pairs, bad, _, admin = campaign
    exclusion = exclude(django_capture_on_commit_callbacks, dataset=dataset, rater=bad, reason="x", created_by=admin)
    newcomer = rater()
    first = claim(newcomer, dataset)
    submit(newcomer, dataset, first.slot_id, "top-up")
    exclusion = undo(django_capture_on_commit_callbacks, exclusion, admin)
    assert (exclusion.ratings_restored, exclusion.ratings_superseded) == (3, 1)
    topped = Pair.objects.get(pk=first.pair_id)
    assert topped.ratings.get(rater=bad).status == RatingStatus.SUPERSEDED
    assert topped.ratings.filter(status=RatingStatus.VALID).count() == N == topped.ratings_done
    assert pair_problems(dataset.id) == []


def test_undo_while_a_top_up_slot_is_leased_lets_the_holder_finish(campaign, django_capture_on_commit_callbacks):
    dataset, _pairs, bad, _, admin = campaign
    exclusion = exclude(django_capture_on_commit_callbacks, dataset=dataset, rater=bad, reason="x", created_by=admin)
    newcomer = rater()
    held = claim(newcomer, dataset)
    undo(django_capture_on_commit_callbacks, exclusion, admin)
    assert Pair.objects.get(pk=held.pair_id).ratings.get(rater=bad).status == RatingStatus.SUPERSEDED
    result = submit(newcomer, dataset, held.slot_id, "work in progress")
    assert Rating.objects.get(pk=result.rating_id).status == RatingStatus.VALID
    assert Pair.objects.get(pk=held.pair_id).ratings_done == N
    assert pair_problems(dataset.id) == []


def test_a_retired_pair_gets_no_slot_and_takes_its_rating_back(campaign, django_capture_on_commit_callbacks):
    dataset, pairs, bad, _, admin = campaign
    pairs_retire(pair_ids=[pairs[0].id])
    exclusion = exclude(django_capture_on_commit_callbacks, dataset=dataset, rater=bad, reason="x", created_by=admin)
    assert exclusion.slots_reopened == 3
    assert RatingSlot.objects.filter(pair=pairs[0]).count() == N
    assert Pair.objects.get(pk=pairs[0].pk).ratings_done == N - 1
    undo(django_capture_on_commit_callbacks, exclusion, admin)
    assert Pair.objects.get(pk=pairs[0].pk).ratings_done == N
    assert pair_problems(dataset.id) == []


def test_undo_is_refused_twice_and_while_applying(campaign, django_capture_on_commit_callbacks):
    dataset, _, bad, _, admin = campaign
    applying = rating_exclusion_create(dataset=dataset, rater=bad, reason="x", created_by=admin)  # task not run
    with pytest.raises(Conflict, match="is applying; only an applied exclusion can be undone"):
        services.rating_exclusion_undo(exclusion_id=applying.id, undone_by=admin)
    rating_exclusion_run(exclusion_id=applying.id)
    undo(django_capture_on_commit_callbacks, applying, admin)
    with pytest.raises(Conflict, match="is undone"):
        services.rating_exclusion_undo(exclusion_id=applying.id, undone_by=admin)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"reason": "  "}, "an exclusion needs a reason"),
        ({"reason": "x" * 2001}, "reason must be at most 2000 characters"),
        ({"window_start": "+1h"}, "window_start .* is in the future"),
        ({"window_start": "-1m", "window_end": "-2m"}, "window_start must be before window_end"),
        ({"window_start": "-1s"}, "has no valid ratings in .* in that time window"),
    ],
)
def test_bad_exclusions_are_refused_with_nothing_written(campaign, clock, changes, message):
    from datetime import timedelta

    dataset, _, bad, _, admin = campaign
    offsets = {"+1h": timedelta(hours=1), "-1m": -timedelta(minutes=1), "-2m": -timedelta(minutes=2)}
    offsets["-1s"] = -timedelta(seconds=1)
    kwargs = {"dataset": dataset, "rater": bad, "reason": "x", "created_by": admin}
    for key, value in changes.items():
        kwargs[key] = clock.now + offsets[value] if key.startswith("window") else value
    with pytest.raises(ExclusionInputError, match=message):
        rating_exclusion_create(**kwargs)
    assert RatingExclusion.objects.count() == 0
    assert not Rating.objects.exclude(status=RatingStatus.VALID).exists()


def test_a_rater_without_ratings_cannot_be_excluded(campaign):
    dataset, _, _, _, admin = campaign
    with pytest.raises(ExclusionInputError, match="has no valid ratings in"):
        rating_exclusion_create(dataset=dataset, rater=rater(), reason="x", created_by=admin)


def test_a_run_that_died_half_way_is_continued(campaign, monkeypatch, django_capture_on_commit_callbacks):
    dataset, _, bad, _, admin = campaign
    exclusion = rating_exclusion_create(dataset=dataset, rater=bad, reason="x", created_by=admin)
    monkeypatch.setattr(services, "CHUNK_PAIRS", 1)
    real_chunk = services.exclude_chunk
    calls = []

    def dying_chunk(**kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("worker lost")
        return real_chunk(**kwargs)

    monkeypatch.setattr(services, "exclude_chunk", dying_chunk)
    with pytest.raises(RuntimeError):
        rating_exclusion_run(exclusion_id=exclusion.id)
    exclusion.refresh_from_db()
    assert (exclusion.state, exclusion.ratings_excluded) == (ExclusionState.APPLYING, 2)
    assert pair_problems(dataset.id) == []
    with django_capture_on_commit_callbacks(execute=True):
        assert services.exclusions_resume() == [exclusion.id]
    exclusion.refresh_from_db()
    assert (exclusion.state, exclusion.ratings_excluded, exclusion.slots_reopened) == (ExclusionState.APPLIED, 4, 4)
    assert pair_problems(dataset.id) == []


# Folded from test_exclusion_chunk_mutants.py:
# Exclusion chunks, the details `make mutation` found untested on their ORM path: an undo
# of one of two exclusions on the same pairs, runs in chunks of one pair, which open slot
# an undo closes, the priority of a top-up slot, and a chunk written twice
# (annotation.quality.exclusion.chunks).


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


def test_a_restore_written_twice_leaves_a_superseded_rating_superseded(campaign):
    """A pair topped up before the undo supersedes the restored rating; a second pass over
    the same pairs finds nothing more to restore there."""
    dataset, pairs, bad, _, admin = campaign
    exclusion = rating_exclusion_create(dataset=dataset, rater=bad, reason="x", created_by=admin)  # not run
    ids = [pair.id for pair in pairs]
    assert exclude_chunk(exclusion=exclusion, pair_ids=ids) == ChunkResult(excluded=4, reopened=4)
    newcomer = rater()
    topped = claim(newcomer, dataset)
    submit(newcomer, dataset, topped.slot_id, "top-up")
    assert restore_chunk(exclusion=exclusion, pair_ids=ids) == ChunkResult(restored=3, superseded=1)
    assert restore_chunk(exclusion=exclusion, pair_ids=ids) == ChunkResult()
    assert Rating.objects.get(rater=bad, pair_id=topped.pair_id).status == RatingStatus.SUPERSEDED
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


# Folded from test_exclusion_mutants.py:
# Exclusions, the details `make mutation` found untested: an undo touches only its own
# exclusion's ratings, a retired pair already back at N supersedes the restored rating, the
# open-pairs counter of another kind is left alone, the undo's time and empty reason, and
# the list's order, queries and not-found text (annotation.quality.exclusion).


PER_PAIR = 2


@pytest.fixture
def rated(clock):
    """Three SIS pairs of N slots rated by two raters, an admin."""
    split = SplitFactory()
    _, pairs = queue_pairs(split=split, n_pairs=3, ratings_per_pair=PER_PAIR)
    first, second = rater(["SIS"]), rater(["SIS"])
    for number, user in enumerate((first, second)):
        assert rate_all(user, split.dataset, f"r{number}") == 3
        clock.advance(60)
    return split.dataset, pairs, first, second, UserFactory(roles=["admin"])


def test_an_undo_restores_only_its_own_exclusions_ratings(rated, django_capture_on_commit_callbacks):
    dataset, _, first, second, admin = rated
    capture = django_capture_on_commit_callbacks
    kept = exclude(capture, dataset=dataset, rater=first, reason="first", created_by=admin)
    undone = exclude(capture, dataset=dataset, rater=second, reason="second", created_by=admin)
    undone = undo(capture, undone, admin)
    assert undone.ratings_restored == 3
    assert set(Rating.objects.filter(rater=first).values_list("status", "exclusion_id")) == {
        (RatingStatus.EXCLUDED, kept.id)
    }
    assert set(Rating.objects.filter(rater=second).values_list("status", flat=True)) == {RatingStatus.VALID}
    assert pair_problems(dataset.id) == []


def test_a_retired_pair_back_at_n_supersedes_the_restored_rating(rated, django_capture_on_commit_callbacks):
    dataset, _pairs, first, _, admin = rated
    exclusion = exclude(django_capture_on_commit_callbacks, dataset=dataset, rater=first, reason="x", created_by=admin)
    newcomer = rater(["SIS"])
    top_up = claim(newcomer, dataset)
    submit(newcomer, dataset, top_up.slot_id, "top-up")
    pairs_retire(pair_ids=[top_up.pair_id])
    undo(django_capture_on_commit_callbacks, exclusion, admin)
    topped = Pair.objects.get(pk=top_up.pair_id)
    assert topped.ratings.get(rater=first).status == RatingStatus.SUPERSEDED
    assert topped.ratings_done == PER_PAIR == topped.ratings.filter(status=RatingStatus.VALID).count()
    assert pair_problems(dataset.id) == []


def test_reopened_pairs_count_in_their_own_kind_only(clock, django_capture_on_commit_callbacks):
    split = SplitFactory()
    queue_pairs(split=split, kind=TaskKind.SIS, n_pairs=2, ratings_per_pair=1)
    queue_pairs(split=split, kind=TaskKind.SITS, n_pairs=2, ratings_per_pair=1)
    dataset, admin = split.dataset, UserFactory(roles=["admin"])
    sis_rater, sits_rater = rater(["SIS"]), rater(["SITS"])
    rate_all(sis_rater, dataset, "sis")
    rate_all(sits_rater, dataset, "sits")
    clock.advance(60)
    exclusion = exclude(
        django_capture_on_commit_callbacks, dataset=dataset, rater=sis_rater, reason="x", created_by=admin
    )
    open_pairs = dict(QueueCounter.objects.filter(dataset=dataset).values_list("kind", "pairs_open"))
    assert open_pairs == {TaskKind.SIS: 2, TaskKind.SITS: 0}
    assert pair_problems(dataset.id) == []
    undo(django_capture_on_commit_callbacks, exclusion, admin)
    open_pairs = dict(QueueCounter.objects.filter(dataset=dataset).values_list("kind", "pairs_open"))
    assert open_pairs == {TaskKind.SIS: 0, TaskKind.SITS: 0}
    assert pair_problems(dataset.id) == []


def test_an_undo_is_stamped_with_its_time_and_keeps_an_empty_reason(rated, django_capture_on_commit_callbacks):
    dataset, _, first, _, admin = rated
    exclusion = exclude(django_capture_on_commit_callbacks, dataset=dataset, rater=first, reason="x", created_by=admin)
    when = exclusion.created_at + timedelta(days=3)
    with django_capture_on_commit_callbacks(execute=True):
        rating_exclusion_undo(exclusion_id=exclusion.id, undone_by=admin, now=when)
    exclusion.refresh_from_db()
    assert (exclusion.undone_at, exclusion.undo_reason, exclusion.undone_by) == (when, "", admin)


def url(dataset, *rest):
    return "/".join([f"/api/datasets/{dataset.name}/exclusions", *map(str, rest), ""])


def test_the_list_is_newest_first_in_constant_queries_and_a_missing_one_is_named(
    admin_api, rated, clock, django_capture_on_commit_callbacks
):
    dataset, _, first, second, admin = rated
    capture = django_capture_on_commit_callbacks
    later = clock() + timedelta(seconds=20)
    made_later = exclude(capture, dataset=dataset, rater=first, reason="a", created_by=admin, now=later)
    made_earlier = exclude(
        capture, dataset=dataset, rater=second, reason="b", created_by=admin, now=later - timedelta(seconds=10)
    )
    third = rater(["SIS"])
    assert rate_all(third, dataset, "third") == 3, "the top-ups"
    admin_api.get(url(dataset))
    with CaptureQueriesContext(connection) as two_rows:
        assert [row["id"] for row in admin_api.get(url(dataset)).json()][:1] == [made_later.id]
    same_time = exclude(capture, dataset=dataset, rater=third, reason="c", created_by=admin, now=later)
    undo(capture, made_earlier, admin)
    with CaptureQueriesContext(connection) as three_rows:
        listed = admin_api.get(url(dataset)).json()
    assert [row["id"] for row in listed] == [same_time.id, made_later.id, made_earlier.id]
    assert len(three_rows) == len(two_rows), "the people and the dataset come with the rows"
    missing = admin_api.get(url(dataset, 999999))
    assert (missing.status_code, missing.json()["detail"]) == (404, f"no exclusion #999999 in {dataset.name}")


@pytest.mark.parametrize(
    ("start", "end", "scope"),
    [
        (None, None, "all ratings"),
        (-150, -100, "ratings from {start} to {end}"),
        (-150, None, "ratings from {start} to now"),
        (None, -10, "ratings from the first to {end}"),
    ],
)
def test_a_twin_exclusion_is_refused_naming_the_rater_window_and_exclusion(
    rated, clock, django_capture_on_commit_callbacks, start, end, scope
):
    dataset, _, first, _, admin = rated
    now = clock()
    window = {
        "window_start": None if start is None else now + timedelta(seconds=start),
        "window_end": None if end is None else now + timedelta(seconds=end),
    }
    made = exclude(
        django_capture_on_commit_callbacks, dataset=dataset, rater=first, reason="x", created_by=admin, **window
    )
    text = scope.format(
        start=window["window_start"] and window["window_start"].isoformat(),
        end=window["window_end"] and window["window_end"].isoformat(),
    )
    expected = (
        f"{first.username}'s {text} in {dataset.name} are already excluded by exclusion #{made.id} (applied); "
        "undo it first, or give a window that starts after it"
    )
    with pytest.raises(Conflict) as refused:
        rating_exclusion_create(dataset=dataset, rater=first, reason="again", created_by=admin, **window)
    assert str(refused.value) == expected
