"""Exclusions, the details `make mutation` found untested: an undo touches only its own
exclusion's ratings, a retired pair already back at N supersedes the restored rating, the
open-pairs counter of another kind is left alone, the undo's time and empty reason, and
the list's order, queries and not-found text (annotation.quality.exclusion)."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.core.errors import Conflict
from annotation.models import Pair, QueueCounter, Rating, RatingStatus, TaskKind
from annotation.quality.exclusion.services import rating_exclusion_create, rating_exclusion_undo
from annotation.serving.pairs import pairs_retire
from tests.factories import SplitFactory, UserFactory
from tests.support.exclusion_support import exclude, pair_problems, rate_all, undo
from tests.support.queue_support import claim, queue_pairs, rater, submit

pytestmark = [pytest.mark.django_db, pytest.mark.sql_paths]

N = 2


@pytest.fixture
def rated(clock):
    """Three SIS pairs of N slots rated by two raters, an admin."""
    split = SplitFactory()
    _, pairs = queue_pairs(split=split, n_pairs=3, ratings_per_pair=N)
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
    assert topped.ratings_done == N == topped.ratings.filter(status=RatingStatus.VALID).count()
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
