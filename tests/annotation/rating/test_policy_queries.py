"""The policy costs a plain rater nothing on the hot path: a claim and a submit through
the API, token-authenticated, take as many queries as before the policy existed (the
claim statement checks pause and qualification; the submit statement checks the pause).
A participant's checks cost a fixed handful of queries, whatever their history."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import GoldLease, QualitySettings
from annotation.people.crowd.join import participant_join
from annotation.people.crowd.links import campaign_link_create
from annotation.rating.policy import rating_submit, slot_claim, slot_heartbeat
from annotation.serving import routing as serving_routing
from tests.factories import SplitFactory, UserFactory
from tests.support.crowd_support import ParticipantClient, crowd_dataset, gold_upload
from tests.support.hot_path import token_client
from tests.support.queue_support import queue_pairs, submit_kwargs

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

# Counted on the code before the policy (the commit before it), the same way: 7 and 4. The
# claim is 4 since its statement draws gold's turn itself (before: the gold statement in a
# transaction of its own came first); in the test's transaction the claim's own
# transaction is a savepoint, counted. As production counts them: test_hot_path_statements.
# The token's read is its lookup, one query (for a while it was the check of a remembered
# token, run in a savepoint of its own in a transaction: two more each).
CLAIM_QUERIES = 4
SUBMIT_QUERIES = 4


def claim_and_submit(client, dataset, key: str) -> tuple[int, int]:
    """Queries of one claim and of one submit of the claimed pair."""
    with CaptureQueriesContext(connection) as claimed:
        response = client.post(f"/api/rate/{dataset}/claim/", {"kind": "SIS"}, format="json")
    assert response.status_code == 200, response.content
    body = {
        "score": 2.5,
        "time_on_item_ms": 4000,
        "time_to_first_move_ms": 600,
        "adjustments": 1,
        "idempotency_key": key,
    }
    with CaptureQueriesContext(connection) as submitted:
        stored = client.post(f"/api/rate/{dataset}/slots/{response.json()['slot_id']}/submit/", body, format="json")
    assert stored.status_code == 201, stored.content
    return len(claimed.captured_queries), len(submitted.captured_queries)


def test_a_plain_raters_claim_and_submit_cost_fewer_queries_than_before_the_policy(settings):
    # The PostgreSQL statements' round trips, whatever SQL_PATHS the run was given.
    settings.SQL_PATHS = "postgres"
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=6, ratings_per_pair=3)
    client = token_client(UserFactory(roles=["rater"], qualified_for=["SIS"]))
    claim_and_submit(client, split.dataset.name, "warm")  # prepares the statements once per connection
    counts = claim_and_submit(client, split.dataset.name, "measured")
    assert counts == (CLAIM_QUERIES, SUBMIT_QUERIES)


# A participant's claim and submit pass the policy's WHO and MAY THEY in four queries
# (their run, locked; the items they hold; the items they rated; with the claim's
# gold and queue statements and the session's own reads around them). Counted when the
# participant path was folded (before: 18 for the claim, 31 for a submit with the next
# claim), over session authentication as the rating page sends them.
PARTICIPANT_CLAIM_QUERIES = 14
PARTICIPANT_SUBMIT_AND_NEXT_QUERIES = 19


def test_a_participants_claim_and_submit_with_the_next_claim_cost_a_fixed_number_of_queries(settings, tmp_path):
    settings.SQL_PATHS = "postgres"
    dataset = crowd_dataset(tmp_path, gold_one_in=0)
    link = campaign_link_create(dataset=dataset, name="study", kinds=["SIS"], quota=5, completion_code="DONE1")
    browser = ParticipantClient(link, "queries1")
    assert browser.join().status_code == 302
    warm = browser.claim("SIS")  # prepares the statements once per connection
    assert browser.submit(warm).status_code == 201
    with CaptureQueriesContext(connection) as claimed:
        slot = browser.claim("SIS")
    body = {"score": 1.5, "time_on_item_ms": 4000, "time_to_first_move_ms": 600, "adjustments": 1}
    with CaptureQueriesContext(connection) as submitted:
        stored = browser._post(
            f"slots/{slot['slot_id']}/submit/", {**body, "idempotency_key": "q-1", "claim_next_kind": "SIS"}
        )
    assert stored.status_code == 201, stored.content
    assert stored.json()["next"] is not None
    assert len(claimed.captured_queries) <= PARTICIPANT_CLAIM_QUERIES
    assert len(submitted.captured_queries) <= PARTICIPANT_SUBMIT_AND_NEXT_QUERIES


# A join reads the link with its dataset, a returning participant's run with its account
# and dataset, in one query each: the page after the join names the dataset and checks the
# account without more reads. Counted when the join was written. A new run is made under
# the lock of its platform id in the dataset (two tabs joining at once make one run), and
# counted by the limits of new accounts (the link's row locked, the link's
# recent accounts counted, expired counts deleted, this one counted: four queries; a join
# with a client address takes the address's lock and counts it too).
NEW_JOIN_QUERIES = 23
RETURNING_JOIN_QUERIES = 3
PID = "5e0f1a2b3c4d5e6f7a8b9c0d"


def test_a_join_and_a_returning_join_cost_a_fixed_number_of_queries(settings):
    settings.SQL_PATHS = "postgres"
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=2, ratings_per_pair=1)
    link = campaign_link_create(dataset=split.dataset, name="study", kinds=["SIS"], quota=2, completion_code="DONE1")
    for expected in (NEW_JOIN_QUERIES, RETURNING_JOIN_QUERIES):
        with CaptureQueriesContext(connection) as joined:
            run = participant_join(token=link.token, params={"PROLIFIC_PID": PID})
            assert (run.link.dataset.name, run.user.username) == (split.dataset.name, f"prolific-{link.pk}-{PID}")
        assert len(joined.captured_queries) == expected, [query["sql"][:80] for query in joined.captured_queries]
        locks = [query["sql"].lower() for query in joined.captured_queries if "advisory" in query["sql"]]
        if expected == NEW_JOIN_QUERIES:  # the platform id's lock, held while the run is made
            key = f"participant-join:{split.dataset.pk}:PROLIFIC_PID:{PID}"
            assert locks == [f"select pg_advisory_xact_lock(hashtextextended('{key}', 0))".lower()]
        else:
            assert locks == []


# A gold item on the portable path is read with its pair's dataset, captions and images
# in one query: building the assignment reads nothing more.
PORTABLE_GOLD_CLAIM_QUERIES = 19


@pytest.mark.parametrize("kind", ["STS", "SIS"])
def test_a_gold_claim_on_the_portable_path_costs_a_fixed_number_of_queries(settings, tmp_path, kind):
    settings.SQL_PATHS = "portable"
    split = SplitFactory()
    queue_pairs(split=split, kind=kind, n_pairs=2, ratings_per_pair=1)
    gold_upload(split, kind, 2, tmp_path)
    QualitySettings.objects.create(dataset=split.dataset, gold_one_in=1)
    user = UserFactory(roles=["rater"], qualified_for=[kind])
    with CaptureQueriesContext(connection) as claimed:
        held = slot_claim(rater=user, dataset=split.dataset.name)
    assert GoldLease.objects.filter(pk=held.slot_id).exists()
    assert len(claimed.captured_queries) == PORTABLE_GOLD_CLAIM_QUERIES, [
        query["sql"][:80] for query in claimed.captured_queries
    ]


# A gold item through the API, every item gold (in the test's transaction a transaction
# of the code is a savepoint: its BEGIN and COMMIT are counted). The claim is the token's
# read, the queue's claim statement, which draws gold's turn and leases nothing (in its
# savepoint), and the gold statement, which leases the item (before: 4, the gold
# statement in a savepoint and no queue statement; but then every ordinary claim paid
# for the gold statement too). The submit is the token's read and the gold submit
# statement in its savepoint: the process served the item, so tries it as a gold lease
# first (before: 7, the queue's submit statement first, which stores nothing for a gold
# lease's id; before that 18, the queue's stepwise lookup, the pause, and the gold
# rating stored step by step). The token's read is its lookup, one query, as for
# CLAIM_QUERIES (two more each while it was a remembered token's check in a savepoint).
GOLD_CLAIM_QUERIES = 5
GOLD_SUBMIT_QUERIES = 4


@pytest.mark.statement_count
def test_a_gold_items_claim_and_submit_cost_a_fixed_number_of_queries(settings, tmp_path):
    settings.SQL_PATHS = "postgres"
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=6, ratings_per_pair=3)
    gold_upload(split, "SIS", 4, tmp_path)
    QualitySettings.objects.create(dataset=split.dataset, gold_one_in=1)
    client = token_client(UserFactory(roles=["rater"], qualified_for=["SIS"]))
    claim_and_submit(client, split.dataset.name, "warm")  # prepares the statements once per connection
    before = GoldLease.objects.count()
    counts = claim_and_submit(client, split.dataset.name, "measured")
    assert GoldLease.objects.count() == before + 1  # the measured item was gold
    assert counts == (GOLD_CLAIM_QUERIES, GOLD_SUBMIT_QUERIES)


# A gold item's heartbeat (a gold lease is renewed step by step) and its submit on the
# stepwise path (after the one statement stored nothing): whether the id is a gold lease,
# then the lease locked and read with its dataset and gold pair in one query (the
# address's dataset checked, the pair's gold score stored), in a savepoint, then the
# writes. Counted when this test was written.
GOLD_HEARTBEAT_QUERIES = 5
GOLD_STEPWISE_SUBMIT_QUERIES = 11


def test_a_gold_items_heartbeat_and_stepwise_submit_read_its_lease_at_once(settings, tmp_path, monkeypatch):
    settings.SQL_PATHS = "postgres"
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=2, ratings_per_pair=1)
    gold_upload(split, "SIS", 2, tmp_path)
    QualitySettings.objects.create(dataset=split.dataset, gold_one_in=1)
    user = UserFactory(roles=["rater"], qualified_for=["SIS"])
    held = slot_claim(rater=user, dataset=split.dataset.name)
    assert GoldLease.objects.filter(pk=held.slot_id).exists()
    with CaptureQueriesContext(connection) as beat:
        slot_heartbeat(rater=user, dataset=split.dataset.name, slot_id=held.slot_id)
    monkeypatch.setattr(serving_routing, "_submit_fast", lambda **values: None)
    with CaptureQueriesContext(connection) as stored:
        rating_submit(rater=user, dataset=split.dataset.name, slot_id=held.slot_id, **submit_kwargs("stepwise"))
    assert (len(beat.captured_queries), len(stored.captured_queries)) == (
        GOLD_HEARTBEAT_QUERIES,
        GOLD_STEPWISE_SUBMIT_QUERIES,
    )
