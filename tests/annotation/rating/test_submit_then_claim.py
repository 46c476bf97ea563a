"""The rating page's submit and its next claim in one round trip and one transaction
(annotation/serving/submit_then_claim.py), through the HTTP API, outside any test
transaction (autocommit, as production runs): what it stores and claims, and that a
submission it does not store claims nothing, so every refusal, repeat and conflict is
answered as the usual way answers it."""

import threading
import time
from datetime import timedelta

import psycopg2
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.apis.fields import rater_id_decode
from annotation.models import Pair, Rating, RatingSlot, SlotState
from annotation.quality.pauses import rater_pause
from annotation.serving import claim as claim_module
from tests.factories import SplitFactory, UserFactory
from tests.support.hot_path import BODY, LOOKUP, PAGE, rated_dataset, statement_names, token_client
from tests.support.queue_support import queue_pairs

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

TOGETHER = "serving_submit_fast_stashed+queue_claim_ordinary_after_submit_v2_with_progress"


def submit(client, dataset: str, slot: str, key: str, **extra):
    body = {**BODY, "idempotency_key": key, "claim_next_kind": "SIS", **PAGE, **extra}
    with CaptureQueriesContext(connection) as captured:
        answer = client.post(f"/api/rate/{dataset}/slots/{slot}/submit/", body, format="json")
    # The round trips, without the PREPAREs of statements a connection runs first, after
    # the token's lookup (every request's first, in a round trip of its own; by its table
    # when not a prepared statement).
    queries = [query for query in captured.captured_queries if statement_names([query]) != ["SET"]]
    assert statement_names(queries[:1]) == [LOOKUP] or "knox_authtoken" in queries[0]["sql"], queries[0]
    return answer, statement_names(queries[1:])


def claim(client, dataset: str) -> str:
    answer = client.post(f"/api/rate/{dataset}/claim/", {"kind": "SIS", **PAGE}, format="json")
    assert answer.status_code == 200, answer.content
    return answer.json()["slot_id"]


def leased_by(user) -> list[int]:
    return list(RatingSlot.objects.filter(rater=user, state=SlotState.LEASED).values_list("id", flat=True))


def warm(client, dataset: str) -> str:
    """A page claim and a submit with the next claim (its statements prepared on the
    connection, the dataset's id learnt): the slot the rater holds next."""
    stored, _ = submit(client, dataset, claim(client, dataset), "warm page")
    assert stored.status_code == 201, stored.content
    return stored.json()["next"]["slot_id"]


def test_a_rating_and_the_next_claim_travel_in_one_round_trip(settings, tmp_path):
    dataset, client = rated_dataset(settings, tmp_path, gold_one_in=None)
    slot = warm(client, dataset)
    stored, statements = submit(client, dataset, slot, "one trip")
    assert stored.status_code == 201, stored.content
    assert statements == [TOGETHER]
    answer = stored.json()
    rating = Rating.objects.get(pk=rater_id_decode("rating", str(answer["rating_id"])))
    assert (rating.slot_id, rating.idempotency_key, rating.score) == (rater_id_decode("slot", slot), "one trip", 2.5)
    assert answer["slot_id"] == slot and not answer["replayed"]
    assert answer["pair_id"] != answer["next"]["pair_id"]
    following = rater_id_decode("slot", answer["next"]["slot_id"])
    assert leased_by(rating.rater) == [following]
    # The progress it answers is read after the claim, with the rating stored before it.
    assert answer["progress"]["held_slot_id"] == answer["next"]["slot_id"]
    progress = client.get(f"/api/rate/{dataset}/progress/", {"tz": "Europe/Berlin"}).json()
    assert answer["progress"] == progress


def test_a_submission_refused_claims_nothing(settings, tmp_path):
    """The lease ran out and another rater took the slot: 409, and the claim that rode
    with the refused submit leased nothing (it claims only after a stored rating)."""
    dataset, client = rated_dataset(settings, tmp_path, gold_one_in=None)
    slot = claim(client, dataset)
    slot_id = rater_id_decode("slot", slot)
    mine = RatingSlot.objects.get(pk=slot_id).rater
    other = UserFactory(roles=["rater"], qualified_for=["SIS"])
    RatingSlot.objects.filter(pk=slot_id).update(
        rater=other, previous_rater=mine, leased_at=timezone.now(), lease_expires_at=timezone.now() + timedelta(hours=1)
    )
    refused, statements = submit(client, dataset, slot, "too late")
    assert refused.status_code == 409, refused.content
    assert statements[0] == TOGETHER  # tried together first, then the usual way said why
    assert not [name for name in statements[1:] if name.startswith("serving_submit_fast")], (
        "the usual way does not run the statement that stored nothing again"
    )
    assert leased_by(mine) == []
    assert not Rating.objects.filter(rater=mine, idempotency_key="too late").exists()


