"""Acceptance: 55 concurrent raters rate 1,000 pairs to completion through the HTTP API
served by the container's web server on PostgreSQL. Five of them walk away from a claimed pair, so the
run only completes if expired leases return to the queue; others skip now and then and
re-send submissions. Afterwards every pair has exactly 5 ratings from 5 distinct raters,
every acknowledged submission is stored once, and nothing else is."""

from __future__ import annotations

import http.client
import json
import random
import threading
import time
import uuid
from collections import Counter

import pytest
from knox.models import AuthToken

from annotation.models import Pair, QueueCounter, Rating, RatingSlot, SlotState
from tests.factories import SplitFactory, UserFactory
from tests.support.queue_support import queue_pairs
from tests.support.rating_support import db_id
from tests.support.web_server import served

N_PAIRS = 1000
RATINGS_PER_PAIR = 5
STEADY_RATERS = 50
WALKAWAY_RATERS = 5
LEASE_TTL = 10
DEADLINE_S = 600


class Api:
    """One rater's keep-alive HTTP connection. Connection errors are retried: claim and
    submit are both safe to repeat (held lease, idempotency key)."""

    def __init__(self, port: int, token: str, dataset: str):
        self.port = port
        self.headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
        self.base = f"/api/rate/{dataset}"
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def post(self, path: str, body: dict | None = None) -> tuple[int, dict | None]:
        payload = json.dumps(body or {})
        for attempt in range(4):
            try:
                self.conn.request("POST", self.base + path, payload, self.headers)
                response = self.conn.getresponse()
                raw = response.read()
                try:
                    return response.status, (json.loads(raw) if raw else None)
                except ValueError:
                    return response.status, {"not_json": raw[:2000].decode(errors="replace")}
            except (http.client.HTTPException, ConnectionError, TimeoutError):
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                if attempt == 3:
                    raise
        raise AssertionError("unreachable")


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.acknowledged: dict[int, tuple[int, int]] = {}  # rating id -> (rater id, slot id)
        self.statuses: Counter = Counter()
        self.problems: list[str] = []
        self.abandoned: list[tuple[int, int]] = []  # (rater id, slot id)

    def note(self, status: int) -> None:
        with self.lock:
            self.statuses[status] += 1

    def problem(self, text: str) -> None:
        with self.lock:
            self.problems.append(text)

    def done(self) -> bool:
        with self.lock:
            return len(self.acknowledged) >= N_PAIRS * RATINGS_PER_PAIR


def rate(api: Api, rater_id: int, seed: int, tally: Tally, stop: threading.Event, walk_away_after: int | None):
    try:
        _rate(api, rater_id, seed, tally, stop, walk_away_after)
    except Exception as exc:
        tally.problem(f"rater {rater_id} crashed: {exc!r}")


def _rate(api: Api, rater_id: int, seed: int, tally: Tally, stop: threading.Event, walk_away_after: int | None):
    rng = random.Random(seed)
    rated = 0
    while not stop.is_set():
        status, body = api.post("/claim/")
        tally.note(status)
        if status == 204:
            if tally.done():
                return
            time.sleep(0.25)  # what is left is leased to others; their leases may lapse
            continue
        if status != 200:
            tally.problem(f"claim by {rater_id}: {status} {body}")
            return
        slot = body["slot_id"]
        if walk_away_after is not None and rated >= walk_away_after:
            with tally.lock:
                tally.abandoned.append((rater_id, slot))
            return  # closes the tab: no submit, no heartbeat, never back
        if rng.random() < 0.02:
            status, body = api.post(f"/slots/{slot}/skip/")
            tally.note(status)
            if status != 200:
                tally.problem(f"skip by {rater_id}: {status} {body}")
            continue
        submission = {
            "score": round(rng.uniform(0, 5), 3),
            "time_on_item_ms": rng.randint(2000, 40000),
            "time_to_first_move_ms": rng.randint(100, 1500),
            "adjustments": rng.randint(1, 6),
            "idempotency_key": str(uuid.UUID(int=rng.getrandbits(128))),
        }
        status, body = api.post(f"/slots/{slot}/submit/", submission)
        tally.note(status)
        if status != 201:
            tally.problem(f"submit by {rater_id} on slot {slot}: {status} {body}")
            return
        with tally.lock:
            tally.acknowledged[db_id("rating", body["rating_id"])] = (rater_id, slot)
        rated += 1
        if rng.random() < 0.05:  # the response was lost on the way: send it again
            status, again = api.post(f"/slots/{slot}/submit/", submission)
            tally.note(status)
            if status != 200 or again["rating_id"] != body["rating_id"] or not again["replayed"]:
                tally.problem(f"re-sent submit by {rater_id}: {status} {again}, first answer {body}")


