"""The statements a token-authenticated claim and submit send to PostgreSQL, counted as
production runs them: outside any test transaction (autocommit), so a transaction of the
code shows as BEGIN and COMMIT, and with prepared statements warm. Bounds from the hot
path's budget: a claim in at most 3 statements and a submit in 2 with gold off, one more
each with gold on. The counts are exact, so a statement more fails here first."""

from contextlib import nullcontext

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from annotation import serving as queue
from annotation.apis.fields import rater_id_decode, rater_ids
from annotation.models import GoldLease, GoldPair, GoldRating, Participant, QualitySettings, RatingSlot, SlotState
from annotation.people.crowd.links import campaign_link_create
from annotation.rating.policy import slot_claim
from annotation.serving import claim as claim_module
from annotation.serving import gold_sql as serving_sql
from tests.factories import SplitFactory, UserFactory
from tests.support.crowd_support import ParticipantClient, crowd_dataset, gold_upload
from tests.support.hot_path import BODY, LOOKUP, PAGE, cycle, rated_dataset, statement_names, token_client
from tests.support.queue_support import queue_pairs, submit_kwargs

pytestmark = [pytest.mark.postgres, pytest.mark.statement_count, pytest.mark.django_db(transaction=True)]

# The token's lookup, then the claim statement.
CLAIM = [LOOKUP, "queue_claim_ordinary"]
GOLD_ON_CLAIM = [LOOKUP, "queue_claim_held_gold"]
DRAWN_CLAIM = [LOOKUP, "queue_claim"]
# The token's lookup, then the submit statement (lock, checks and writes in one, for a
# slot or a gold lease).
SUBMIT = [LOOKUP, "serving_submit_fast"]
# On gold's turn the claim statement leases nothing and the gold statement leases the item.
GOLD_ITEM_CLAIM = [LOOKUP, "queue_claim", "gold_claim"]
# A gold lease's rating is stored by the same statement as a slot's, whichever process
# served it: nothing is remembered, nothing tried twice.
GOLD_ITEM_SUBMIT = SUBMIT


def test_a_token_claim_and_submit_with_gold_off(settings, tmp_path):
    dataset, client = rated_dataset(settings, tmp_path, gold_one_in=None)
    claim, submit, _ = cycle(client, dataset, "measured")
    assert (claim, submit) == (CLAIM, SUBMIT)


def test_an_ordinary_items_claim_and_submit_with_gold_on(settings, tmp_path):
    # Gold served one in a million items: the draw misses (but for one run in 500,000).
    dataset, client = rated_dataset(settings, tmp_path, gold_one_in=1_000_000)
    claim, submit, slot_id = cycle(client, dataset, "measured")
    assert not GoldLease.objects.filter(pk=slot_id).exists()
    assert (claim, submit) == (GOLD_ON_CLAIM, SUBMIT)


def test_a_gold_items_claim_and_submit_with_gold_on(settings, tmp_path):
    dataset, client = rated_dataset(settings, tmp_path, gold_one_in=1, gold_pairs=5)
    claim, submit, slot_id = cycle(client, dataset, "measured")
    assert GoldRating.objects.filter(lease_id=slot_id, idempotency_key="measured").exists()
    assert (claim, submit) == (GOLD_ITEM_CLAIM, GOLD_ITEM_SUBMIT)


def test_gold_s_turn_drawn_by_the_process_is_not_drawn_again_by_the_gold_statement(settings, tmp_path, monkeypatch):
    """At one in a million a second draw would almost never pass: the turn the process
    drew serves the gold item."""
    dataset, client = rated_dataset(settings, tmp_path, gold_one_in=1_000_000, gold_pairs=5)
    monkeypatch.setattr(claim_module, "draws_gold_turn", lambda one_in: True)
    claim, submit, slot_id = cycle(client, dataset, "drawn")
    assert GoldLease.objects.filter(pk=slot_id).exists()
    # The gold statement is prepared on its first use on the connection (SET; PREPARE).
    assert ([name for name in claim if name != "SET"], submit) == (GOLD_ITEM_CLAIM, GOLD_ITEM_SUBMIT)


