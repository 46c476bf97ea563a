"""A token the process remembers is not looked up again: its check rides ahead of the
request's first statement (annotation.people.authentication.token_check). Every way
around it a client could try after its token or account changed is answered as a fresh
lookup answers it (401 or 403), with nothing leased or stored: the token deleted or
expired, the account deactivated, the rater role taken away. Through the HTTP API,
outside any test transaction, as production runs it."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from knox.models import AuthToken
from rest_framework.test import APIClient

from annotation.apis.fields import rater_id_decode
from annotation.models import Rating, RatingSlot, SlotState
from annotation.people import authentication
from annotation.people.crowd.join import participant_join
from annotation.people.crowd.links import campaign_link_create
from tests.factories import SplitFactory, UserFactory
from tests.support.queue_support import queue_pairs

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

BODY = {"score": 2.5, "time_on_item_ms": 4000, "time_to_first_move_ms": 600, "adjustments": 1}


@pytest.fixture(params=[True, False], ids=["prepared", "plain"])
def remembered(settings, request):
    """(dataset, rater, their token client, the slot they hold, the token's key): a
    rater whose token this process looked up and remembers, holding a slot; with
    prepared statements and without (behind a transaction-mode pooler)."""
    settings.SQL_PATHS = "postgres"
    settings.DB_PREPARED_STATEMENTS = request.param
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=6, ratings_per_pair=3)
    rater = UserFactory(roles=["rater"], qualified_for=["SIS"])
    _, key = AuthToken.objects.create(user=rater)
    client = APIClient(HTTP_AUTHORIZATION=f"Token {key}")
    dataset = split.dataset.name
    with CaptureQueriesContext(connection) as first:
        held = claim(client, dataset)
    assert held.status_code == 200, held.content
    assert run(first.captured_queries)[0] == "lookup"
    with CaptureQueriesContext(connection) as again:
        assert claim(client, dataset).json()["resumed"] is True
    assert run(again.captured_queries) == ["check"]  # remembered: the claim rides behind the check
    return dataset, rater, client, held.json()["slot_id"], key


def run(queries) -> list[str]:
    """What each round trip ran, without the PREPAREs: "check" (the token's check, with
    the statement behind it), "lookup" (the token's), else the statement's first word."""
    names = []
    for query in queries:
        sql = query["sql"]
        if "PREPARE" in sql:
            continue
        if "auth_token_check" in sql or "annotation_refuse_ahead" in sql:
            names.append("check")
        elif "auth_knox_token_roles" in sql or "md5(u::text)" in sql:
            names.append("lookup")
        else:
            names.append(sql.split()[0])
    return names


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
def test_a_remembered_token_claims_nothing_once_it_or_its_account_changed(remembered, change, status, detail):
    dataset, rater, client, _, key = remembered
    held = leases_of(rater)
    RatingSlot.objects.filter(pk__in=held).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    change(rater)
    # Unchanged, this claim would lease the rater a fresh slot (their own has expired).
    answer = claim(client, dataset, progress_tz="Europe/Berlin")
    assert (answer.status_code, answer.json()["detail"]) == (status, detail)
    assert leases_of(rater) == held
    assert RatingSlot.objects.filter(pk__in=held, lease_expires_at__lt=timezone.now()).count() == len(held)
    # Refused once, it is forgotten: looked up again, and remembered only as it now stands.
    remembered_now = authentication._remembered.get(authentication.hash_token(key))
    assert remembered_now is None or remembered_now.roles == ()


@pytest.mark.parametrize(("change", "status", "detail"), CHANGES, ids=[c[0].__name__ for c in CHANGES])
def test_a_remembered_token_stores_nothing_once_it_or_its_account_changed(remembered, change, status, detail):
    dataset, rater, client, slot_id, _ = remembered
    change(rater)
    answer = submit(client, dataset, slot_id, "after the change")
    assert (answer.status_code, answer.json()["detail"]) == (status, detail)
    assert not Rating.objects.filter(rater=rater).exists()
    assert RatingSlot.objects.filter(rater=rater, state=SlotState.LEASED).count() == 1


def test_a_request_refused_before_any_statement_still_answers_the_deleted_tokens_401(remembered):
    """An unknown time zone is refused before anything is read: the check then runs on its
    own before the answer goes out, so a deleted token never learns more than its 401."""
    dataset, rater, client, _, _ = remembered
    assert claim(client, dataset, progress_tz="Mars/Olympus_Mons").status_code == 400  # the token stands
    token_deleted(rater)
    answer = claim(client, dataset, progress_tz="Mars/Olympus_Mons")
    assert (answer.status_code, answer.json()["detail"]) == (401, "Invalid token.")


def test_a_renamed_rater_is_looked_up_again_and_served(remembered):
    """The user row is compared whole: any change to it (here the username) stops the
    statement behind the check; the token is then looked up, remembered anew and served."""
    dataset, rater, client, slot_id, key = remembered
    type(rater).objects.filter(pk=rater.pk).update(username="renamed")
    with CaptureQueriesContext(connection) as renamed:
        answer = claim(client, dataset)
    assert (answer.status_code, answer.json()["slot_id"]) == (200, slot_id)
    names = run(renamed.captured_queries)
    assert names[:2] == ["check", "lookup"]
    assert "renamed" in authentication._remembered[authentication.hash_token(key)].user_values
    with CaptureQueriesContext(connection) as again:
        assert submit(client, dataset, slot_id, "renamed").status_code == 201
    assert run(again.captured_queries) == ["check"]


def test_another_token_of_the_same_rater_is_checked_as_its_own(remembered):
    """Deleting one of a rater's tokens refuses that one only."""
    dataset, rater, client, slot_id, _ = remembered
    _, other_key = AuthToken.objects.create(user=rater)
    other = APIClient(HTTP_AUTHORIZATION=f"Token {other_key}")
    assert claim(other, dataset).status_code == 200
    AuthToken.objects.exclude(digest=authentication.hash_token(other_key)).delete()
    assert claim(client, dataset).status_code == 401
    assert submit(other, dataset, slot_id, "other").status_code == 201


def test_a_header_a_lookup_refuses_is_refused_for_a_remembered_token_too(remembered):
    """The header is read alike both ways: a no-break space is no separator to either."""
    dataset, _, client, _, key = remembered
    odd = APIClient(HTTP_AUTHORIZATION=f"Token\xa0{key}")
    assert claim(odd, dataset).status_code == 401
    assert claim(client, dataset).status_code == 200


def test_a_participants_remembered_token_is_checked_before_their_first_query(settings):
    """A participant's claim and submit read their run (the ORM) before any statement of
    the queue: the check runs on its own before that read."""
    settings.SQL_PATHS = "postgres"
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=4, ratings_per_pair=3)
    link = campaign_link_create(dataset=split.dataset, name="study", kinds=["SIS"], quota=3, completion_code="DONE1")
    run_ = participant_join(token=link.token, params={"PROLIFIC_PID": "p-token"})
    _, key = AuthToken.objects.create(user=run_.user)
    client = APIClient(HTTP_AUTHORIZATION=f"Token {key}")
    dataset = split.dataset.name
    held = claim(client, dataset)
    assert held.status_code == 200, held.content
    with CaptureQueriesContext(connection) as again:
        assert claim(client, dataset).json()["resumed"] is True
    assert next(name for name in run(again.captured_queries) if name != "BEGIN") == "check"
    token_deleted(run_.user)
    assert claim(client, dataset).status_code == 401
    assert submit(client, dataset, held.json()["slot_id"], "after").status_code == 401
    assert not Rating.objects.filter(rater=run_.user).exists()
    assert leases_of(run_.user) == {rater_id_decode("slot", held.json()["slot_id"])}


def test_the_process_remembers_at_most_so_many_tokens(monkeypatch):
    monkeypatch.setattr(authentication, "REMEMBERED_MAX", 3)
    monkeypatch.setattr(authentication, "_remembered", {})
    entry = authentication.Remembered(timezone.now(), None, [], "fingerprint", ("rater",))
    for digest in "abc":
        authentication._remember(digest, entry)
    assert list(authentication._remembered) == ["a", "b", "c"]
    authentication._remember("d", entry)  # full: emptied, then d
    assert list(authentication._remembered) == ["d"]