def test_a_repeat_claims_nothing_more_and_answers_the_slot_leased_after_the_rating(settings, tmp_path):
    dataset, client = rated_dataset(settings, tmp_path, gold_one_in=None)
    slot = claim(client, dataset)
    first, _ = submit(client, dataset, slot, "twice")
    assert first.status_code == 201
    again, statements = submit(client, dataset, slot, "twice")
    assert again.status_code == 200 and again.json()["replayed"], again.content
    assert again.json()["rating_id"] == first.json()["rating_id"]
    assert again.json()["next"]["slot_id"] == first.json()["next"]["slot_id"]
    assert statements[0] == TOGETHER
    rater = Rating.objects.get(idempotency_key="twice").rater
    assert len(leased_by(rater)) == 1
    assert Rating.objects.filter(rater=rater, idempotency_key="twice").count() == 1


def test_a_key_used_on_another_slot_is_refused_and_the_slot_stays_held(settings, tmp_path):
    dataset, client = rated_dataset(settings, tmp_path, gold_one_in=None)
    first, _ = submit(client, dataset, claim(client, dataset), "used")
    held = first.json()["next"]["slot_id"]
    refused, _ = submit(client, dataset, held, "used")
    assert refused.status_code == 409 and "idempotency key" in refused.json()["detail"], refused.content
    rater = Rating.objects.get(idempotency_key="used").rater
    assert leased_by(rater) == [rater_id_decode("slot", held)]


def test_a_rater_paused_since_the_claim_is_refused_and_holds_nothing_new(settings, tmp_path):
    dataset, client = rated_dataset(settings, tmp_path, gold_one_in=None)
    slot = claim(client, dataset)
    slot_id = rater_id_decode("slot", slot)
    rater = RatingSlot.objects.get(pk=slot_id).rater
    admin = UserFactory(roles=["admin"])
    rater_pause(rater=rater, dataset=RatingSlot.objects.get(pk=slot_id).dataset, reason="checking", created_by=admin)
    refused, _ = submit(client, dataset, slot, "paused")
    assert refused.status_code == 403, refused.content
    assert not Rating.objects.filter(rater=rater).filter(idempotency_key="paused").exists()
    assert leased_by(rater) == [slot_id]  # still the one it held, nothing more


def test_the_last_pair_is_stored_with_nothing_next(settings):
    settings.SQL_PATHS = "postgres"
    settings.DB_PREPARED_STATEMENTS = True
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=1, ratings_per_pair=2)
    client = token_client(UserFactory(roles=["rater"], qualified_for=["SIS"]))
    dataset = split.dataset.name
    stored, statements = submit(client, dataset, claim(client, dataset), "last")
    assert stored.status_code == 201, stored.content
    # Nothing claimed, so the claim read no progress: it is read on its own, as after any such claim.
    assert statements == [TOGETHER, "rater_progress_by_id"]
    assert stored.json()["next"] is None
    assert Rating.objects.filter(idempotency_key="last").count() == 1
    assert stored.json()["progress"]["held_slot_id"] is None


def test_a_rating_that_fills_an_adaptive_pair_has_its_decision(settings):
    """The submit's row travels through the claim's answer: its "adaptive pair filled"
    flag still brings the pair's decision (close, or one more slot)."""
    settings.SQL_PATHS = "postgres"
    settings.DB_PREPARED_STATEMENTS = True
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=3, ratings_per_pair=1, adaptive=(3, 0.1))
    client = token_client(UserFactory(roles=["rater"], qualified_for=["SIS"]))
    dataset = split.dataset.name
    slot = claim(client, dataset)
    pair_id = RatingSlot.objects.get(pk=rater_id_decode("slot", slot)).pair_id
    stored, statements = submit(client, dataset, slot, "fills")
    assert stored.status_code == 201, stored.content
    assert statements[0] == TOGETHER and "BEGIN" in statements  # then the decision, in its transaction
    pair = Pair.objects.get(pk=pair_id)
    # One rating cannot settle the pair within 0.1: the decision gave it one more slot.
    assert pair.ratings_required == 2
    assert RatingSlot.objects.filter(pair=pair).count() == 2