@pytest.fixture
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def server(tmp_path):
    """The container's web server on the test database (``tests.support.web_server.served``):
    3 processes x 4 threads, leases of LEASE_TTL seconds."""
    settings = {"WEB_WORKERS": "3", "WEB_THREADS": "4", "LEASE_TTL_SECONDS": str(LEASE_TTL)}
    with served(tmp_path / "web.log", **settings) as running:
        yield running


@pytest.mark.postgres
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_fifty_five_raters_rate_a_thousand_pairs_to_completion(fast_passwords, server):
    split = SplitFactory()
    dataset = split.dataset
    _, pairs = queue_pairs(split=split, n_pairs=N_PAIRS, ratings_per_pair=RATINGS_PER_PAIR)
    raters = [UserFactory(roles=["rater"], qualified_for=["SIS"]) for _ in range(STEADY_RATERS + WALKAWAY_RATERS)]
    tokens = {user.id: AuthToken.objects.create(user=user)[1] for user in raters}

    port, log = server
    tally = Tally()
    stop = threading.Event()
    threads = []
    for number, user in enumerate(raters):
        walk_away_after = number * 3 if number < WALKAWAY_RATERS else None
        api = Api(port, tokens[user.id], dataset.name)
        thread = threading.Thread(
            target=rate, args=(api, user.id, number, tally, stop, walk_away_after), name=f"rater-{number}", daemon=True
        )
        threads.append(thread)
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=max(1, DEADLINE_S - (time.monotonic() - started)))
    stop.set()
    elapsed = time.monotonic() - started
    assert not any(t.is_alive() for t in threads), f"raters still busy after {elapsed:.0f} s: {tally.statuses}"
    assert not tally.problems, "\n".join(tally.problems[:20]) + "\n" + log.read_text()[-3000:]
    assert tally.statuses[500] == 0

    # Every acknowledged submission is stored, and nothing else is.
    stored = dict(Rating.objects.values_list("id", "rater_id"))
    assert len(tally.acknowledged) == N_PAIRS * RATINGS_PER_PAIR
    assert set(stored) == set(tally.acknowledged)
    assert all(stored[rating_id] == rater_id for rating_id, (rater_id, _) in tally.acknowledged.items())
    # Exactly five ratings by five distinct raters on every pair.
    per_pair = {}
    for pair_id, rater_id in Rating.objects.values_list("pair_id", "rater_id"):
        per_pair.setdefault(pair_id, []).append(rater_id)
    assert set(per_pair) == {p.id for p in pairs}
    assert all(len(r) == RATINGS_PER_PAIR and len(set(r)) == RATINGS_PER_PAIR for r in per_pair.values())
    assert set(Pair.objects.filter(batch__dataset=dataset).values_list("ratings_done", flat=True)) == {5}
    assert set(RatingSlot.objects.filter(dataset=dataset).values_list("state", "pair_complete")) == {
        (SlotState.DONE, True)
    }
    assert QueueCounter.objects.get(dataset=dataset, kind="SIS").pairs_open == 0
    # The walked-away leases went back into the queue and someone else rated them.
    assert len(tally.abandoned) == WALKAWAY_RATERS
    for rater_id, slot_id in tally.abandoned:
        slot = RatingSlot.objects.get(pk=db_id("slot", slot_id))
        assert slot.rater_id != rater_id
        assert slot.previous_rater_id == rater_id
    cycles = len(tally.acknowledged)
    print(f"\n{cycles} ratings by {len(raters)} raters in {elapsed:.1f} s; responses {dict(tally.statuses)}")
