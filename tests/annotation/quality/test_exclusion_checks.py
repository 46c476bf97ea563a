"""Exclusions, more details `make mutation` found untested: the exact refusals (no reason,
a window ending in the future or empty, nothing valid left to exclude), which exclusions
are twins and which are not, the preview an admin confirms, the pause an exclusion makes
and how a run finishes (annotation.quality.exclusion)."""

from datetime import timedelta

import pytest

from annotation.core.errors import NotFound
from annotation.models import ExclusionPause, ExclusionState, RaterPause, Rating, RatingExclusion, RatingStatus
from annotation.quality.exclusion import services
from annotation.quality.exclusion.chunks import rating_scope
from annotation.quality.exclusion.services import (
    MAX_REASON,
    ExclusionInputError,
    rating_exclusion_create,
    rating_exclusion_preview,
    rating_exclusion_run,
    rating_exclusion_undo,
)
from tests.factories import SplitFactory, UserFactory
from tests.support.exclusion_support import exclude, pair_problems, undo
from tests.support.queue_support import claim, queue_pairs, rater, submit

pytestmark = pytest.mark.django_db

MINUTE = 60


def rate_minutely(user, dataset, clock, prefix):
    """Rate everything ``user`` is served, one rating a minute; returns the times."""
    times = []
    while (assignment := claim(user, dataset)) is not None:
        times.append(clock())
        submit(user, dataset, assignment.slot_id, f"{prefix}-{len(times)}")
        clock.advance(MINUTE)
    return times


def rated_elsewhere(user, clock, n_pairs: int):
    """A dataset of its own with ``n_pairs`` SIS pairs, all rated by ``user``."""
    other = SplitFactory()
    queue_pairs(split=other, n_pairs=n_pairs, ratings_per_pair=2)
    assert len(rate_minutely(user, other.dataset, clock, "other")) == n_pairs
    return other.dataset


@pytest.fixture
def rated(clock):
    """Three SIS pairs of 2 slots: ``first`` rated them at t0, t0+1m, t0+2m, ``second``
    at t0+3m..t0+5m; the clock stands at t0+6m."""
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=3, ratings_per_pair=2)
    first, second = rater(["SIS"]), rater(["SIS"])
    times = rate_minutely(first, split.dataset, clock, "first")
    assert len(times) == 3 and len(rate_minutely(second, split.dataset, clock, "second")) == 3
    return split.dataset, first, second, UserFactory(roles=["admin"]), times


def refusal(**kwargs) -> str:
    with pytest.raises(ExclusionInputError) as refused:
        rating_exclusion_create(**kwargs)
    return str(refused.value)


def test_each_refusal_says_exactly_what_is_wrong(rated, clock):
    dataset, first, _, admin, times = rated
    base = {"dataset": dataset, "rater": first, "created_by": admin}
    assert refusal(**base, reason=None) == "an exclusion needs a reason (it is kept with the excluded ratings)"
    future = clock() + timedelta(seconds=1)
    assert refusal(**base, reason="x", window_end=future) == f"window_end {future.isoformat()} is in the future"
    empty = {"window_start": times[1], "window_end": times[1]}
    assert refusal(**base, reason="x", **empty) == "window_start must be before window_end"
    newcomer = rater(["SIS"])
    assert refusal(**{**base, "rater": newcomer}, reason="x") == (
        f"{newcomer.username} has no valid ratings in {dataset.name}"
    )
    before_all = times[0] - timedelta(seconds=1)
    assert refusal(**base, reason="x", window_end=before_all) == (
        f"{first.username} has no valid ratings in {dataset.name} in that time window"
    )
    assert not RatingExclusion.objects.exists()


def test_a_reason_of_exactly_the_limit_is_kept_whole(rated, django_capture_on_commit_callbacks):
    dataset, first, _, admin, _ = rated
    reason = "r" * MAX_REASON
    made = exclude(django_capture_on_commit_callbacks, dataset=dataset, rater=first, reason=reason, created_by=admin)
    assert (made.state, made.reason) == (ExclusionState.APPLIED, reason)


def test_a_window_holding_only_ratings_excluded_already_is_refused(rated, django_capture_on_commit_callbacks):
    """Another window is no twin, but with nothing valid in it there is nothing to exclude."""
    dataset, first, _, admin, times = rated
    exclude(django_capture_on_commit_callbacks, dataset=dataset, rater=first, reason="all", created_by=admin)
    assert refusal(dataset=dataset, rater=first, reason="again", created_by=admin, window_start=times[0]) == (
        f"{first.username} has no valid ratings in {dataset.name} in that time window"
    )