@pytest.mark.statement_count
def test_a_dataset_with_active_gold_hands_the_claim_over_with_the_rating_stored_once(settings, tmp_path, monkeypatch):
    dataset, client = rated_dataset(settings, tmp_path, gold_one_in=1_000_000)
    slot = claim(client, dataset)
    claim_module._gold_seen.clear()  # as a process that has not met this dataset's gold
    stored, statements = submit(client, dataset, slot, "gold on")
    assert stored.status_code == 201, stored.content
    assert statements[0] == TOGETHER and len(statements) == 2  # then the claim that serves gold
    assert dataset in claim_module._gold_seen
    assert Rating.objects.filter(idempotency_key="gold on").count() == 1
    rater = Rating.objects.get(idempotency_key="gold on").rater
    assert leased_by(rater) == [rater_id_decode("slot", stored.json()["next"]["slot_id"])]
    # Once the process knows, the submit and the claim go the way that serves gold.
    _, statements = submit(client, dataset, stored.json()["next"]["slot_id"], "known")
    assert TOGETHER not in statements


def test_without_prepared_statements_the_two_still_travel_together(settings, tmp_path):
    """Behind a transaction-mode pooler (DB_PREPARED_STATEMENTS off) the two statements go
    as SQL, in one round trip still: the setting lives within the one transaction."""
    dataset, client = rated_dataset(settings, tmp_path, gold_one_in=None)
    settings.DB_PREPARED_STATEMENTS = False
    slot = warm(client, dataset)
    body = {**BODY, "idempotency_key": "plain sql", "claim_next_kind": "SIS", **PAGE}
    with CaptureQueriesContext(connection) as captured:
        stored = client.post(f"/api/rate/{dataset}/slots/{slot}/submit/", body, format="json")
    assert stored.status_code == 201, stored.content
    lookup, round_trip = [query["sql"] for query in captured.captured_queries]  # the token's, then the two
    assert "knox_authtoken" in lookup and "knox_authtoken" not in round_trip
    assert "set_config('cxc.submitted'" in round_trip and "current_setting('cxc.submitted'" in round_trip
    rater = Rating.objects.get(idempotency_key="plain sql").rater
    assert leased_by(rater) == [rater_id_decode("slot", stored.json()["next"]["slot_id"])]
    refused, _ = submit(client, dataset, slot, "plain sql again")  # that slot is done: nothing claimed
    assert refused.status_code == 409, refused.content
    assert leased_by(rater) == [rater_id_decode("slot", stored.json()["next"]["slot_id"])]


def test_a_client_that_asks_no_progress_gets_the_next_pair_in_the_same_round_trip(settings, tmp_path):
    dataset, client = rated_dataset(settings, tmp_path, gold_one_in=None)
    slot = warm(client, dataset)
    body = {**BODY, "idempotency_key": "no progress", "claim_next_kind": "SIS"}
    for key in ("no progress warm", "no progress"):  # the first prepares the statement without the read
        with CaptureQueriesContext(connection) as captured:
            stored = client.post(
                f"/api/rate/{dataset}/slots/{slot}/submit/", {**body, "idempotency_key": key}, format="json"
            )
        assert stored.status_code == 201, stored.content
        slot = stored.json()["next"]["slot_id"]
    assert statement_names(captured.captured_queries) == [
        LOOKUP,
        "serving_submit_fast_stashed+queue_claim_ordinary_after_submit",
    ]
    assert "progress" not in stored.json()
    rater = Rating.objects.get(idempotency_key="no progress").rater
    assert leased_by(rater) == [rater_id_decode("slot", slot)]


