"""The rating policy at the crowd boundary, through the HTTP API as a participant (or a
rater) who wants more than their due would send it, on every path (``engine``: the
PostgreSQL statements, their stepwise fallback, the portable ORM path): the quota counts
held items and gold and holds at submit too, participants act only in their study's
dataset and kinds, a pause since the claim refuses the submit."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.core.errors import Forbidden
from annotation.models import (
    CampaignLink,
    FlagReason,
    GoldLease,
    GoldRating,
    PairSkip,
    Qualification,
    Rating,
    RatingSlot,
    SlotState,
)
from annotation.people.crowd.links import campaign_link_create
from annotation.quality.pauses import rater_pause, rater_pause_lift
from annotation.quality.quiz import quiz_answer, quiz_state
from annotation.rating import policy
from annotation.serving import QueueInputError
from annotation.serving.pauses import RaterPaused
from tests.factories import UserFactory
from tests.support import queue_support
from tests.support.crowd_support import ParticipantClient, crowd_dataset, sts_quiz
from tests.support.policy_actions import SUBMISSION, claim, gold_sis_pairs, join, rate_n, submit, two_kind_dataset
from tests.support.queue_support import client_for, rater, submit_kwargs
from tests.support.rating_support import api_id, db_id

pytestmark = pytest.mark.django_db
engine = queue_support.engine


def items_done(user) -> int:
    return Rating.objects.filter(rater=user).count() + GoldRating.objects.filter(rater=user).count()


def test_at_the_quota_with_items_held_a_participant_is_served_only_those(engine):
    dataset = two_kind_dataset()
    browser, user = join(dataset, kinds=["SIS", "STS"], quota=5)
    rate_n(browser, dataset, "SIS", 3)
    first = claim(browser, dataset, "SIS")
    assert first.status_code == 200
    second = claim(browser, dataset, "STS")
    assert second.status_code == 200, "three done and one held: a fifth item is still due"
    third = claim(browser, dataset, "STS")
    assert third.json()["slot_id"] == second.json()["slot_id"], "the held item is resumed, not another"
    refused = claim(browser, dataset, "SIS")
    assert refused.status_code == 200 and refused.json()["resumed"], "a held item of the kind is resumed"
    refused = claim(browser, dataset)
    assert refused.status_code == 200 and refused.json()["resumed"]
    # Three done and two held fill the quota: only the held ones are served, then nothing.
    for slot in (first, second):
        assert submit(browser, dataset, slot.json()["slot_id"], f"last-{slot.json()['slot_id']}").status_code == 201
    over = claim(browser, dataset, "STS")
    assert (over.status_code, over.json()["code"]) == (403, "quota_reached")
    assert items_done(user) == 5


def test_a_participant_claiming_two_kinds_at_once_is_refused_at_the_fifth_item_of_five(engine):
    dataset = two_kind_dataset()
    browser, user = join(dataset, kinds=["SIS", "STS"], quota=5)
    rate_n(browser, dataset, "SIS", 4)
    assert claim(browser, dataset, "SIS").status_code == 200
    refused = claim(browser, dataset, "STS")
    assert (refused.status_code, refused.json()["code"]) == (403, "quota_reached"), refused.content
    assert RatingSlot.objects.filter(rater=user, state=SlotState.LEASED).count() == 1


def test_a_participant_stores_nothing_in_a_dataset_outside_their_study(engine):
    own, other = two_kind_dataset(), two_kind_dataset()
    browser, user = join(own, kinds=["SIS"], quota=5)
    # Even with a grant for every dataset (an admin's), the study's dataset is the only one.
    Qualification.objects.create(rater=user, kind="SIS")
    refused = claim(browser, other, "SIS")
    assert refused.status_code == 403, refused.content
    # A lease of the other dataset they came to hold (before they joined, or by any way):
    # the submit is refused all the same and nothing is stored.
    slot = RatingSlot.objects.filter(dataset=other, kind="SIS", state=SlotState.OPEN).first()
    now = timezone.now()
    RatingSlot.objects.filter(pk=slot.pk).update(
        state=SlotState.LEASED, rater=user, leased_at=now, lease_expires_at=now + timedelta(minutes=10)
    )
    stored = submit(browser, other, api_id("slot", slot.pk), "elsewhere")
    assert stored.status_code == 403, stored.content
    assert client_for(user).post(f"/api/rate/{other.name}/slots/{slot.pk}/skip/").status_code == 403
    assert not Rating.objects.filter(rater=user).exists()


def test_a_participant_of_a_one_kind_link_claims_no_other_kind(engine):
    dataset = two_kind_dataset()
    browser, user = join(dataset, kinds=["SIS"], quota=5)
    Qualification.objects.create(rater=user, dataset=dataset, kind="STS")
    refused = claim(browser, dataset, "STS")
    assert refused.status_code == 403, refused.content
    assert "not STS" in refused.json()["detail"]
    for _ in range(3):
        served = claim(browser, dataset)
        assert served.json()["kind"] == "SIS"
    quiz = browser.post(f"/api/rate/{dataset.name}/quiz/sts/", {}, content_type="application/json")
    assert quiz.status_code == 403
    assert browser.get(f"/rate/{dataset.name}/sts/").status_code == 403


def test_the_quota_counts_gold_items_held_and_rated(engine, tmp_path):
    dataset = two_kind_dataset(gold_one_in=2, n_pairs=30)
    gold_sis_pairs(dataset, 10, tmp_path)
    browser, user = join(dataset, kinds=["SIS", "STS"], quota=4)
    held_gold = None
    for step in range(60):
        served = claim(browser, dataset, "SIS")
        assert served.status_code == 200, served.content
        slot_id = served.json()["slot_id"]
        is_gold = GoldLease.objects.filter(pk=db_id("slot", slot_id)).exists()
        if is_gold and items_done(user) == 3:
            held_gold = slot_id
            break
        if items_done(user) < 3:
            assert submit(browser, dataset, slot_id, f"k{step}").status_code == 201
        else:
            assert browser.post(f"/api/rate/{dataset.name}/slots/{slot_id}/skip/").status_code == 200
    assert held_gold is not None, "one in two claims is gold: sixty claims bring one"
    # Three done and a gold item held fill the quota of four.
    refused = claim(browser, dataset, "STS")
    assert (refused.status_code, refused.json()["code"]) == (403, "quota_reached"), refused.content
    assert submit(browser, dataset, held_gold, "gold").status_code == 201
    over = claim(browser, dataset, "SIS")
    assert (over.status_code, over.json()["code"]) == (403, "quota_reached")
    assert items_done(user) == 4 and GoldRating.objects.filter(rater=user).exists()


def test_a_rater_paused_between_claim_and_submit_stores_nothing(engine):
    dataset = two_kind_dataset()
    user = rater()
    api = client_for(user)
    held = api.post(f"/api/rate/{dataset.name}/claim/", {"kind": "SIS"}, format="json")
    rater_pause(rater=user, dataset=dataset, reason="checking", created_by=UserFactory(roles=["admin"]))
    body = {**SUBMISSION, "idempotency_key": "after-pause"}
    refused = api.post(f"/api/rate/{dataset.name}/slots/{held.json()['slot_id']}/submit/", body, format="json")
    assert (refused.status_code, refused.json()["code"]) == (403, "rater_paused"), refused.content
    assert not Rating.objects.filter(rater=user).exists()
    assert RatingSlot.objects.get(pk=db_id("slot", held.json()["slot_id"])).state == SlotState.LEASED


def test_a_participant_at_quota_with_a_held_lease_cannot_submit_beyond_it(engine):
    dataset = two_kind_dataset()
    browser, user = join(dataset, kinds=["SIS", "STS"], quota=2)
    rate_n(browser, dataset, "STS", 1)
    first = claim(browser, dataset, "SIS").json()["slot_id"]
    # The lease expires and the tidy-up returns the slot to the queue: a submit of it is
    # still accepted while nobody takes it (annotation.serving.slots.holds).
    RatingSlot.objects.filter(pk=db_id("slot", first)).update(
        state=SlotState.OPEN, rater=None, previous_rater=user, leased_at=None, lease_expires_at=None
    )
    second = claim(browser, dataset, "STS")
    assert second.status_code == 200
    # One done and one held fill the quota of two: the old lease's submit would be a third.
    refused = submit(browser, dataset, first, "old-lease")
    assert (refused.status_code, refused.json()["code"]) == (403, "quota_reached"), refused.content
    assert submit(browser, dataset, second.json()["slot_id"], "last").status_code == 201
    assert items_done(user) == 2


def test_a_rater_paused_while_holding_a_gold_item_stores_nothing_either(engine, tmp_path):
    dataset = two_kind_dataset(gold_one_in=1)
    gold_sis_pairs(dataset, 2, tmp_path)
    user = rater()
    api = client_for(user)
    held = api.post(f"/api/rate/{dataset.name}/claim/", {"kind": "SIS"}, format="json").json()["slot_id"]
    assert GoldLease.objects.filter(pk=db_id("slot", held)).exists(), "one in one claims is gold"
    rater_pause(rater=user, dataset=dataset, reason="checking", created_by=UserFactory(roles=["admin"]))
    body = {**SUBMISSION, "idempotency_key": "gold-after-pause"}
    refused = api.post(f"/api/rate/{dataset.name}/slots/{held}/submit/", body, format="json")
    assert (refused.status_code, refused.json()["code"]) == (403, "rater_paused"), refused.content
    assert not GoldRating.objects.filter(rater=user).exists()


# Folded from test_policy_mutants.py:
# What `make mutation` found the rating policy's tests let pass (annotation/rating/policy.py):
# a participant's replay at the quota and their at-quota submit of an item not theirs, the
# next claim after a submit (its kind, the quota use it starts from, the lock of the run),
# and the slot actions: a participant's heartbeat and flag, and the clock the caller gives.


def submit_next(browser, dataset, slot_id: int, key: str, next_kind: str):
    url = f"/api/rate/{dataset.name}/slots/{slot_id}/submit/"
    body = {**submit_kwargs(key, 2.5), "claim_next_kind": next_kind}
    return browser.post(url, body, content_type="application/json")


# --- a participant's submit at the quota -------------------------------------------------


def test_a_participant_replaying_their_last_rating_at_the_quota_gets_the_replay():
    dataset = two_kind_dataset()
    browser, user = join(dataset, kinds=["SIS"], quota=1)
    held = claim(browser, dataset, "SIS").json()["slot_id"]
    assert submit(browser, dataset, held, "last").status_code == 201
    # The answer was lost on the way: the browser sends the same submit again.
    again = submit(browser, dataset, held, "last")
    assert (again.status_code, again.json()["replayed"]) == (200, True), again.content
    assert Rating.objects.filter(rater=user).count() == 1


def test_a_participant_at_the_quota_submitting_an_item_another_rater_rated_is_refused_for_the_quota():
    dataset = two_kind_dataset()
    browser, _ = join(dataset, kinds=["SIS"], quota=1)
    rated = claim(browser, dataset, "SIS").json()["slot_id"]
    assert submit(browser, dataset, rated, "mine").status_code == 201
    other = rater()
    theirs = policy.slot_claim(rater=other, dataset=dataset.name, kind="SIS")
    policy.rating_submit(rater=other, dataset=dataset.name, slot_id=theirs.slot_id, **submit_kwargs("theirs"))
    refused = submit(browser, dataset, api_id("slot", theirs.slot_id), "not-mine")
    assert (refused.status_code, refused.json()["code"]) == (403, "quota_reached"), refused.content


def test_a_participant_sending_a_key_used_before_is_told_so_and_keeps_the_item():
    """Their submit runs in a transaction (under the lock of their run): the one statement's
    unique violation must not spoil it, so the stepwise path can name the key."""
    dataset = two_kind_dataset()
    browser, user = join(dataset, kinds=["SIS"], quota=3)
    first = claim(browser, dataset, "SIS").json()["slot_id"]
    assert submit(browser, dataset, first, "used").status_code == 201
    second = claim(browser, dataset, "SIS").json()["slot_id"]
    refused = submit(browser, dataset, second, "used")
    assert refused.status_code == 409, refused.content
    assert "used" in refused.json()["detail"]
    again = claim(browser, dataset, "SIS").json()
    assert (again["slot_id"], again["resumed"]) == (second, True)
    assert Rating.objects.filter(rater=user).count() == 1


# --- who --------------------------------------------------------------------------------


def test_a_participant_is_held_to_their_own_run_not_the_latest_of_the_study():
    dataset = two_kind_dataset()
    first, _ = join(dataset, kinds=["SIS"], quota=1, pid="f1257a11e0f1257a11e0f125")
    rate_n(first, dataset, "SIS", 1)
    # Another participant joins the study after them, with nothing rated yet.
    later = Client()
    link = CampaignLink.objects.get()
    assert later.get(f"/join/{link.token}/", {"PROLIFIC_PID": "1a7e1a7e1a7e1a7e1a7e1a7e"}).status_code == 302
    refused = claim(first, dataset, "SIS")
    assert (refused.status_code, refused.json()["code"]) == (403, "quota_reached"), refused.content


def test_a_participant_is_told_which_study_and_kinds_are_theirs():
    own, other = two_kind_dataset(), two_kind_dataset()
    browser, _ = join(own, kinds=["SIS", "STS"], quota=3)
    elsewhere = claim(browser, other, "SIS")
    assert elsewhere.json()["detail"] == "you joined a study through its link; you may rate only in that study"
    outside = claim(browser, own, "SITS")
    assert outside.json()["detail"] == "this study asks for SIS, STS ratings, not SITS"


# --- a participant's claim ---------------------------------------------------------------


def test_a_participant_whose_held_items_fill_the_quota_is_told_so():
    dataset = two_kind_dataset()
    browser, _ = join(dataset, kinds=["SIS", "STS"], quota=1)
    assert claim(browser, dataset, "SIS").status_code == 200
    refused = claim(browser, dataset, "STS")
    assert (refused.status_code, refused.json()["code"]) == (403, "quota_reached"), refused.content
    assert "the items you hold fill your quota of 1" in refused.json()["detail"]


def test_a_participant_claiming_any_kind_is_served_only_the_kinds_they_are_qualified_for():
    dataset = two_kind_dataset()
    browser, user = join(dataset, kinds=["SIS", "STS"], quota=5)
    # The link's kinds are tried in order: SIS, which they are no longer qualified for, is passed over.
    Qualification.objects.filter(rater=user, kind="SIS").delete()
    served = claim(browser, dataset)
    assert served.status_code == 200 and served.json()["kind"] == "STS", served.content
    assert submit(browser, dataset, served.json()["slot_id"], "sts").status_code == 201
    Qualification.objects.filter(rater=user).delete()
    refused = claim(browser, dataset)
    assert refused.status_code == 403
    assert refused.json()["detail"] == "you are not qualified for this study's SIS, STS ratings yet"


@pytest.mark.parametrize("paths", ["postgres", "portable"])
def test_a_lease_runs_from_the_time_given(settings, paths):
    settings.SQL_PATHS = paths
    dataset = two_kind_dataset()
    _, participant = join(dataset, kinds=["SIS"], quota=3)
    later = timezone.now() + timedelta(seconds=90)
    for user in (rater(["SIS"]), participant):
        held = policy.slot_claim(rater=user, dataset=dataset.name, kind="SIS", now=later)
        assert held.lease_expires_at == later + timedelta(seconds=settings.LEASE_TTL_SECONDS)
        assert RatingSlot.objects.get(pk=held.slot_id).lease_expires_at == held.lease_expires_at


def test_a_lease_runs_from_the_time_given_after_gold_s_turn_found_no_gold_pair(tmp_path):
    """Gold's turn came, but the rater met the one gold pair: the queue's slot instead,
    leased from the time given too."""
    dataset = two_kind_dataset(gold_one_in=1)
    gold_sis_pairs(dataset, 1, tmp_path)
    user = rater(["SIS"])
    gold = policy.slot_claim(rater=user, dataset=dataset.name, kind="SIS")
    assert GoldLease.objects.filter(pk=gold.slot_id).exists()
    policy.slot_skip(rater=user, dataset=dataset.name, slot_id=gold.slot_id)
    later = timezone.now() + timedelta(seconds=90)
    held = policy.slot_claim(rater=user, dataset=dataset.name, kind="SIS", now=later)
    assert RatingSlot.objects.filter(pk=held.slot_id).exists()
    assert held.lease_expires_at == later + timedelta(seconds=settings.LEASE_TTL_SECONDS)


def test_a_gold_lease_runs_from_the_time_given(tmp_path):
    dataset = two_kind_dataset(gold_one_in=1)
    gold_sis_pairs(dataset, 2, tmp_path)
    user = rater(["SIS"])
    later = timezone.now() + timedelta(seconds=90)
    held = policy.slot_claim(rater=user, dataset=dataset.name, kind="SIS", now=later)
    assert GoldLease.objects.get(pk=held.slot_id).lease_expires_at == later + timedelta(
        seconds=settings.LEASE_TTL_SECONDS
    )


# --- a rater's claim ---------------------------------------------------------------------


def test_a_rater_is_served_the_kind_asked_and_gold_only_of_that_kind(tmp_path):
    dataset = two_kind_dataset(gold_one_in=1)
    gold_sis_pairs(dataset, 2, tmp_path)
    user = rater(["SIS", "STS"])
    # Gold is on at one in one, but there is no STS gold: an ordinary STS pair comes.
    sts = policy.slot_claim(rater=user, dataset=dataset.name, kind="STS")
    assert sts.kind == "STS" and RatingSlot.objects.filter(pk=sts.slot_id).exists()
    sis = policy.slot_claim(rater=user, dataset=dataset.name, kind="SIS")
    assert sis.kind == "SIS" and GoldLease.objects.filter(pk=sis.slot_id).exists()


def test_a_claim_of_an_unknown_kind_is_refused():
    dataset = two_kind_dataset()
    with pytest.raises(QueueInputError, match="kind must be one of"):
        policy.slot_claim(rater=rater(["SIS"]), dataset=dataset.name, kind="XYZ")
    assert not RatingSlot.objects.filter(state=SlotState.LEASED).exists()


def test_a_user_who_is_no_rater_is_told_so():
    dataset = two_kind_dataset()
    viewer = UserFactory(username="viewer1", roles=["researcher"])
    # The API's permission refuses them first; the policy says the same to any other caller.
    with pytest.raises(Forbidden, match="^viewer1 is not a rater; only raters rate$"):
        policy.slot_claim(rater=viewer, dataset=dataset.name, kind="SIS")


# --- submit with the next claim ----------------------------------------------------------


def test_a_raters_next_claim_is_of_the_kind_asked():
    dataset = two_kind_dataset()
    user = rater(["SIS", "STS"])
    held = policy.slot_claim(rater=user, dataset=dataset.name, kind="SIS")
    _, following = policy.rating_submit_and_claim_next(
        rater=user, dataset=dataset.name, slot_id=held.slot_id, next_kind="STS", **submit_kwargs("sis")
    )
    assert following.kind == "STS"


def test_a_raters_next_claims_follow_the_kind_asked_each_time():
    dataset = two_kind_dataset()
    user = rater(["SIS", "STS"])
    held = policy.slot_claim(rater=user, dataset=dataset.name, kind="SIS")
    for number, next_kind in enumerate(["SIS", "STS", "SIS", "STS"]):
        _, held = policy.rating_submit_and_claim_next(
            rater=user, dataset=dataset.name, slot_id=held.slot_id, next_kind=next_kind, **submit_kwargs(f"k{number}")
        )
        assert held.kind == next_kind


def test_a_next_claim_of_an_unknown_kind_is_refused_before_anything_is_stored():
    dataset = two_kind_dataset()
    user = rater(["SIS"])
    held = policy.slot_claim(rater=user, dataset=dataset.name, kind="SIS")
    with pytest.raises(QueueInputError, match="kind must be one of"):
        policy.rating_submit_and_claim_next(
            rater=user, dataset=dataset.name, slot_id=held.slot_id, next_kind="XYZ", **submit_kwargs("bad")
        )
    assert not Rating.objects.exists()


def test_a_participants_next_claim_counts_the_item_just_rated_as_rated_not_held():
    dataset = two_kind_dataset()
    browser, _ = join(dataset, kinds=["SIS", "STS"], quota=2)
    held = claim(browser, dataset, "SIS").json()["slot_id"]
    # One rated and nothing held: the second item of the quota is due, of the kind asked.
    answer = submit_next(browser, dataset, held, "first", "STS")
    assert answer.status_code == 201, answer.content
    assert answer.json()["next"] is not None and answer.json()["next"]["kind"] == "STS"


def test_a_participants_replayed_submit_with_the_next_claim_resumes_the_item_held():
    dataset = two_kind_dataset()
    browser, _ = join(dataset, kinds=["SIS"], quota=2)
    held = claim(browser, dataset, "SIS").json()["slot_id"]
    first = submit_next(browser, dataset, held, "first", "SIS").json()["next"]
    # The replay rated nothing new: one rated and one held, which is the one served.
    again = submit_next(browser, dataset, held, "first", "SIS")
    assert again.status_code == 200 and again.json()["replayed"], again.content
    assert again.json()["next"]["slot_id"] == first["slot_id"] and again.json()["next"]["resumed"]


def test_the_next_claim_does_not_let_a_participant_rate_an_old_lease_past_the_quota():
    dataset = two_kind_dataset()
    browser, user = join(dataset, kinds=["SIS", "STS"], quota=1)
    old = claim(browser, dataset, "SIS").json()["slot_id"]
    # The lease expired and its slot went back to the queue; an STS item fills the quota.
    RatingSlot.objects.filter(rater=user).update(
        state=SlotState.OPEN, rater=None, previous_rater=user, leased_at=None, lease_expires_at=None
    )
    assert claim(browser, dataset, "STS").status_code == 200
    refused = submit_next(browser, dataset, old, "old-lease", "STS")
    assert (refused.status_code, refused.json()["code"]) == (403, "quota_reached"), refused.content
    assert not Rating.objects.filter(rater=user).exists()


@pytest.mark.parametrize("paths", ["postgres", "portable"])
def test_a_rating_is_stored_at_the_time_given(settings, paths):
    settings.SQL_PATHS = paths
    dataset = two_kind_dataset()
    _, participant = join(dataset, kinds=["SIS"], quota=3)
    earlier = timezone.now() - timedelta(hours=1)
    for user in (rater(["SIS"]), participant):
        held = policy.slot_claim(rater=user, dataset=dataset.name, kind="SIS")
        stored = policy.rating_submit(
            rater=user, dataset=dataset.name, slot_id=held.slot_id, now=earlier, **submit_kwargs("then")
        )
        assert Rating.objects.get(pk=stored.rating_id).created_at == earlier


def test_a_gold_rating_is_stored_at_the_time_given_and_a_paused_raters_refusal_names_them(tmp_path):
    dataset = two_kind_dataset(gold_one_in=1)
    gold_sis_pairs(dataset, 2, tmp_path)
    user = rater(["SIS"])
    held = policy.slot_claim(rater=user, dataset=dataset.name, kind="SIS")
    assert GoldLease.objects.filter(pk=held.slot_id).exists(), "one in one claims is gold"
    later = timezone.now() + timedelta(seconds=30)
    stored = policy.rating_submit(
        rater=user, dataset=dataset.name, slot_id=held.slot_id, now=later, **submit_kwargs("gold")
    )
    assert GoldRating.objects.get(pk=stored.rating_id).created_at == later
    second = policy.slot_claim(rater=user, dataset=dataset.name, kind="SIS")
    rater_pause(rater=user, dataset=dataset, reason="checking", created_by=UserFactory(roles=["admin"]))
    with pytest.raises(RaterPaused, match=rf"^{user.username} is paused in {dataset.name}"):
        policy.rating_submit(rater=user, dataset=dataset.name, slot_id=second.slot_id, **submit_kwargs("paused"))


@pytest.mark.parametrize("pause_of", ["another rater", "another dataset", "a lifted pause"])
def test_a_gold_rating_is_refused_only_for_the_raters_active_pause_in_its_dataset(tmp_path, pause_of):
    dataset = two_kind_dataset(gold_one_in=1)
    gold_sis_pairs(dataset, 2, tmp_path)
    user = rater(["SIS"])
    held = policy.slot_claim(rater=user, dataset=dataset.name, kind="SIS")
    assert GoldLease.objects.filter(pk=held.slot_id).exists(), "one in one claims is gold"
    admin = UserFactory(roles=["admin"])
    if pause_of == "another rater":
        rater_pause(rater=rater(["SIS"]), dataset=dataset, reason="checking", created_by=admin)
    elif pause_of == "another dataset":
        rater_pause(rater=user, dataset=two_kind_dataset(), reason="checking", created_by=admin)
    else:
        pause = rater_pause(rater=user, dataset=dataset, reason="checking", created_by=admin)
        rater_pause_lift(pause_id=pause.pk, lifted_by=admin)
    stored = policy.rating_submit(rater=user, dataset=dataset.name, slot_id=held.slot_id, **submit_kwargs("gold"))
    assert GoldRating.objects.filter(pk=stored.rating_id, rater=user).exists()


# --- the lock on a participant's run -----------------------------------------------------


def locked_participant_reads(queries) -> list[str]:
    return [q["sql"] for q in queries if 'FROM "annotation_participant"' in q["sql"] and "FOR UPDATE" in q["sql"]]


@pytest.mark.postgres
def test_a_participants_submit_with_the_next_claim_locks_their_run_and_a_page_view_does_not():
    dataset = two_kind_dataset()
    _, user = join(dataset, kinds=["SIS"], quota=3)
    with CaptureQueriesContext(connection) as claimed:
        held = policy.slot_claim(rater=user, dataset=dataset.name, kind="SIS")
    assert locked_participant_reads(claimed.captured_queries), "a claim locks their run"
    with CaptureQueriesContext(connection) as submitted:
        policy.rating_submit_and_claim_next(
            rater=user, dataset=dataset.name, slot_id=held.slot_id, next_kind="SIS", **submit_kwargs("locked")
        )
    assert locked_participant_reads(submitted.captured_queries), "two tabs must take their quota turns one at a time"
    following = policy.slot_claim(rater=user, dataset=dataset.name, kind="SIS")
    with CaptureQueriesContext(connection) as plain:
        policy.rating_submit(rater=user, dataset=dataset.name, slot_id=following.slot_id, **submit_kwargs("plain"))
    assert locked_participant_reads(plain.captured_queries), "a submit without the next claim locks it too"
    with CaptureQueriesContext(connection) as viewed:
        policy.entry_check(rater=user, dataset=dataset.name, kind="SIS")
    assert not locked_participant_reads(viewed.captured_queries), "opening a page waits for no claim"


# --- slot actions ------------------------------------------------------------------------


def test_a_participant_renews_their_lease_from_the_time_given():
    dataset = two_kind_dataset()
    _, user = join(dataset, kinds=["SIS"], quota=3)
    held = policy.slot_claim(rater=user, dataset=dataset.name, kind="SIS")
    later = timezone.now() + timedelta(seconds=90)
    renewed = policy.slot_heartbeat(rater=user, dataset=dataset.name, slot_id=held.slot_id, now=later)
    assert renewed == later + timedelta(seconds=settings.LEASE_TTL_SECONDS)
    assert RatingSlot.objects.get(pk=held.slot_id).lease_expires_at == renewed


def test_a_gold_lease_is_renewed_from_the_time_given(tmp_path):
    dataset = two_kind_dataset(gold_one_in=1)
    gold_sis_pairs(dataset, 2, tmp_path)
    user = rater(["SIS"])
    held = policy.slot_claim(rater=user, dataset=dataset.name, kind="SIS")
    assert GoldLease.objects.filter(pk=held.slot_id).exists(), "one in one claims is gold"
    later = timezone.now() + timedelta(seconds=90)
    renewed = policy.slot_heartbeat(rater=user, dataset=dataset.name, slot_id=held.slot_id, now=later)
    assert renewed == later + timedelta(seconds=settings.LEASE_TTL_SECONDS)
    assert GoldLease.objects.get(pk=held.slot_id).lease_expires_at == renewed


def test_a_skip_is_recorded_at_the_time_given():
    dataset = two_kind_dataset()
    user = rater(["SIS"])
    held = policy.slot_claim(rater=user, dataset=dataset.name, kind="SIS")
    earlier = timezone.now() - timedelta(hours=1)
    policy.slot_skip(rater=user, dataset=dataset.name, slot_id=held.slot_id, now=earlier)
    assert PairSkip.objects.get(rater=user).created_at == earlier


def test_a_participant_flags_their_item_with_the_reason_note_and_time_given():
    dataset = two_kind_dataset()
    _, user = join(dataset, kinds=["SIS"], quota=3)
    held = policy.slot_claim(rater=user, dataset=dataset.name, kind="SIS")
    earlier = timezone.now() - timedelta(hours=1)
    flag = policy.slot_flag(
        rater=user, dataset=dataset.name, slot_id=held.slot_id, reason=FlagReason.OTHER, note="torn", now=earlier
    )
    assert (flag.reason, flag.note) == ("other", "torn")
    assert PairSkip.objects.get(rater=user).created_at == earlier
    second = policy.slot_claim(rater=user, dataset=dataset.name, kind="SIS")
    plain = policy.slot_flag(rater=user, dataset=dataset.name, slot_id=second.slot_id, reason=FlagReason.BROKEN_IMAGE)
    assert plain.note == "", "no note given, none stored"


def test_a_gold_flag_answers_with_the_time_given(tmp_path):
    dataset = two_kind_dataset(gold_one_in=1)
    gold_sis_pairs(dataset, 2, tmp_path)
    user = rater(["SIS"])
    held = policy.slot_claim(rater=user, dataset=dataset.name, kind="SIS")
    earlier = timezone.now() - timedelta(hours=1)
    flag = policy.slot_flag(
        rater=user, dataset=dataset.name, slot_id=held.slot_id, reason=FlagReason.BROKEN_IMAGE, now=earlier
    )
    assert (flag.pair_id, flag.created_at) == (GoldLease.objects.get(pk=held.slot_id).gold_pair_id, earlier)


# --- the quiz first, and leaving -------------------------------------------------------------


def test_a_participant_owing_the_quiz_of_another_kind_is_told_to_take_it_and_then_rates(tmp_path):
    """STS is quiz-gated on an SIS+STS link: SIS claims are refused with the reason until
    the STS quiz is passed, then served."""
    dataset = crowd_dataset(tmp_path, gold_one_in=0)
    sts_quiz(dataset)
    link = campaign_link_create(dataset=dataset, name="w", kinds=["SIS", "STS"], quota=5, completion_code="C-1")
    browser = ParticipantClient(link, "p1")
    browser.join()
    refused = browser._post("claim/", {"kind": "SIS"})
    assert refused.status_code == 403
    assert refused.json()["code"] == "quiz_first"
    assert refused.json()["detail"] == "take the STS quiz of this study first: it comes before any rating"
    user = link.participants.get().user
    state = quiz_state(rater=user, dataset=dataset.name, kind="STS")
    for step in range(50):
        if state.result is not None:
            break
        quiz_answer(
            rater=user,
            dataset=dataset.name,
            kind="STS",
            gold_pair_id=state.gold_pair_id,
            score=dataset.gold_pairs.get(pk=state.gold_pair_id).gold_score,
            time_on_item_ms=3000,
            time_to_first_move_ms=500,
            adjustments=1,
            idempotency_key=f"pass-{step}",
        )
        state = quiz_state(rater=user, dataset=dataset.name, kind="STS")
    assert state.qualified
    assert browser.claim("SIS") is not None, "the quiz passed, SIS is served"


def test_leaving_at_a_given_time_returns_the_held_item_and_ends_the_run_at_that_time():
    dataset = two_kind_dataset()
    _, user = join(dataset, kinds=["SIS"], quota=3)
    held = policy.slot_claim(rater=user, dataset=dataset.name, kind="SIS")
    later = timezone.now().replace(microsecond=0) + timedelta(minutes=5)
    left = policy.participant_leave(rater=user, dataset=dataset.name, now=later)
    assert (left.outcome, left.finished_at, left.skips_done) == ("left", later, 1)
    skip = PairSkip.objects.get(rater=user)
    assert (skip.pair_id, skip.created_at) == (RatingSlot.objects.get(pk=held.slot_id).pair_id, later)
    assert RatingSlot.objects.get(pk=held.slot_id).state == SlotState.OPEN, "another rater may take it at once"


@pytest.mark.postgres
def test_leaving_locks_the_participants_run():
    """No claim of another tab slips in between returning the items and the end."""
    dataset = two_kind_dataset()
    _, user = join(dataset, kinds=["SIS"], quota=3)
    policy.slot_claim(rater=user, dataset=dataset.name, kind="SIS")
    with CaptureQueriesContext(connection) as leaving:
        policy.participant_leave(rater=user, dataset=dataset.name)
    assert locked_participant_reads(leaving.captured_queries)