def test_a_submit_through_serving_itself_tries_the_common_statement_first(settings, tmp_path):
    """Not only the policy's: a caller of serving's rating_submit (a script, a test) has its
    rating stored by the one statement, not the stepwise path."""
    dataset, _ = rated_dataset(settings, tmp_path, gold_one_in=None)
    user = UserFactory(roles=["rater"], qualified_for=["SIS"])
    held = queue.slot_claim(rater=user, dataset=dataset)
    with CaptureQueriesContext(connection) as submitted:
        queue.rating_submit(rater=user, dataset=dataset, slot_id=held.slot_id, **submit_kwargs("direct"))
    assert statement_names(submitted.captured_queries) == ["serving_submit_fast"]


def test_a_claim_commits_asynchronously_only_as_its_own_transaction(settings, tmp_path):
    """A lease may be lost in a crash; a rating may not. Inside a caller's transaction (a
    participant's submit with the next claim) the claim must not turn off the wait for
    the WAL flush, which would last to that transaction's end and cover its rating."""
    settings.SQL_PATHS = "postgres"
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=2, ratings_per_pair=3)
    users = [UserFactory(roles=["rater"], qualified_for=["SIS"]) for _ in range(2)]
    with CaptureQueriesContext(connection) as alone:
        assert queue.slot_claim(rater=users[0], dataset=split.dataset.name) is not None
    with CaptureQueriesContext(connection) as inside, transaction.atomic():
        assert queue.slot_claim(rater=users[1], dataset=split.dataset.name) is not None
    assert any("synchronous_commit" in query["sql"] for query in alone.captured_queries)
    assert not any("synchronous_commit" in query["sql"] for query in inside.captured_queries)


def test_a_gold_claim_commits_asynchronously_only_as_its_own_transaction(settings, tmp_path, monkeypatch):
    """As the queue's claim: a gold lease may be lost in a crash; inside a caller's
    transaction the gold statement leaves the wait for the WAL flush alone."""
    settings.SQL_PATHS = "postgres"
    settings.DB_PREPARED_STATEMENTS = False  # the statements' text, prefix included
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=2, ratings_per_pair=3)
    gold_upload(split, "SIS", 2, tmp_path)
    QualitySettings.objects.create(dataset=split.dataset, gold_one_in=1)
    monkeypatch.setattr(claim_module, "draws_gold_turn", lambda one_in: True)
    # The gold statement's own part (its text, captured with the values in place).
    gold_statement = "serveable AS ("
    assert gold_statement in serving_sql.gold_claim().sql
    for inside in (False, True):
        user = UserFactory(roles=["rater"], qualified_for=["SIS"])
        with CaptureQueriesContext(connection) as claimed, transaction.atomic() if inside else nullcontext():
            held = slot_claim(rater=user, dataset=split.dataset.name)
        assert GoldLease.objects.filter(pk=held.slot_id).exists()
        (gold_claim,) = [query["sql"] for query in claimed.captured_queries if gold_statement in query["sql"]]
        assert ("synchronous_commit" in gold_claim) is not inside


@pytest.mark.parametrize("drawn", [False, True], ids=["turn not drawn", "turn drawn"])
def test_a_held_gold_item_is_resumed_first_and_in_as_many_statements_as_a_held_slot(
    settings, tmp_path, monkeypatch, drawn
):
    """Re-claiming an item one holds can be repeated at will, so its cost must not tell a
    gold item from an ordinary one; and the gold item comes back whatever the draw. The
    statements depend on the process's draw alone: the same for both items either way."""
    dataset, client = rated_dataset(settings, tmp_path, gold_one_in=1)
    gold = client.post(f"/api/rate/{dataset}/claim/", {"kind": "SIS"}, format="json").json()
    assert GoldLease.objects.filter(pk=rater_id_decode("slot", gold["slot_id"])).exists()
    monkeypatch.setattr(claim_module, "draws_gold_turn", lambda one_in: drawn)
    expected = DRAWN_CLAIM if drawn else GOLD_ON_CLAIM
    client.post(f"/api/rate/{dataset}/claim/", {"kind": "SIS"}, format="json")  # prepares its statement
    for _ in range(3):
        with CaptureQueriesContext(connection) as again:
            resumed = client.post(f"/api/rate/{dataset}/claim/", {"kind": "SIS"}, format="json").json()
        assert (resumed["slot_id"], resumed["resumed"]) == (gold["slot_id"], True)
        assert statement_names(again.captured_queries) == expected
    assert resumed["items"] == gold["items"]
    # An ordinary held slot, re-claimed: the same statements.
    client.post(f"/api/rate/{dataset}/slots/{gold['slot_id']}/skip/")
    QualitySettings.objects.filter(dataset__name=dataset).update(gold_one_in=1_000_000)
    monkeypatch.setattr(claim_module, "draws_gold_turn", lambda one_in: False)
    ordinary = client.post(f"/api/rate/{dataset}/claim/", {"kind": "SIS"}, format="json").json()
    assert not GoldLease.objects.filter(pk=rater_id_decode("slot", ordinary["slot_id"])).exists()
    monkeypatch.setattr(claim_module, "draws_gold_turn", lambda one_in: drawn)
    for _ in range(3):
        with CaptureQueriesContext(connection) as again:
            resumed = client.post(f"/api/rate/{dataset}/claim/", {"kind": "SIS"}, format="json").json()
        assert (resumed["slot_id"], resumed["resumed"]) == (ordinary["slot_id"], True)
        assert statement_names(again.captured_queries) == expected


