"""Pausing a rater: they claim nothing in the dataset until an admin lifts the pause; a
rating they were giving is refused until then (nothing stored); the API and its errors."""

from datetime import UTC, datetime

import pytest
from django.test import Client

from annotation.core.errors import Conflict, NotFound
from annotation.models import RaterPause, Rating
from annotation.quality.pauses import (
    MAX_PAUSE_TEXT,
    PauseInputError,
    rater_pause,
    rater_pause_lift,
    rater_pause_unless_paused,
)
from annotation.rating.policy import rating_submit_and_claim_next
from annotation.serving.pauses import RaterPaused, active_pause
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
    # A pause stops the rater's new ratings from counting, the one they were
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


# Folded from test_pause_mutants.py:
# Pauses, the details `make mutation` found untested: who paused and when, the limits of
# a reason and a note, a lift without a note, that a pause holds in its own dataset for its
# own rater only, and which pause a second one runs into (annotation.quality.pauses).


@pytest.fixture
def two_pair_dataset():
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=2)
    return split.dataset


@pytest.fixture
def admin():
    return UserFactory(roles=["admin"])


def test_the_api_names_who_paused_and_who_lifted_and_the_claim_says_why(admin_api, two_pair_dataset):
    user = rater()
    base = f"/api/datasets/{two_pair_dataset.name}/pauses/"
    made = admin_api.post(base, {"rater": user.username, "reason": "gold error high"}, format="json").json()
    admin_name = made["created_by"]
    assert admin_name and made["lifted_by"] is None
    refused = client_for(user).post(f"/api/rate/{two_pair_dataset.name}/claim/", {}, format="json").json()
    assert refused["detail"] == (
        f"{user.username} is paused in {two_pair_dataset.name}: an admin will review your ratings and lift the pause; "
        "nothing more is served until then"
    )
    lifted = admin_api.post(f"{base}{made['id']}/lift/", {}, format="json").json()
    assert (lifted["lifted_by"], lifted["lift_note"]) == (admin_name, "")
    missing = admin_api.post(f"{base}999999/lift/", {}, format="json")
    assert (missing.status_code, missing.json()["detail"]) == (404, f"no pause #999999 in {two_pair_dataset.name}")


@pytest.mark.parametrize("reason", [None, "", "   ", "x" * (MAX_PAUSE_TEXT + 1)])
def test_a_pause_needs_a_reason_of_bounded_length(two_pair_dataset, admin, reason):
    with pytest.raises(PauseInputError, match=f"^a pause needs a reason of 1 to {MAX_PAUSE_TEXT} characters$"):
        rater_pause(rater=rater(), dataset=two_pair_dataset, reason=reason, created_by=admin)


def test_the_longest_reason_and_note_are_kept_and_one_more_character_is_refused(two_pair_dataset, admin):
    longest = "r" * MAX_PAUSE_TEXT
    pause = rater_pause(rater=rater(), dataset=two_pair_dataset, reason=f"  {longest} ", created_by=admin)
    assert (pause.reason, pause.created_by) == (longest, admin)
    with pytest.raises(PauseInputError, match=f"^a note must be at most {MAX_PAUSE_TEXT} characters$"):
        rater_pause_lift(pause_id=pause.id, lifted_by=admin, note="n" * (MAX_PAUSE_TEXT + 1))
    lifted = rater_pause_lift(pause_id=pause.id, lifted_by=admin, note="n" * MAX_PAUSE_TEXT)
    assert lifted.lift_note == "n" * MAX_PAUSE_TEXT


def test_a_lift_without_a_note_keeps_an_empty_note_and_an_unknown_pause_is_named(two_pair_dataset, admin):
    pause = rater_pause(rater=rater(), dataset=two_pair_dataset, reason="checking", created_by=admin)
    rater_pause_lift(pause_id=pause.id, lifted_by=admin)
    pause.refresh_from_db()
    assert (pause.lift_note, pause.lifted_by) == ("", admin)
    with pytest.raises(NotFound, match="^no pause #999999$"):
        rater_pause_lift(pause_id=999999, lifted_by=admin)


def test_a_pause_holds_for_its_rater_in_its_dataset_until_lifted(two_pair_dataset, admin):
    other_dataset = SplitFactory().dataset
    paused, other = rater(), rater()
    pause = rater_pause(rater=paused, dataset=two_pair_dataset, reason="checking", created_by=admin)
    assert active_pause(rater=paused, dataset_id=two_pair_dataset.id) == pause
    assert active_pause(rater=other, dataset_id=two_pair_dataset.id) is None
    assert active_pause(rater=paused, dataset_id=other_dataset.id) is None
    rater_pause_lift(pause_id=pause.id, lifted_by=admin)
    assert active_pause(rater=paused, dataset_id=two_pair_dataset.id) is None


def test_the_rating_page_sends_only_the_paused_rater_to_the_paused_page(two_pair_dataset, admin):
    paused, other = rater(), rater()
    pause = rater_pause(rater=paused, dataset=two_pair_dataset, reason="we check your gold answers", created_by=admin)
    browser, other_browser = Client(), Client()
    browser.force_login(paused)
    other_browser.force_login(other)
    page = f"/rate/{two_pair_dataset.name}/sis/"
    assert browser.get(page)["Location"] == f"/rate/{two_pair_dataset.name}/paused/"
    assert other_browser.get(page).status_code == 200
    assert 'data-testid="paused"' in browser.get(f"/rate/{two_pair_dataset.name}/paused/").content.decode()
    assert other_browser.get(f"/rate/{two_pair_dataset.name}/paused/")["Location"] == "/rate/"
    rater_pause_lift(pause_id=pause.id, lifted_by=admin)
    assert browser.get(page).status_code == 200


def test_a_pause_is_stamped_with_the_time_it_is_given(two_pair_dataset, admin):
    when = datetime(2026, 1, 5, 8, 30, tzinfo=UTC)
    assert (
        rater_pause(rater=rater(), dataset=two_pair_dataset, reason="checking", created_by=admin, now=when).created_at
        == when
    )


def test_pausing_again_finds_the_raters_one_active_pause_among_all_the_others(two_pair_dataset, admin):
    """Lifted pauses, pauses in other datasets and other raters' pauses are not the one
    that makes a second pause a conflict."""
    user, other = rater(), rater()
    lifted = rater_pause(rater=user, dataset=two_pair_dataset, reason="earlier", created_by=admin)
    rater_pause_lift(pause_id=lifted.id, lifted_by=admin)
    active = rater_pause(rater=user, dataset=two_pair_dataset, reason="now", created_by=admin)
    rater_pause(rater=user, dataset=SplitFactory().dataset, reason="elsewhere", created_by=admin)
    rater_pause(rater=other, dataset=two_pair_dataset, reason="someone else", created_by=admin)
    with pytest.raises(Conflict) as refused:
        rater_pause(rater=user, dataset=two_pair_dataset, reason="again", created_by=admin)
    assert str(refused.value) == f"{user.username} is already paused in {two_pair_dataset.name}"
    found = rater_pause_unless_paused(rater=user, dataset=two_pair_dataset, reason="again", created_by=admin)
    assert found == (active, False)
