"""Pausing a rater: they claim nothing in the dataset until an admin lifts the pause; a
rating they were giving is refused until then (nothing stored); the API and its errors."""

import pytest

from annotation.core.errors import Conflict
from annotation.models import RaterPause, Rating
from annotation.quality.pauses import rater_pause, rater_pause_lift
from annotation.rating.policy import rating_submit_and_claim_next
from annotation.serving.pauses import RaterPaused
from tests.factories import SplitFactory, UserFactory
from tests.support import queue_support
from tests.support.queue_support import claim, client_for, queue_pairs, rater, submit, submit_kwargs

pytestmark = pytest.mark.django_db
engine = queue_support.engine


@pytest.fixture
def dataset():
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=3)
    return split.dataset


def test_a_paused_rater_claims_nothing_until_the_pause_is_lifted(engine, clock, dataset):
    user, admin = rater(), UserFactory(roles=["admin"])
    pause = rater_pause(rater=user, dataset=dataset, reason="checking", created_by=admin)
    with pytest.raises(RaterPaused, match=f"{user.username} is paused in {dataset.name}: an admin will review"):
        claim(user, dataset)
    assert claim(rater(), dataset) is not None, "others go on"
    rater_pause_lift(pause_id=pause.id, lifted_by=admin, note="fine")
    assert claim(user, dataset) is not None


def test_a_rating_in_progress_is_refused_once_paused_and_stored_once_lifted(engine, clock, dataset):
    # Issue #25: a pause stops the rater's new ratings from counting, the one they were
    # giving included (it was stored before), so the submit is re-checked.
    user, admin = rater(), UserFactory(roles=["admin"])
    held = claim(user, dataset)
    pause = rater_pause(rater=user, dataset=dataset, reason="checking", created_by=admin)
    with pytest.raises(RaterPaused):
        rating_submit_and_claim_next(
            rater=user, dataset=dataset.name, slot_id=held.slot_id, next_kind="SIS", **submit_kwargs("k1")
        )
    assert not Rating.objects.filter(rater=user).exists()
    with pytest.raises(RaterPaused):
        claim(user, dataset)
    rater_pause_lift(pause_id=pause.id, lifted_by=admin)
    result, following = rating_submit_and_claim_next(
        rater=user, dataset=dataset.name, slot_id=held.slot_id, next_kind="SIS", **submit_kwargs("k1")
    )
    assert Rating.objects.filter(pk=result.rating_id, rater=user).exists() and following is not None


def test_pausing_twice_and_lifting_twice_are_conflicts(dataset):
    user, admin = rater(), UserFactory(roles=["admin"])
    pause = rater_pause(rater=user, dataset=dataset, reason="x", created_by=admin)
    with pytest.raises(Conflict, match="is already paused in"):
        rater_pause(rater=user, dataset=dataset, reason="y", created_by=admin)
    rater_pause_lift(pause_id=pause.id, lifted_by=admin)
    with pytest.raises(Conflict, match="was already lifted"):
        rater_pause_lift(pause_id=pause.id, lifted_by=admin)


def test_the_pause_api(admin_api, dataset):
    user = rater()
    base = f"/api/datasets/{dataset.name}/pauses/"
    made = admin_api.post(base, {"rater": user.username, "reason": "gold error high"}, format="json")
    assert made.status_code == 201
    body = made.json()
    assert (body["rater"], body["reason"], body["lifted_at"]) == (user.username, "gold error high", None)
    refused = client_for(user).post(f"/api/rate/{dataset.name}/claim/", {}, format="json")
    assert refused.status_code == 403 and refused.json()["code"] == "rater_paused"
    assert admin_api.post(base, {"rater": user.username, "reason": "again"}, format="json").status_code == 409
    lifted = admin_api.post(f"{base}{body['id']}/lift/", {"note": "reviewed"}, format="json")
    assert lifted.status_code == 200 and lifted.json()["lift_note"] == "reviewed"
    assert [row["id"] for row in admin_api.get(base).json()] == [body["id"]]
    assert client_for(user).post(f"/api/rate/{dataset.name}/claim/", {}, format="json").status_code == 200
    assert admin_api.post(f"{base}999/lift/", {}, format="json").status_code == 404
    assert client_for(user).post(base, {"rater": user.username, "reason": "x"}, format="json").status_code == 403


def test_a_submit_after_the_pause_is_refused_but_a_repeat_of_an_earlier_one_is_answered(dataset, clock):
    user = rater()
    done = claim(user, dataset)
    assert submit(user, dataset, done.slot_id, "before").replayed is False
    held = claim(user, dataset)
    rater_pause(rater=user, dataset=dataset, reason="x", created_by=UserFactory(roles=["admin"]))
    with pytest.raises(RaterPaused):
        submit(user, dataset, held.slot_id, "k")
    assert submit(user, dataset, done.slot_id, "before").replayed is True


@pytest.mark.parametrize("kind", ["admin group", "staff", "superuser"])
def test_pausing_an_admin_is_refused(admin_api, dataset, kind):
    boss = {
        "admin group": lambda: UserFactory(roles=["rater", "admin"]),
        "staff": lambda: UserFactory(roles=["rater"], is_staff=True),
        "superuser": lambda: UserFactory(roles=["rater"], is_superuser=True),
    }[kind]()
    answer = admin_api.post(
        f"/api/datasets/{dataset.name}/pauses/", {"rater": boss.username, "reason": "oops"}, format="json"
    )
    assert answer.status_code == 400, answer.json()
    assert answer.json()["detail"] == (
        f"{boss.username} is an admin (or staff or superuser) and cannot be paused; "
        "take the admin role away first if they should stop rating"
    )
    assert not RaterPause.objects.exists()