def test_the_process_draws_gold_turn_at_the_datasets_rate_even_just_changed(settings, tmp_path, monkeypatch):
    """The process draws gold's turn at the rate the last claim read; a claim that did not
    draw it at a rate changed since claims nothing in its first statement and draws at
    the new rate in the next, and a turn drawn at a changed rate is drawn again there: a
    dataset whose gold was turned off serves none at once."""
    dataset, client = rated_dataset(settings, tmp_path, gold_one_in=1_000_000)
    rates = []
    monkeypatch.setattr(claim_module, "draws_gold_turn", lambda one_in: rates.append(one_in) or False)
    QualitySettings.objects.filter(dataset__name=dataset).update(gold_one_in=1)
    claim, _, slot_id = cycle(client, dataset, "changed to 1")
    # The gold statement is prepared on its first use (SET ...; PREPARE), then runs.
    assert [name for name in claim if name != "SET"] == [*GOLD_ON_CLAIM, "queue_claim", "gold_claim"]
    assert GoldLease.objects.filter(pk=slot_id).exists()  # drawn at the new rate, one in one
    assert rates == [1_000_000] and claim_module._gold_one_in[dataset] == 1
    cycle(client, dataset, "drawn at 1")
    assert rates == [1_000_000, 1]
    monkeypatch.setattr(claim_module, "draws_gold_turn", lambda one_in: True)  # drawn at the old rate
    for rate in (1_000_000, 0):  # drawn again at one in a million (misses but for one run in 10^6); off
        QualitySettings.objects.filter(dataset__name=dataset).update(gold_one_in=rate)
        with CaptureQueriesContext(connection) as drawn:
            claimed = client.post(f"/api/rate/{dataset}/claim/", {"kind": "SIS"}, format="json").json()
        assert statement_names(drawn.captured_queries) == DRAWN_CLAIM
        assert not GoldLease.objects.filter(pk=rater_id_decode("slot", claimed["slot_id"])).exists()
        assert claim_module._gold_one_in[dataset] == rate
        submit_url = f"/api/rate/{dataset}/slots/{claimed['slot_id']}/submit/"
        assert client.post(submit_url, {**BODY, "idempotency_key": f"at {rate}"}, format="json").status_code == 201
        monkeypatch.setitem(claim_module._gold_one_in, dataset, 1)


def test_a_held_item_re_claimed_as_the_rate_changes_costs_the_same_gold_or_not(settings, tmp_path, monkeypatch):
    """The claim that learns of a changed rate claims nothing, whatever the rater holds:
    a held gold item and a held slot both come back in the statement after it."""
    dataset, client = rated_dataset(settings, tmp_path, gold_one_in=1)
    gold = client.post(f"/api/rate/{dataset}/claim/", {"kind": "SIS"}, format="json").json()
    assert GoldLease.objects.filter(pk=rater_id_decode("slot", gold["slot_id"])).exists()
    monkeypatch.setattr(claim_module, "draws_gold_turn", lambda one_in: False)
    expected = [*GOLD_ON_CLAIM, "queue_claim"]
    held = [gold]
    client.post(f"/api/rate/{dataset}/claim/", {"kind": "SIS"}, format="json")  # prepares its statement
    for rate in (2, 3):
        QualitySettings.objects.filter(dataset__name=dataset).update(gold_one_in=rate)
        with CaptureQueriesContext(connection) as again:
            resumed = client.post(f"/api/rate/{dataset}/claim/", {"kind": "SIS"}, format="json").json()
        assert (resumed["slot_id"], resumed["resumed"]) == (held[-1]["slot_id"], True)
        assert statement_names(again.captured_queries) == expected
        client.post(f"/api/rate/{dataset}/slots/{resumed['slot_id']}/skip/")
        held.append(client.post(f"/api/rate/{dataset}/claim/", {"kind": "SIS"}, format="json").json())
        assert not GoldLease.objects.filter(pk=rater_id_decode("slot", held[-1]["slot_id"])).exists()