def test_a_deadlock_with_the_raters_other_tab_is_answered_the_usual_way(settings):
    """Two tabs of one rater: this one rates its SIS slot and asks for STS while the other
    holds the rater's STS slot and reaches for the SIS one. The claim waits for the STS
    slot, the other for the SIS slot this submit holds, and PostgreSQL ends this
    transaction (40P01): rolled back whole, it is stored and claimed the usual way once
    the other lets go, instead of answering 500."""
    settings.SQL_PATHS = "postgres"
    settings.DB_PREPARED_STATEMENTS = True
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=3, ratings_per_pair=2)
    queue_pairs(split=split, kind="STS", n_pairs=3, ratings_per_pair=2)
    client = token_client(UserFactory(roles=["rater"], qualified_for=["SIS", "STS"]))
    dataset = split.dataset.name
    sis = client.post(f"/api/rate/{dataset}/claim/", {"kind": "SIS"}, format="json").json()["slot_id"]
    sts = client.post(f"/api/rate/{dataset}/claim/", {"kind": "STS"}, format="json").json()["slot_id"]
    sis_id, sts_id = rater_id_decode("slot", sis), rater_id_decode("slot", sts)
    with connection.cursor() as cursor:
        cursor.execute("SET deadlock_timeout = '300ms'")  # this session looks first, and is ended
    app_backend = connection.connection.get_backend_pid()
    server = {"dbname": connection.settings_dict["NAME"]} | {
        key.lower(): connection.settings_dict[key]
        for key in ("HOST", "PORT", "USER", "PASSWORD")
        if connection.settings_dict.get(key)
    }
    other, watcher = psycopg2.connect(**server), psycopg2.connect(**server)
    watcher.autocommit = True
    table = RatingSlot._meta.db_table
    reached: list[str] = []

    def other_tab():
        with other.cursor() as cursor:
            cursor.execute("SET deadlock_timeout = '30s'")
            cursor.execute(f"SELECT 1 FROM {table} WHERE id = %s FOR UPDATE", [sts_id])
            reached.append("holds STS")
            for _ in range(1000):  # until this submit's claim waits for the STS slot
                with watcher.cursor() as look:
                    look.execute("SELECT 1 FROM pg_locks WHERE pid = %s AND NOT granted", [app_backend])
                    if look.fetchone():
                        break
                time.sleep(0.01)
            cursor.execute(f"SELECT 1 FROM {table} WHERE id = %s FOR UPDATE", [sis_id])
            reached.append("took SIS")
            time.sleep(0.2)
        other.rollback()

    tab = threading.Thread(target=other_tab)
    tab.start()
    while not reached:
        time.sleep(0.01)
    try:
        stored, statements = submit(client, dataset, sis, "two tabs", claim_next_kind="STS")
    finally:
        tab.join(20)
        other.close()
        watcher.close()
    assert reached == ["holds STS", "took SIS"]  # the other tab got the SIS slot: this one was ended
    assert stored.status_code == 201, stored.content
    assert statements[0].startswith("serving_submit_fast_stashed+queue_claim_ordinary_after_submit")
    assert stored.json()["next"]["slot_id"] == sts  # the STS slot, resumed once the other let go
    assert Rating.objects.filter(idempotency_key="two tabs").count() == 1


@pytest.mark.django_db(transaction=False)
def test_inside_a_callers_transaction_the_two_go_apart(settings, tmp_path):
    """In a caller's transaction (here the test's) a unique violation of the round trip
    would spoil it, leaving the usual way nothing to answer with: the two go apart, and a
    key used before is answered 409 with the transaction still usable."""
    dataset, client = rated_dataset(settings, tmp_path, gold_one_in=None)
    first, statements = submit(client, dataset, claim(client, dataset), "used")
    assert first.status_code == 201, first.content
    assert TOGETHER not in statements
    refused, _ = submit(client, dataset, first.json()["next"]["slot_id"], "used")
    assert refused.status_code == 409, refused.content
    assert Rating.objects.filter(idempotency_key="used").count() == 1


def test_the_next_claim_is_of_the_kind_asked(settings):
    """A rater qualified for two kinds, rating SIS and asking for STS next, is claimed STS
    each time (the claim in the round trip takes the kind asked, not any kind)."""
    settings.SQL_PATHS = "postgres"
    settings.DB_PREPARED_STATEMENTS = True
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=6, ratings_per_pair=2)
    queue_pairs(split=split, kind="STS", n_pairs=6, ratings_per_pair=2)
    client = token_client(UserFactory(roles=["rater"], qualified_for=["SIS", "STS"]))
    dataset = split.dataset.name
    for number in range(4):
        sis = client.post(f"/api/rate/{dataset}/claim/", {"kind": "SIS"}, format="json").json()["slot_id"]
        stored, statements = submit(client, dataset, sis, f"asked {number}", claim_next_kind="STS")
        assert stored.status_code == 201, stored.content
        assert statements[0].startswith("serving_submit_fast_stashed+queue_claim_ordinary_after_submit")
        following = stored.json()["next"]
        assert following["kind"] == "STS", following
        client.post(f"/api/rate/{dataset}/slots/{following['slot_id']}/skip/")
