"""Excluding and undoing in the admin: the add form calls the service, errors show on
the form, the undo action and the user action that opens the form."""

import html

import pytest

from annotation.models import ExclusionPause, ExclusionState, RaterPause, Rating, RatingExclusion, RatingStatus
from tests.factories import SplitFactory, UserFactory
from tests.support.queue_support import claim, queue_pairs, rater, submit

pytestmark = pytest.mark.django_db

ADD = "/admin/annotation/ratingexclusion/add/"
LIST = "/admin/annotation/ratingexclusion/"


@pytest.fixture
def setup(client):
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=2, ratings_per_pair=2)
    bad = rater()
    for number in range(2):
        submit(bad, split.dataset, claim(bad, split.dataset).slot_id, f"k{number}")
    admin_user = UserFactory(is_staff=True, is_superuser=True)
    client.force_login(admin_user)
    return split.dataset, bad, client


def test_the_add_form_excludes_through_the_service(setup, django_capture_on_commit_callbacks):
    dataset, bad, client = setup
    page = client.get(ADD + f"?rater={bad.pk}")
    assert page.status_code == 200
    assert f'<option value="{bad.pk}" selected>' in page.content.decode()
    form = {
        "dataset": dataset.pk,
        "rater": bad.pk,
        "reason": "straight-lining",
        "window_start_0": "",
        "window_end_0": "",
    }
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(ADD, form)
    assert answer.status_code == 302, answer.content.decode()[:2000]
    exclusion = RatingExclusion.objects.get()
    assert (exclusion.state, exclusion.ratings_excluded, exclusion.reason) == (
        ExclusionState.APPLIED,
        2,
        "straight-lining",
    )
    assert set(Rating.objects.filter(rater=bad).values_list("status", flat=True)) == {RatingStatus.EXCLUDED}


def test_a_refused_exclusion_shows_the_reason_on_the_form(setup):
    dataset, _, client = setup
    other = rater()
    answer = client.post(ADD, {"dataset": dataset.pk, "rater": other.pk, "reason": "x"})
    assert answer.status_code == 200
    assert f"{other.username} has no valid ratings in {dataset.name}" in answer.content.decode()
    assert not RatingExclusion.objects.exists()


def test_the_undo_action_and_the_user_action(setup, django_capture_on_commit_callbacks):
    dataset, bad, client = setup
    with django_capture_on_commit_callbacks(execute=True):
        client.post(ADD, {"dataset": dataset.pk, "rater": bad.pk, "reason": "x"})
    exclusion = RatingExclusion.objects.get()
    with django_capture_on_commit_callbacks(execute=True):
        client.post(LIST, {"action": "undo_exclusions", "_selected_action": [exclusion.pk]})
    exclusion.refresh_from_db()
    assert (exclusion.state, exclusion.ratings_restored) == (ExclusionState.UNDONE, 2)
    answer = client.post("/admin/auth/user/", {"action": "exclude_ratings", "_selected_action": [bad.pk]})
    assert answer.status_code == 302 and answer["Location"] == ADD + f"?rater={bad.pk}"
    assert client.get(LIST + f"{exclusion.pk}/delete/").status_code == 403


def test_the_admin_message_says_whether_the_rater_was_paused(setup, django_capture_on_commit_callbacks):
    dataset, bad, client = setup
    form = {"dataset": dataset.pk, "rater": bad.pk, "reason": "bots", "window_start_0": "", "window_end_0": ""}
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(ADD, form, follow=True)
    page = answer.content.decode()
    assert f"{bad} is paused in {dataset} until the pause is lifted" in page
    assert RaterPause.objects.filter(rater=bad, dataset=dataset, lifted_at__isnull=True).exists()
    twin = client.post(ADD, form)
    assert "are already excluded by exclusion #" in html.unescape(twin.content.decode())
    assert RatingExclusion.objects.count() == 1


def test_keep_active_in_the_admin_leaves_the_rater_unpaused(setup, django_capture_on_commit_callbacks):
    dataset, bad, client = setup
    form = {"dataset": dataset.pk, "rater": bad.pk, "reason": "x", "keep_active": "on", "window_end_0": ""}
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(ADD, form, follow=True)
    assert f"{bad} was kept active in {dataset} (not paused)" in answer.content.decode()
    assert not RaterPause.objects.exists()
    assert RatingExclusion.objects.get().pause == ExclusionPause.KEPT_ACTIVE