def test_an_undone_exclusion_does_not_block_excluding_again(rated, django_capture_on_commit_callbacks):
    dataset, first, _, admin, _ = rated
    capture = django_capture_on_commit_callbacks
    undone = undo(capture, exclude(capture, dataset=dataset, rater=first, reason="x", created_by=admin), admin)
    again = exclude(capture, dataset=dataset, rater=first, reason="after all", created_by=admin)
    assert (undone.state, again.state, again.ratings_excluded) == (ExclusionState.UNDONE, ExclusionState.APPLIED, 3)


@pytest.mark.sql_paths
def test_exclusions_in_another_dataset_or_up_to_another_end_are_no_twins(
    rated, clock, django_capture_on_commit_callbacks
):
    dataset, first, _, admin, times = rated
    capture = django_capture_on_commit_callbacks
    other = rated_elsewhere(first, clock, n_pairs=1)
    exclude(capture, dataset=other, rater=first, reason="there", created_by=admin)
    early = exclude(capture, dataset=dataset, rater=first, reason="early", created_by=admin, window_end=times[1])
    later = exclude(capture, dataset=dataset, rater=first, reason="later", created_by=admin, window_end=times[2])
    assert (early.ratings_excluded, later.ratings_excluded) == (1, 1)
    assert Rating.objects.get(rater=first, created_at=times[2]).status == RatingStatus.VALID
    rest = exclude(capture, dataset=dataset, rater=first, reason="all here", created_by=admin)
    assert (rest.state, rest.ratings_excluded) == (ExclusionState.APPLIED, 1)
    assert pair_problems(dataset.id) == [] and pair_problems(other.id) == []


def test_the_preview_counts_the_valid_ratings_and_pairs_in_scope_and_writes_nothing(
    rated, clock, django_capture_on_commit_callbacks
):
    dataset, first, _, admin, times = rated
    capture = django_capture_on_commit_callbacks
    rated_elsewhere(first, clock, n_pairs=2)  # not this dataset's
    exclude(capture, dataset=dataset, rater=first, reason="first", created_by=admin, window_end=times[1])
    made = RatingExclusion.objects.count()
    exclusion, reach = rating_exclusion_preview(dataset=dataset, rater=first, reason=" all the rest ")
    assert exclusion.pk is None, "not saved"
    assert (exclusion.rater, exclusion.dataset, exclusion.reason) == (first, dataset, "all the rest")
    assert (reach.ratings, reach.pairs) == (2, 2), "the one excluded already and the other dataset's are not hit"
    _, then = rating_exclusion_preview(dataset=dataset, rater=first, reason="r", now=times[2])
    assert (then.ratings, then.pairs) == (1, 1), "ratings given from now on are out of scope"
    assert RatingExclusion.objects.count() == made
    assert Rating.objects.filter(rater=first, status=RatingStatus.VALID).count() == 4


def test_the_preview_of_an_admin_asks_for_keep_active(rated):
    dataset, _, _, admin, _ = rated
    with pytest.raises(ExclusionInputError, match=r"is an admin .* exclude with keep_active to leave them unpaused$"):
        rating_exclusion_preview(dataset=dataset, rater=admin, reason="r")
    with pytest.raises(ExclusionInputError) as refused:
        rating_exclusion_preview(dataset=dataset, rater=admin, reason="r", keep_active=True)
    assert str(refused.value) == f"{admin.username} has no valid ratings in {dataset.name}"


def test_the_pause_an_exclusion_makes_names_the_admin_and_its_time(rated, clock, django_capture_on_commit_callbacks):
    dataset, first, _, admin, _ = rated
    when = clock() - timedelta(seconds=30)
    clock.advance(MINUTE)
    made = exclude(
        django_capture_on_commit_callbacks, dataset=dataset, rater=first, reason="spam", created_by=admin, now=when
    )
    pause = RaterPause.objects.get(rater=first, dataset=dataset)
    assert (pause.created_by, pause.created_at, pause.reason) == (admin, when, f"excluded (exclusion #{made.pk}): spam")
    assert (made.pause, made.created_at, made.applied_at) == (ExclusionPause.PAUSED, when, clock())


@pytest.mark.sql_paths
def test_running_one_exclusion_leaves_another_still_applying(rated):
    dataset, first, second, admin, _ = rated
    run = rating_exclusion_create(dataset=dataset, rater=first, reason="a", created_by=admin)
    waiting = rating_exclusion_create(dataset=dataset, rater=second, reason="b", created_by=admin)
    assert rating_exclusion_run(exclusion_id=run.pk).state == ExclusionState.APPLIED
    waiting.refresh_from_db()
    assert (waiting.state, waiting.applied_at, waiting.ratings_excluded) == (ExclusionState.APPLYING, None, 0)
    assert set(Rating.objects.filter(rater=second).values_list("status", flat=True)) == {RatingStatus.VALID}