def test_gold_turn_is_drawn_at_its_rate(monkeypatch):
    import random

    monkeypatch.setattr(claim_module, "random", random.Random(5))
    draws = [claim_module.draws_gold_turn(20) for _ in range(20_000)]
    assert 900 <= sum(draws) <= 1_100  # 1,000 expected; sd 31
    assert not any(claim_module.draws_gold_turn(0) for _ in range(1_000))
    assert all(claim_module.draws_gold_turn(1) for _ in range(1_000))


def test_a_claim_without_the_gold_half_hands_a_dataset_with_gold_over(settings, tmp_path, monkeypatch):
    """A process that has not seen the dataset's gold lately tries the claim without the
    gold half first: it must claim nothing where gold is active and hand over, so a held
    gold item still comes back (and a held slot too, in as many statements), and gold's
    turn is still drawn."""
    dataset, client = rated_dataset(settings, tmp_path, gold_one_in=1)
    gold = client.post(f"/api/rate/{dataset}/claim/", {"kind": "SIS"}, format="json").json()
    assert GoldLease.objects.filter(pk=rater_id_decode("slot", gold["slot_id"])).exists()
    forgetful = [LOOKUP, "queue_claim_ordinary", "queue_claim_held_gold"]
    monkeypatch.setattr(claim_module, "GOLD_SEEN_SECONDS", -1.0)  # every claim has forgotten
    monkeypatch.setattr(claim_module, "draws_gold_turn", lambda one_in: False)
    for _ in range(2):  # the first prepares the statement without the draw
        with CaptureQueriesContext(connection) as again:
            resumed = client.post(f"/api/rate/{dataset}/claim/", {"kind": "SIS"}, format="json").json()
        assert (resumed["slot_id"], resumed["resumed"]) == (gold["slot_id"], True)
    assert statement_names(again.captured_queries) == forgetful
    client.post(f"/api/rate/{dataset}/slots/{gold['slot_id']}/skip/")
    QualitySettings.objects.filter(dataset__name=dataset).update(gold_one_in=1_000_000)
    ordinary = client.post(f"/api/rate/{dataset}/claim/", {"kind": "SIS"}, format="json").json()
    assert not GoldLease.objects.filter(pk=rater_id_decode("slot", ordinary["slot_id"])).exists()
    with CaptureQueriesContext(connection) as again:
        assert client.post(f"/api/rate/{dataset}/claim/", {"kind": "SIS"}, format="json").json()["resumed"] is True
    assert statement_names(again.captured_queries) == forgetful
    submit_url = f"/api/rate/{dataset}/slots/{ordinary['slot_id']}/submit/"
    assert client.post(submit_url, {**BODY, "idempotency_key": "o"}, format="json").status_code == 201
    QualitySettings.objects.filter(dataset__name=dataset).update(gold_one_in=1)
    monkeypatch.setattr(claim_module, "draws_gold_turn", lambda one_in: True)
    with CaptureQueriesContext(connection) as turn:
        drawn = client.post(f"/api/rate/{dataset}/claim/", {"kind": "SIS"}, format="json").json()
    assert GoldLease.objects.filter(pk=rater_id_decode("slot", drawn["slot_id"])).exists()
    assert statement_names(turn.captured_queries) == [*forgetful[:2], "queue_claim", "gold_claim"]


