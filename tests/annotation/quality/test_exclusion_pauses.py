"""Excluding a rater stops them. The exclusion pauses the rater in
the dataset (unless keep_active), so their next claim is refused; the answer says which
happened. And one exclusion per rater, dataset and window: twins are refused, also when
sent at the same moment."""

import threading
from datetime import UTC, datetime

import pytest
from django.db import connection

from annotation.models import ExclusionPause, ExclusionState, RaterPause, RatingExclusion
from annotation.quality.exclusion.services import rating_exclusion_undo
from annotation.quality.pauses import rater_pause
from tests.factories import SplitFactory, UserFactory
from tests.support.queue_support import claim, client_for, queue_pairs, rater, submit

pytestmark = pytest.mark.django_db


@pytest.fixture
def rated():
    """A rater who rated 3 of 6 pairs: the other 3 are still theirs to claim."""
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=6, ratings_per_pair=2)
    bad = rater()
    for number in range(3):
        submit(bad, split.dataset, claim(bad, split.dataset).slot_id, f"k{number}")
    return split.dataset, bad


def url(dataset):
    return f"/api/datasets/{dataset.name}/exclusions/"


def claim_answer(user, dataset):
    return client_for(user).post(f"/api/rate/{dataset.name}/claim/", {}, format="json")


def test_an_excluded_rater_is_paused_and_claims_nothing_more(admin_api, rated, django_capture_on_commit_callbacks):
    dataset, bad = rated
    with django_capture_on_commit_callbacks(execute=True):
        answer = admin_api.post(url(dataset), {"rater": bad.username, "reason": "clicked through"}, format="json")
    assert answer.status_code == 202, answer.json()
    assert answer.json()["pause"] == "paused"
    refused = claim_answer(bad, dataset)
    assert refused.status_code == 403, refused.json()
    assert refused.json()["code"] == "rater_paused"
    pause = RaterPause.objects.get(rater=bad, dataset=dataset, lifted_at__isnull=True)
    assert pause.reason == f"excluded (exclusion #{answer.json()['id']}): clicked through"


def test_keep_active_leaves_the_rater_claiming(admin_api, rated, django_capture_on_commit_callbacks):
    dataset, bad = rated
    body = {"rater": bad.username, "reason": "one bad afternoon", "keep_active": True}
    with django_capture_on_commit_callbacks(execute=True):
        answer = admin_api.post(url(dataset), body, format="json")
    assert answer.status_code == 202, answer.json()
    assert answer.json()["pause"] == "kept_active"
    assert claim_answer(bad, dataset).status_code == 200
    assert not RaterPause.objects.filter(rater=bad).exists()


def test_a_rater_paused_already_stays_under_that_pause(admin_api, rated):
    dataset, bad = rated
    paused = admin_api.post(
        f"/api/datasets/{dataset.name}/pauses/", {"rater": bad.username, "reason": "review"}, format="json"
    )
    assert paused.status_code == 201
    answer = admin_api.post(url(dataset), {"rater": bad.username, "reason": "confirmed"}, format="json")
    assert answer.status_code == 202 and answer.json()["pause"] == "already_paused"
    assert list(RaterPause.objects.filter(rater=bad).values_list("id", flat=True)) == [paused.json()["id"]]


def test_excluding_an_admin_needs_keep_active(admin_api, django_capture_on_commit_callbacks):
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=2)
    boss = UserFactory(roles=["rater", "admin"], qualified_for=["SIS"])
    submit(boss, split.dataset, claim(boss, split.dataset).slot_id, "b")
    refused = admin_api.post(url(split.dataset), {"rater": boss.username, "reason": "test run"}, format="json")
    assert refused.status_code == 400
    assert "is an admin (or staff or superuser) and cannot be paused" in refused.json()["detail"]
    assert "keep_active" in refused.json()["detail"]
    assert not RatingExclusion.objects.exists()
    body = {"rater": boss.username, "reason": "test run", "keep_active": True}
    assert admin_api.post(url(split.dataset), body, format="json").status_code == 202


def test_the_same_exclusion_twice_is_refused_naming_the_first(admin_api, rated):
    dataset, bad = rated
    body = {"rater": bad.username, "reason": "spam", "keep_active": True}
    first = admin_api.post(url(dataset), body, format="json").json()
    again = admin_api.post(url(dataset), body, format="json")
    assert again.status_code == 409, again.json()
    assert f"already excluded by exclusion #{first['id']} (applying)" in again.json()["detail"]
    windowed = {**body, "window_start": "2001-01-01T00:00:00Z"}
    assert admin_api.post(url(dataset), windowed, format="json").status_code == 202
    assert RatingExclusion.objects.count() == 2


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_three_identical_exclusions_at_once_make_one(rated):
    """Three admins' requests released together: one exclusion, two 409s naming it."""
    assert connection.vendor == "postgresql"
    dataset, bad = rated
    admins = [UserFactory(roles=["admin"]) for _ in range(3)]
    gate = threading.Barrier(len(admins))
    answers = []

    def send(admin):
        try:
            gate.wait()
            answer = client_for(admin).post(url(dataset), {"rater": bad.username, "reason": "spam"}, format="json")
            answers.append((answer.status_code, answer.json()))
        finally:
            connection.close()

    threads = [threading.Thread(target=send, args=(admin,)) for admin in admins]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(status for status, _ in answers) == [202, 409, 409], answers
    made = RatingExclusion.objects.get()
    for status, body in answers:
        if status == 409:
            assert f"exclusion #{made.id}" in body["detail"], body
    assert made.pause == ExclusionPause.PAUSED
    assert RaterPause.objects.filter(rater=bad, lifted_at__isnull=True).count() == 1


@pytest.mark.parametrize("lift_pause", [False, True])
def test_an_undo_lifts_the_exclusions_pause_only_when_asked(admin_api, rated, lift_pause):
    dataset, bad = rated
    # Paused before the exclusion (so met first by a careless lookup): another rater here,
    # and the excluded rater in another dataset. The undo lifts neither.
    other_here = rater_pause(rater=rater(), dataset=dataset, reason="gold error", created_by=None)
    bad_elsewhere = rater_pause(rater=bad, dataset=SplitFactory().dataset, reason="gold error", created_by=None)
    answer = admin_api.post(url(dataset), {"rater": bad.username, "reason": "clicked through"}, format="json")
    exclusion = RatingExclusion.objects.get(pk=answer.json()["id"])
    RatingExclusion.objects.filter(pk=exclusion.pk).update(state=ExclusionState.APPLIED)
    admin = UserFactory(roles=["admin"])
    at = datetime(2031, 5, 4, 3, 2, 1, tzinfo=UTC)
    if lift_pause:
        rating_exclusion_undo(exclusion_id=exclusion.pk, undone_by=admin, lift_pause=True, now=at)
    else:
        rating_exclusion_undo(exclusion_id=exclusion.pk, undone_by=admin, now=at)
    pause = RaterPause.objects.get(rater=bad, dataset=dataset)
    for untouched in (other_here, bad_elsewhere):
        untouched.refresh_from_db()
        assert untouched.lifted_at is None, "only the excluded rater's pause in this dataset is lifted"
    if not lift_pause:
        assert pause.lifted_at is None, "the default undo leaves the rater paused"
        return
    assert (pause.lifted_at, pause.lifted_by) == (at, admin)
    assert pause.lift_note == f"lifted with the undo of exclusion #{exclusion.pk}"