@pytest.mark.sql_paths
def test_a_slow_run_does_not_mark_applied_an_exclusion_undone_meanwhile(rated, monkeypatch):
    """Two runs of one exclusion: the other one finished and an admin undid it while this
    one was still at its chunks; this one's end must leave the undo standing."""
    dataset, first, _, admin, _ = rated
    exclusion = rating_exclusion_create(dataset=dataset, rater=first, reason="x", created_by=admin)
    real_chunk, raced = services.exclude_chunk, []

    def chunk_while_the_other_run_ends(**kwargs):
        result = real_chunk(**kwargs)
        if not raced:
            raced.append(True)
            assert rating_exclusion_run(exclusion_id=exclusion.pk).state == ExclusionState.APPLIED
            rating_exclusion_undo(exclusion_id=exclusion.pk, undone_by=admin)
        return result

    monkeypatch.setattr(services, "exclude_chunk", chunk_while_the_other_run_ends)
    assert rating_exclusion_run(exclusion_id=exclusion.pk).state == ExclusionState.UNDOING
    assert rating_exclusion_run(exclusion_id=exclusion.pk).state == ExclusionState.UNDONE
    assert set(Rating.objects.filter(rater=first).values_list("status", flat=True)) == {RatingStatus.VALID}
    assert pair_problems(dataset.id) == []


def _run_with_a_rating_stored_behind_the_first_chunk(clock, monkeypatch, *, kept_bound: bool):
    """An exclusion of a rater with 2 ratings whose third (held) pair is rated while the
    run is past it, its time read before the exclusion. ``kept_bound`` False: the
    exclusion is one made before ``ratings_through`` was kept. Returns (run exclusion,
    rater, dataset)."""
    split = SplitFactory()
    _, (held_pair,) = queue_pairs(split=split, n_pairs=1, ratings_per_pair=2)
    queue_pairs(split=split, n_pairs=2, ratings_per_pair=2, priority=5)  # higher ids, served first
    dataset, bad, admin = split.dataset, rater(["SIS"]), UserFactory(roles=["admin"])
    for number in range(2):
        submit(bad, dataset, claim(bad, dataset).slot_id, f"b{number}")
    held = claim(bad, dataset)
    assert held.pair_id == held_pair.id
    exclusion = rating_exclusion_create(
        dataset=dataset, rater=bad, reason="x", created_by=admin, keep_active=True, now=clock() + timedelta(seconds=5)
    )
    if not kept_bound:
        RatingExclusion.objects.filter(pk=exclusion.pk).update(ratings_through=None)
    real_chunk = services.exclude_chunk

    def chunk_then_the_held_rating_commits(**kwargs):
        result = real_chunk(**kwargs)
        if not Rating.objects.filter(pair=held_pair, rater=bad).exists():
            submit(bad, dataset, held.slot_id, "late")
        return result

    monkeypatch.setattr(services, "exclude_chunk", chunk_then_the_held_rating_commits)
    return rating_exclusion_run(exclusion_id=exclusion.pk), bad, dataset


@pytest.mark.sql_paths
def test_a_rating_stored_behind_the_pass_of_an_exclusion_without_its_bound_is_excluded_by_the_next_pass(
    clock, monkeypatch
):
    """Without ``ratings_through`` (made before it was kept) the scope is the time alone:
    the run passes over the pairs again until a pass finds nothing."""
    done, bad, dataset = _run_with_a_rating_stored_behind_the_first_chunk(clock, monkeypatch, kept_bound=False)
    assert (done.state, done.ratings_excluded, done.slots_reopened) == (ExclusionState.APPLIED, 3, 3)
    assert set(Rating.objects.filter(rater=bad).values_list("status", flat=True)) == {RatingStatus.EXCLUDED}
    assert pair_problems(dataset.id) == []


@pytest.mark.sql_paths
def test_a_rating_stored_after_the_exclusion_was_made_is_outside_it_whatever_its_time(clock, monkeypatch):
    done, bad, dataset = _run_with_a_rating_stored_behind_the_first_chunk(clock, monkeypatch, kept_bound=True)
    assert (done.state, done.ratings_excluded, done.slots_reopened) == (ExclusionState.APPLIED, 2, 2)
    late = Rating.objects.get(rater=bad, idempotency_key="late")
    assert late.status == RatingStatus.VALID and late.created_at < done.created_at
    assert not Rating.objects.filter(rating_scope(done), status=RatingStatus.VALID).exists()
    assert pair_problems(dataset.id) == []


def test_undoing_an_unknown_exclusion_names_it():
    with pytest.raises(NotFound) as missing:
        rating_exclusion_undo(exclusion_id=999999, undone_by=UserFactory(roles=["admin"]))
    assert str(missing.value) == "no exclusion #999999"