def test_a_dataset_whose_gold_is_gone_is_claimed_without_the_gold_half_again(settings, tmp_path, monkeypatch):
    dataset, client = rated_dataset(settings, tmp_path, gold_one_in=1_000_000)
    assert dataset in claim_module._gold_seen  # the warm-up's claim met the gold
    GoldPair.objects.filter(dataset__name=dataset).update(active=False)
    monkeypatch.setattr(claim_module, "GOLD_SEEN_SECONDS", -1.0)
    claim, _, _ = cycle(client, dataset, "after")
    assert claim == CLAIM


# The rating page asks for its progress with each claim and submit: the claim statement
# reads it, in the statement with the progress (once the process knows the dataset's id).
# With gold on, the page's claim may resume a held gold item, as any claim; the claim
# after a submit knows the rater held a slot of that kind until then, so holds no gold.
PAGE_CLAIM = [LOOKUP, "queue_claim_ordinary_v1_with_progress"]
# Gold off, the submit and its next claim go in one round trip (queue.submit_then_claim).
PAGE_SUBMIT = [LOOKUP, "serving_submit_fast_stashed+queue_claim_ordinary_after_submit_v2_with_progress"]
GOLD_ON_PAGE_CLAIM = [LOOKUP, "queue_claim_held_gold_v1_with_progress"]
GOLD_ON_PAGE_SUBMIT = [*SUBMIT, "queue_claim_rate_checked_v1_with_progress"]


def page_cycle(client, dataset: str, key: str, slot: str | None) -> tuple[list[str], list[str], str, dict]:
    """The rating page's claim (when it holds nothing) and submit with the next claim:
    the statements of each, the next slot and the submit's answer."""
    claimed = []
    if slot is None:
        with CaptureQueriesContext(connection) as claiming:
            answer = client.post(f"/api/rate/{dataset}/claim/", {"kind": "SIS", **PAGE}, format="json")
        assert answer.status_code == 200, answer.content
        slot, claimed = answer.json()["slot_id"], statement_names(claiming.captured_queries)
    body = {**BODY, "idempotency_key": key, "claim_next_kind": "SIS", **PAGE}
    with CaptureQueriesContext(connection) as submitting:
        stored = client.post(f"/api/rate/{dataset}/slots/{slot}/submit/", body, format="json")
    assert stored.status_code == 201, stored.content
    return claimed, statement_names(submitting.captured_queries), stored.json()["next"]["slot_id"], stored.json()


@pytest.mark.parametrize("gold_one_in", [None, 1_000_000], ids=["gold off", "gold on"])
def test_the_rating_pages_claim_and_submit_read_the_progress_in_the_claim(settings, tmp_path, gold_one_in):
    dataset, client = rated_dataset(settings, tmp_path, gold_one_in=gold_one_in)
    page_cycle(client, dataset, "warm page", None)  # learns the dataset's id
    page_cycle(client, dataset, "warm page again", None)  # prepares the statements with the progress
    claimed, submitted, following, answer = page_cycle(client, dataset, "measured", None)
    if gold_one_in is None:
        assert (claimed, submitted) == (PAGE_CLAIM, PAGE_SUBMIT)
    else:
        assert (claimed, submitted) == (GOLD_ON_PAGE_CLAIM, GOLD_ON_PAGE_SUBMIT)
    # The progress it answers is the one read after the claim: the next slot held.
    assert answer["progress"]["held_slot_id"] == following
    progress = client.get(f"/api/rate/{dataset}/progress/", {"tz": "Europe/Berlin"}).json()
    assert answer["progress"] == progress


def test_a_repeated_submit_resumes_the_gold_item_held_as_its_next(settings, tmp_path, monkeypatch):
    """A repeat of an old submission says nothing of what the rater holds now: its next
    claim still looks for a held gold item (which comes first), where the claim after a
    fresh rating of that kind need not."""
    dataset, client = rated_dataset(settings, tmp_path, gold_one_in=1_000_000)
    claimed = client.post(f"/api/rate/{dataset}/claim/", {"kind": "SIS"}, format="json").json()["slot_id"]
    body = {**BODY, "idempotency_key": "rated before", "claim_next_kind": "SIS", **PAGE}
    assert client.post(f"/api/rate/{dataset}/slots/{claimed}/submit/", body, format="json").status_code == 201
    held = client.post(f"/api/rate/{dataset}/claim/", {"kind": "SIS"}, format="json").json()["slot_id"]
    client.post(f"/api/rate/{dataset}/slots/{held}/skip/")
    QualitySettings.objects.filter(dataset__name=dataset).update(gold_one_in=1)
    gold = client.post(f"/api/rate/{dataset}/claim/", {"kind": "SIS"}, format="json").json()["slot_id"]
    assert GoldLease.objects.filter(pk=rater_id_decode("slot", gold)).exists()
    monkeypatch.setattr(claim_module, "draws_gold_turn", lambda one_in: False)
    with CaptureQueriesContext(connection) as repeated:
        again = client.post(f"/api/rate/{dataset}/slots/{claimed}/submit/", body, format="json")
    assert again.status_code == 200 and again.json()["replayed"]
    assert again.json()["next"]["slot_id"] == gold
    assert "queue_claim_held_gold_v1_with_progress" in statement_names(repeated.captured_queries)


