"""A change to a token or its account counts from the very next request: every way around
it a client could try after its token was deleted or expired, its account deactivated or
its rater role taken away is answered 401 or 403 at once, with nothing leased or stored.
Every request looks its token up (annotation.people.authentication); nothing of it is
kept between requests. Through the HTTP API, outside any test transaction (autocommit),
on the rating cycle's fast path, as production runs it."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone
from knox.crypto import hash_token
from knox.models import AuthToken
from rest_framework.test import APIClient

from annotation.apis.fields import rater_id_decode
from annotation.models import Rating, RatingSlot, SlotState
from annotation.people.crowd.join import participant_join
from annotation.people.crowd.links import campaign_link_create
from tests.factories import SplitFactory, UserFactory
from tests.support.crowd_support import platform_id
from tests.support.queue_support import queue_pairs

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

BODY = {"score": 2.5, "time_on_item_ms": 4000, "time_to_first_move_ms": 600, "adjustments": 1}


@pytest.fixture(params=[True, False], ids=["prepared", "plain"])
def token_rater(settings, request):
    """(dataset, rater, their token client, the slot they hold, the token's key): a rater
    whose token has served two requests, holding a slot; with prepared statements and
    without (behind a transaction-mode pooler)."""
    settings.SQL_PATHS = "postgres"
    settings.DB_PREPARED_STATEMENTS = request.param
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=6, ratings_per_pair=3)
    rater = UserFactory(roles=["rater"], qualified_for=["SIS"])
    _, key = AuthToken.objects.create(user=rater)
    client = APIClient(HTTP_AUTHORIZATION=f"Token {key}")
    dataset = split.dataset.name
    held = claim(client, dataset)
    assert held.status_code == 200, held.content
    assert claim(client, dataset).json()["resumed"] is True
    return dataset, rater, client, held.json()["slot_id"], key


def claim(client, dataset: str, **body):
    return client.post(f"/api/rate/{dataset}/claim/", {"kind": "SIS", **body}, format="json")


def submit(client, dataset: str, slot_id: str, key: str):
    return client.post(f"/api/rate/{dataset}/slots/{slot_id}/submit/", {**BODY, "idempotency_key": key}, format="json")


def token_deleted(rater):
    AuthToken.objects.filter(user=rater).delete()


def token_expired(rater):
    AuthToken.objects.filter(user=rater).update(expiry=timezone.now() - timedelta(seconds=1))


def account_deactivated(rater):
    type(rater).objects.filter(pk=rater.pk).update(is_active=False)


def rater_role_taken(rater):
    rater.groups.remove(Group.objects.get(name="rater"))


CHANGES = [
    (token_deleted, 401, "Invalid token."),
    (token_expired, 401, "Token expired; POST /api/auth/token/ for a new one."),
    (account_deactivated, 401, "User inactive or deleted."),
    (rater_role_taken, 403, "Only raters may do this."),
]


def leases_of(rater) -> set[int]:
    return set(RatingSlot.objects.filter(rater=rater, state=SlotState.LEASED).values_list("pk", flat=True))


@pytest.mark.parametrize(("change", "status", "detail"), CHANGES, ids=[c[0].__name__ for c in CHANGES])
def test_a_token_claims_nothing_once_it_or_its_account_changed(token_rater, change, status, detail):
    dataset, rater, client, _, _ = token_rater
    held = leases_of(rater)
    RatingSlot.objects.filter(pk__in=held).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    change(rater)
    # Unchanged, this claim would lease the rater a fresh slot (their own has expired).
    answer = claim(client, dataset, progress_tz="Europe/Berlin")
    assert (answer.status_code, answer.json()["detail"]) == (status, detail)
    assert leases_of(rater) == held
    assert RatingSlot.objects.filter(pk__in=held, lease_expires_at__lt=timezone.now()).count() == len(held)


@pytest.mark.parametrize(("change", "status", "detail"), CHANGES, ids=[c[0].__name__ for c in CHANGES])
def test_a_token_stores_nothing_once_it_or_its_account_changed(token_rater, change, status, detail):
    dataset, rater, client, slot_id, _ = token_rater
    change(rater)
    answer = submit(client, dataset, slot_id, "after the change")
    assert (answer.status_code, answer.json()["detail"]) == (status, detail)
    assert not Rating.objects.filter(rater=rater).exists()
    assert RatingSlot.objects.filter(rater=rater, state=SlotState.LEASED).count() == 1


def test_a_deleted_tokens_request_with_a_bad_body_is_answered_401_not_400(token_rater):
    """The token is read before the body: a deleted token learns nothing of what its
    request would have been answered (here an unknown time zone's 400)."""
    dataset, rater, client, _, _ = token_rater
    assert claim(client, dataset, progress_tz="Mars/Olympus_Mons").status_code == 400  # the token stands
    token_deleted(rater)
    answer = claim(client, dataset, progress_tz="Mars/Olympus_Mons")
    assert (answer.status_code, answer.json()["detail"]) == (401, "Invalid token.")


def test_a_renamed_rater_is_served_with_the_same_token(token_rater):
    dataset, rater, client, slot_id, _ = token_rater
    type(rater).objects.filter(pk=rater.pk).update(username="renamed")
    answer = claim(client, dataset)
    assert (answer.status_code, answer.json()["slot_id"]) == (200, slot_id)
    assert submit(client, dataset, slot_id, "renamed").status_code == 201


def test_another_token_of_the_same_rater_stands_on_its_own(token_rater):
    """Deleting one of a rater's tokens refuses that one only."""
    dataset, rater, client, slot_id, _ = token_rater
    _, other_key = AuthToken.objects.create(user=rater)
    other = APIClient(HTTP_AUTHORIZATION=f"Token {other_key}")
    assert claim(other, dataset).status_code == 200
    AuthToken.objects.exclude(digest=hash_token(other_key)).delete()
    assert claim(client, dataset).status_code == 401
    assert submit(other, dataset, slot_id, "other").status_code == 201


def test_a_header_split_by_a_no_break_space_is_refused(token_rater):
    """A no-break space separates nothing: the header is one word, no credentials."""
    dataset, _, client, _, key = token_rater
    odd = APIClient(HTTP_AUTHORIZATION=f"Token\xa0{key}")
    assert claim(odd, dataset).status_code == 401
    assert claim(client, dataset).status_code == 200


def test_a_participants_deleted_token_claims_and_stores_nothing(settings):
    """A participant's claim and submit read their run (the ORM) before any statement of
    the queue: the token is refused before that read."""
    settings.SQL_PATHS = "postgres"
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=4, ratings_per_pair=3)
    link = campaign_link_create(dataset=split.dataset, name="study", kinds=["SIS"], quota=3, completion_code="DONE1")
    run = participant_join(token=link.token, params={"PROLIFIC_PID": platform_id("p-token")})
    _, key = AuthToken.objects.create(user=run.user)
    client = APIClient(HTTP_AUTHORIZATION=f"Token {key}")
    dataset = split.dataset.name
    held = claim(client, dataset)
    assert held.status_code == 200, held.content
    assert claim(client, dataset).json()["resumed"] is True
    token_deleted(run.user)
    assert claim(client, dataset).status_code == 401
    assert submit(client, dataset, held.json()["slot_id"], "after").status_code == 401
    assert not Rating.objects.filter(rater=run.user).exists()
    assert leases_of(run.user) == {rater_id_decode("slot", held.json()["slot_id"])}
