"""What `make mutation` found the quota's tests let pass (annotation/people/crowd/quota.py): the
items a participant did and holds are their own ratings and leases, ordinary and gold, in
their link's dataset and kinds (ratings: since joining; gold: served in the queue, not the
quiz), and no one else's."""

from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from annotation.models import GoldLease, GoldPurpose, GoldRating, QualitySettings, Rating, RatingSlot, SlotState
from annotation.people.crowd.join import participant_join
from annotation.people.crowd.links import campaign_link_create
from annotation.people.crowd.quota import participant_items_done, quota_use
from annotation.rating import policy
from tests.support.crowd_support import crowd_dataset, platform_id
from tests.support.queue_support import rater, submit_kwargs

pytestmark = pytest.mark.django_db


def ago(minutes: int) -> datetime:
    return timezone.now() - timedelta(minutes=minutes)


def lease_slot(dataset, kind: str, user, *, leased_at: datetime | None = None) -> int:
    """An open slot of ``kind`` leased to ``user`` (as a claim would, at ``leased_at``)."""
    slot = RatingSlot.objects.filter(dataset=dataset, kind=kind, state=SlotState.OPEN).order_by("id").first()
    leased_at = leased_at or timezone.now()
    RatingSlot.objects.filter(pk=slot.pk).update(
        state=SlotState.LEASED, rater=user, leased_at=leased_at, lease_expires_at=leased_at + timedelta(minutes=10)
    )
    return slot.pk


def gold_lease(dataset, kind: str, user, *, leased_at: datetime | None = None) -> int:
    """A gold lease of ``kind`` served to a plain rater, then handed to ``user`` (as if
    served at ``leased_at``)."""
    QualitySettings.objects.filter(dataset=dataset).update(gold_one_in=1)
    served = policy.slot_claim(rater=rater(), dataset=dataset.name, kind=kind)
    leased_at = leased_at or timezone.now()
    handed = GoldLease.objects.filter(pk=served.slot_id).update(rater=user, leased_at=leased_at)
    assert handed == 1, "one in one claims is gold"
    return served.slot_id


def test_a_participant_holds_only_their_own_leases_of_the_links_dataset_and_kinds(tmp_path):
    own = crowd_dataset(tmp_path, gold_one_in=0)
    elsewhere = crowd_dataset(tmp_path, gold_one_in=0)
    link = campaign_link_create(dataset=own, name="wave", kinds=["SIS"], quota=5, completion_code="DONE1")
    participant = participant_join(token=link.token, params={"PROLIFIC_PID": platform_id("held-1")})
    user, other = participant.user, rater()
    # The gold lease, served later (a higher id), is the older: the order is by lease time.
    mine = [gold_lease(own, "SIS", user, leased_at=ago(9)), lease_slot(own, "SIS", user, leased_at=ago(5))]
    # Not theirs to count: another rater's SIS items, their own in another dataset or of a
    # kind outside the link.
    lease_slot(own, "SIS", other)
    gold_lease(own, "SIS", other)
    lease_slot(elsewhere, "SIS", user)
    gold_lease(elsewhere, "SIS", user)
    lease_slot(own, "STS", user)
    gold_lease(own, "STS", user)
    use = quota_use(participant)
    assert use.held == ((mine[0], "SIS"), (mine[1], "SIS")), "their own two, oldest first"
    assert (use.quota, use.done) == (5, 0)


def test_items_held_since_the_same_instant_are_in_the_order_they_were_served(tmp_path):
    dataset = crowd_dataset(tmp_path, gold_one_in=0)
    link = campaign_link_create(dataset=dataset, name="wave", kinds=["SIS", "STS"], quota=5, completion_code="DONE1")
    participant = participant_join(token=link.token, params={"PROLIFIC_PID": platform_id("same-1")})
    instant = ago(3)
    sts_slot = lease_slot(dataset, "STS", participant.user, leased_at=instant)
    sis_gold = gold_lease(dataset, "SIS", participant.user, leased_at=instant)
    assert sts_slot < sis_gold
    assert quota_use(participant).held == ((sts_slot, "STS"), (sis_gold, "SIS"))


def rating_given(dataset, kind: str, giver, to=None, *, gold: bool = False, created_at: datetime | None = None) -> int:
    """A rating of ``kind`` (a queue gold rating with ``gold``) the plain rater ``giver``
    gave (each of theirs is of another pair), handed to ``to`` (as if given at
    ``created_at``); returns its id."""
    QualitySettings.objects.filter(dataset=dataset).update(gold_one_in=1 if gold else 0)
    served = policy.slot_claim(rater=giver, dataset=dataset.name, kind=kind)
    stored = policy.rating_submit(
        rater=giver, dataset=dataset.name, slot_id=served.slot_id, **submit_kwargs(f"given-{served.slot_id}")
    )
    model = GoldRating if gold else Rating
    handed = model.objects.filter(pk=stored.rating_id).update(
        rater=to or giver, created_at=created_at or timezone.now()
    )
    assert handed == 1, "one in one claims is gold, none in zero"
    return stored.rating_id


def test_a_participant_did_only_their_own_ratings_of_the_links_dataset_and_kinds_since_joining(tmp_path):
    own = crowd_dataset(tmp_path, gold_one_in=0)
    elsewhere = crowd_dataset(tmp_path, gold_one_in=0)
    link = campaign_link_create(dataset=own, name="wave", kinds=["SIS"], quota=5, completion_code="DONE1")
    participant = participant_join(token=link.token, params={"PROLIFIC_PID": platform_id("done-1")})
    user, giver, before = participant.user, rater(), participant.started_at - timedelta(days=1)
    rating_given(own, "SIS", giver, user)
    rating_given(own, "SIS", giver, user, gold=True)
    assert participant_items_done(participant) == 2
    # Not theirs to count: ratings in another dataset, of a kind outside the link, from
    # before they joined; another rater's gold rating, their quiz answer.
    rating_given(elsewhere, "SIS", giver, user)
    rating_given(own, "STS", giver, user)
    rating_given(own, "SIS", giver, user, created_at=before)
    rating_given(own, "SIS", giver, gold=True)
    rating_given(elsewhere, "SIS", giver, user, gold=True)
    rating_given(own, "STS", giver, user, gold=True)
    rating_given(own, "SIS", giver, user, gold=True, created_at=before)
    quiz = rating_given(own, "SIS", giver, user, gold=True)
    GoldRating.objects.filter(pk=quiz).update(purpose=GoldPurpose.QUIZ, lease=None)
    assert participant_items_done(participant) == 2