def test_the_claim_after_a_rating_of_another_kind_resumes_the_gold_item_held(settings, tmp_path, monkeypatch):
    """A rating of one kind says nothing of the gold items held of another: the next claim
    of that kind still looks for one, and the held gold item comes first."""
    settings.SQL_PATHS = "postgres"
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=4, ratings_per_pair=3)
    queue_pairs(split=split, kind="STS", n_pairs=4, ratings_per_pair=3)  # gold is served while these last
    gold_upload(split, "STS", 2, tmp_path)
    QualitySettings.objects.create(dataset=split.dataset, gold_one_in=1)
    client = token_client(UserFactory(roles=["rater"], qualified_for=["SIS", "STS"]))
    dataset = split.dataset.name
    gold = client.post(f"/api/rate/{dataset}/claim/", {"kind": "STS"}, format="json").json()["slot_id"]
    assert GoldLease.objects.filter(pk=rater_id_decode("slot", gold)).exists()
    slot = client.post(f"/api/rate/{dataset}/claim/", {"kind": "SIS", **PAGE}, format="json").json()["slot_id"]
    assert not GoldLease.objects.filter(pk=rater_id_decode("slot", slot)).exists()
    monkeypatch.setattr(claim_module, "draws_gold_turn", lambda one_in: False)
    body = {**BODY, "idempotency_key": "sis", "claim_next_kind": "STS", **PAGE}
    stored = client.post(f"/api/rate/{dataset}/slots/{slot}/submit/", body, format="json")
    assert stored.status_code == 201, stored.content
    assert stored.json()["next"]["slot_id"] == gold


def test_a_participant_at_the_quota_edge_is_served_the_gold_item_held_not_another_slot(settings, tmp_path, monkeypatch):
    """A participant can hold a slot and a gold item of one kind (the gold pair taken out
    of service while leased, then put back). Rating the slot leaves their quota room for
    the held gold item only: the claim after the rating resumes it, where one that skipped
    the held-gold lookup (as a plain rater's claim after a rating of its kind does) would
    lease another slot past their quota."""
    settings.SQL_PATHS = "postgres"
    dataset = crowd_dataset(tmp_path, gold_one_in=1)
    link = campaign_link_create(dataset=dataset, name="edge", kinds=["SIS"], quota=2, completion_code="EDGE1")
    browser = ParticipantClient(link, "edge-1")
    assert browser.join().status_code == 302
    monkeypatch.setattr(claim_module, "draws_gold_turn", lambda one_in: True)
    gold = browser.claim("SIS")
    gold_pair = GoldLease.objects.get(pk=rater_id_decode("slot", gold["slot_id"])).gold_pair_id
    GoldPair.objects.filter(pk=gold_pair).update(active=False)
    monkeypatch.setattr(claim_module, "draws_gold_turn", lambda one_in: False)
    slot = browser.claim("SIS")
    assert not GoldLease.objects.filter(pk=rater_id_decode("slot", slot["slot_id"])).exists()
    GoldPair.objects.filter(pk=gold_pair).update(active=True)
    body = {**BODY, "idempotency_key": "edge", "claim_next_kind": "SIS", **PAGE}
    stored = browser._post(f"slots/{slot['slot_id']}/submit/", body)
    assert stored.status_code == 201, stored.content
    assert stored.json()["next"]["slot_id"] == gold["slot_id"]
    participant = Participant.objects.get(link=link).user
    assert not RatingSlot.objects.filter(rater=participant, state=SlotState.LEASED).exists()


