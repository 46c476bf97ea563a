"""Pauses, the details `make mutation` found untested: who paused and when, the limits of
a reason and a note, a lift without a note, that a pause holds in its own dataset for its
own rater only, and which pause a second one runs into (annotation.quality.pauses)."""

from datetime import UTC, datetime

import pytest
from django.test import Client

from annotation.core.errors import Conflict, NotFound
from annotation.quality.pauses import (
    MAX_PAUSE_TEXT,
    PauseInputError,
    rater_pause,
    rater_pause_lift,
    rater_pause_unless_paused,
)
from annotation.serving.pauses import active_pause
from tests.factories import SplitFactory, UserFactory
from tests.support.queue_support import client_for, queue_pairs, rater

pytestmark = pytest.mark.django_db


@pytest.fixture
def dataset():
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=2)
    return split.dataset


@pytest.fixture
def admin():
    return UserFactory(roles=["admin"])


def test_the_api_names_who_paused_and_who_lifted_and_the_claim_says_why(admin_api, dataset):
    user = rater()
    base = f"/api/datasets/{dataset.name}/pauses/"
    made = admin_api.post(base, {"rater": user.username, "reason": "gold error high"}, format="json").json()
    admin_name = made["created_by"]
    assert admin_name and made["lifted_by"] is None
    refused = client_for(user).post(f"/api/rate/{dataset.name}/claim/", {}, format="json").json()
    assert refused["detail"] == (
        f"{user.username} is paused in {dataset.name}: an admin will review your ratings and lift the pause; "
        "nothing more is served until then"
    )
    lifted = admin_api.post(f"{base}{made['id']}/lift/", {}, format="json").json()
    assert (lifted["lifted_by"], lifted["lift_note"]) == (admin_name, "")
    missing = admin_api.post(f"{base}999999/lift/", {}, format="json")
    assert (missing.status_code, missing.json()["detail"]) == (404, f"no pause #999999 in {dataset.name}")


@pytest.mark.parametrize("reason", [None, "", "   ", "x" * (MAX_PAUSE_TEXT + 1)])
def test_a_pause_needs_a_reason_of_bounded_length(dataset, admin, reason):
    with pytest.raises(PauseInputError, match=f"^a pause needs a reason of 1 to {MAX_PAUSE_TEXT} characters$"):
        rater_pause(rater=rater(), dataset=dataset, reason=reason, created_by=admin)


def test_the_longest_reason_and_note_are_kept_and_one_more_character_is_refused(dataset, admin):
    longest = "r" * MAX_PAUSE_TEXT
    pause = rater_pause(rater=rater(), dataset=dataset, reason=f"  {longest} ", created_by=admin)
    assert (pause.reason, pause.created_by) == (longest, admin)
    with pytest.raises(PauseInputError, match=f"^a note must be at most {MAX_PAUSE_TEXT} characters$"):
        rater_pause_lift(pause_id=pause.id, lifted_by=admin, note="n" * (MAX_PAUSE_TEXT + 1))
    lifted = rater_pause_lift(pause_id=pause.id, lifted_by=admin, note="n" * MAX_PAUSE_TEXT)
    assert lifted.lift_note == "n" * MAX_PAUSE_TEXT


def test_a_lift_without_a_note_keeps_an_empty_note_and_an_unknown_pause_is_named(dataset, admin):
    pause = rater_pause(rater=rater(), dataset=dataset, reason="checking", created_by=admin)
    rater_pause_lift(pause_id=pause.id, lifted_by=admin)
    pause.refresh_from_db()
    assert (pause.lift_note, pause.lifted_by) == ("", admin)
    with pytest.raises(NotFound, match="^no pause #999999$"):
        rater_pause_lift(pause_id=999999, lifted_by=admin)


def test_a_pause_holds_for_its_rater_in_its_dataset_until_lifted(dataset, admin):
    other_dataset = SplitFactory().dataset
    paused, other = rater(), rater()
    pause = rater_pause(rater=paused, dataset=dataset, reason="checking", created_by=admin)
    assert active_pause(rater=paused, dataset_id=dataset.id) == pause
    assert active_pause(rater=other, dataset_id=dataset.id) is None
    assert active_pause(rater=paused, dataset_id=other_dataset.id) is None
    rater_pause_lift(pause_id=pause.id, lifted_by=admin)
    assert active_pause(rater=paused, dataset_id=dataset.id) is None


def test_the_rating_page_sends_only_the_paused_rater_to_the_paused_page(dataset, admin):
    paused, other = rater(), rater()
    pause = rater_pause(rater=paused, dataset=dataset, reason="we check your gold answers", created_by=admin)
    browser, other_browser = Client(), Client()
    browser.force_login(paused)
    other_browser.force_login(other)
    page = f"/rate/{dataset.name}/sis/"
    assert browser.get(page)["Location"] == f"/rate/{dataset.name}/paused/"
    assert other_browser.get(page).status_code == 200
    assert 'data-testid="paused"' in browser.get(f"/rate/{dataset.name}/paused/").content.decode()
    assert other_browser.get(f"/rate/{dataset.name}/paused/")["Location"] == "/rate/"
    rater_pause_lift(pause_id=pause.id, lifted_by=admin)
    assert browser.get(page).status_code == 200


def test_a_pause_is_stamped_with_the_time_it_is_given(dataset, admin):
    when = datetime(2026, 1, 5, 8, 30, tzinfo=UTC)
    assert rater_pause(rater=rater(), dataset=dataset, reason="checking", created_by=admin, now=when).created_at == when


def test_pausing_again_finds_the_raters_one_active_pause_among_all_the_others(dataset, admin):
    """Lifted pauses, pauses in other datasets and other raters' pauses are not the one
    that makes a second pause a conflict."""
    user, other = rater(), rater()
    lifted = rater_pause(rater=user, dataset=dataset, reason="earlier", created_by=admin)
    rater_pause_lift(pause_id=lifted.id, lifted_by=admin)
    active = rater_pause(rater=user, dataset=dataset, reason="now", created_by=admin)
    rater_pause(rater=user, dataset=SplitFactory().dataset, reason="elsewhere", created_by=admin)
    rater_pause(rater=other, dataset=dataset, reason="someone else", created_by=admin)
    with pytest.raises(Conflict) as refused:
        rater_pause(rater=user, dataset=dataset, reason="again", created_by=admin)
    assert str(refused.value) == f"{user.username} is already paused in {dataset.name}"
    found = rater_pause_unless_paused(rater=user, dataset=dataset, reason="again", created_by=admin)
    assert found == (active, False)
