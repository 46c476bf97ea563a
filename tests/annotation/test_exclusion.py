"""Excluding a rater's ratings with top-up to N, and undoing it (annotation.quality.exclusion)."""

import pytest

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
from annotation.quality.exclusion.services import ExclusionInputError, rating_exclusion_create, rating_exclusion_run
from annotation.serving.pairs import pairs_retire
from annotation.serving.pauses import RaterPaused
from tests.factories import SplitFactory, UserFactory
from tests.support.exclusion_support import exclude, pair_problems, undo
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