@pytest.mark.parametrize("gold_one_in", [1, None], ids=["gold item", "ordinary item"])
def test_a_refused_submit_tries_the_common_statement_once_then_the_stepwise_path_of_its_kind(
    settings, tmp_path, gold_one_in
):
    """Storing a rating tries at most two ways: the common statement (which tries the id as
    a slot and as a gold lease at once), then, when it stored nothing, the stepwise path
    of the one kind the id is. A repeat with a new key is refused alike for both kinds."""
    dataset, client = rated_dataset(settings, tmp_path, gold_one_in=gold_one_in, gold_pairs=5)
    _, _, slot_id = cycle(client, dataset, "first")
    is_gold = GoldLease.objects.filter(pk=slot_id).exists()
    assert is_gold is (gold_one_in == 1)
    opaque_id = rater_ids().encode("slot", slot_id)
    with CaptureQueriesContext(connection) as captured:
        refused = client.post(
            f"/api/rate/{dataset}/slots/{opaque_id}/submit/",
            {**BODY, "idempotency_key": "another key"},
            format="json",
        )
    assert refused.status_code == 409, refused.content
    names = statement_names(captured.captured_queries)
    assert sum(name.endswith("serving_submit_fast") for name in names) == 1, names
    # The stepwise path of the item's kind only: a slot's locks through its statement.
    assert ("queue_lock_slot" in names) is not is_gold, names


# A participant's claim, and their rating with the next claim, as the rating page sends
# them (session authentication, the progress asked): the session, its user and roles;
# then under the lock of their run (read with it) the items they hold and the items they
# rated, once; the claim statement, which reads the progress; after it, the page's quota
# progress (their run and their ratings). The claim looks for a gold item they hold
# (resumed first).
SESSION = ["SELECT", "SELECT", "SELECT"]
PARTICIPANT_PAGE_CLAIM = [
    *SESSION,
    "BEGIN",
    "SELECT",
    "(SELECT",
    "SELECT",
    "SAVEPOINT",
    "queue_claim_held_gold_v1_with_progress",
    "RELEASE",
    "COMMIT",
    "SELECT",
    "SELECT",
]
# The claim after the rating takes the quota use the submit read (one rated more, one
# held less), and knows they hold no gold item of the kind: they held the slot just
# rated, and no other item of it.
PARTICIPANT_PAGE_SUBMIT = [
    *SESSION,
    "BEGIN",
    "SELECT",
    "(SELECT",
    "SELECT",
    "SAVEPOINT",
    "serving_submit_fast",
    "RELEASE",
    "SAVEPOINT",
    "SAVEPOINT",
    "queue_claim_rate_checked_v1_with_progress",
    "RELEASE",
    "RELEASE",
    "COMMIT",
    "SELECT",
    "SELECT",
]


def test_a_participants_claim_and_rating_with_the_next_claim_read_their_quota_use_once(settings, tmp_path, monkeypatch):
    settings.SQL_PATHS = "postgres"
    settings.DB_PREPARED_STATEMENTS = True
    dataset = crowd_dataset(tmp_path, gold_one_in=1_000_000)
    monkeypatch.setattr(claim_module, "draws_gold_turn", lambda one_in: False)
    link = campaign_link_create(dataset=dataset, name="page", kinds=["SIS"], quota=5, completion_code="PAGE1")
    browser = ParticipantClient(link, "page-1")
    assert browser.join().status_code == 302
    for _ in range(3):  # learns the dataset's id, prepares the statement, resumes the slot held
        with CaptureQueriesContext(connection) as claimed:
            slot = browser._post("claim/", {"kind": "SIS", **PAGE}).json()
    assert statement_names(claimed.captured_queries) == PARTICIPANT_PAGE_CLAIM
    for key in ("warm", "warm again", "measured"):  # the first two prepare the statements
        body = {**BODY, "idempotency_key": key, "claim_next_kind": "SIS", **PAGE}
        with CaptureQueriesContext(connection) as submitted:
            stored = browser._post(f"slots/{slot['slot_id']}/submit/", body)
        assert stored.status_code == 201, stored.content
        slot = stored.json()["next"]
        assert not GoldLease.objects.filter(pk=rater_id_decode("slot", slot["slot_id"])).exists()
    assert statement_names(submitted.captured_queries) == PARTICIPANT_PAGE_SUBMIT
