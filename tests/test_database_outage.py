"""PostgreSQL killed and started again under raters, through the served web server
(``python -m web.serve``, the container's command): every request while it is down is a
503 with Retry-After (none a 500), every rating that was acknowledged is stored exactly
once, and every rater carries on once it is back. The server is the test's own
(tests/support/own_postgres.py), stopped with ``pg_ctl stop -m immediate``, so every
backend ends at once as in a crash and the start recovers from the WAL.

The raters do what the rating page does: claim, then submits that claim the next pair;
a submission that met the outage is sent again with its idempotency key after the
answer's Retry-After."""

from __future__ import annotations

import http.client
import json
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field

import psycopg2
import pytest

from tests.conftest import REPO_DIR
from tests.support.own_postgres import OwnPostgres
from tests.support.web_server import served

sys.path.insert(0, str(REPO_DIR / "benchmarks"))
import _queue_data
from _common import fresh_database

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

RATERS = 8
OUTAGE_SECONDS = 3.0
RETRY_AFTER = "1"
DATABASE = "cxc_outage"
CLAIM = b'{"kind": "SIS", "progress_tz": "UTC"}'


@dataclass
class Sent:
    """One request as a rater saw it (times on this process's monotonic clock)."""

    what: str
    started: float
    ended: float
    status: int | str  # an HTTP status, or the name of the connection's failure
    retry_after: str | None = None
    code: str | None = None


@dataclass
class Rater:
    """A rater's client in a thread of its own: the rating page's flow over one
    keep-alive connection, until ``stop`` is set and nothing is left to send."""

    token: str
    port: int
    stop: threading.Event
    sent: list[Sent] = field(default_factory=list)
    acknowledged: list[tuple[str, float]] = field(default_factory=list)  # (idempotency key, when)

    def run(self) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        slot, pending = None, None
        deadline = time.monotonic() + 50  # a database that never comes back ends the test
        while time.monotonic() < deadline and not (self.stop.is_set() and pending is None):
            if pending is None and slot is None:
                status, answer = self.send("claim", "/api/rate/bench/claim/", CLAIM)
                slot = answer["slot_id"] if status == 200 else None
                if status == 204:
                    time.sleep(0.2)
                continue
            if pending is None:
                pending = (slot, uuid.uuid4().hex)
            body = json.dumps(
                {
                    "score": 2.5,
                    "time_on_item_ms": 9000,
                    "time_to_first_move_ms": 700,
                    "adjustments": 2,
                    "idempotency_key": pending[1],
                    "claim_next_kind": "SIS",
                    "progress_tz": "UTC",
                }
            ).encode()
            status, answer = self.send("submit", f"/api/rate/bench/slots/{pending[0]}/submit/", body)
            if status in (200, 201):
                self.acknowledged.append((pending[1], time.monotonic()))
                pending, slot = None, (answer["next"] or {}).get("slot_id")
            elif isinstance(status, int) and status < 500:
                pending, slot = None, None  # refused (the lease taken over ...): claim again
        self.conn.close()

    def send(self, what: str, path: str, body: bytes) -> tuple[int | str, dict | None]:
        """One POST; after a 503, waits its Retry-After before returning, as the page does."""
        started = time.monotonic()
        headers = {"Authorization": f"Token {self.token}", "Content-Type": "application/json"}
        try:
            self.conn.request("POST", path, body=body, headers=headers)
            response = self.conn.getresponse()
            payload = response.read()
        except (OSError, http.client.HTTPException) as failure:
            self.conn.close()  # reconnects on the next request
            self.sent.append(Sent(what, started, time.monotonic(), type(failure).__name__))
            time.sleep(0.2)
            return type(failure).__name__, None
        answer = json.loads(payload) if payload else None
        retry_after = response.getheader("Retry-After")
        code = answer.get("code") if isinstance(answer, dict) else None
        self.sent.append(Sent(what, started, time.monotonic(), response.status, retry_after, code))
        if response.status == 503 and retry_after:
            # A connection idle for Retry-After outlives the server's keep-alive, which then
            # closes it: the next request goes on a new one, as a browser's would.
            self.conn.close()
            time.sleep(float(retry_after))
        return response.status, answer


@pytest.fixture
def own_postgres(monkeypatch):
    """The test's own PostgreSQL with the app's schema in DATABASE, 400 SIS pairs (2,000
    open slots) and RATERS raters with API tokens (benchmarks/_queue_data.py's data)."""
    server = OwnPostgres()
    try:
        server.create()
        monkeypatch.setenv("DATABASE_URL", server.url)  # read by the benchmarks' helpers
        fresh_database(DATABASE)
        _queue_data.migrate(DATABASE)
        _, tokens = _queue_data.fill(DATABASE, open_slots=2000, n_raters=RATERS)
        yield server, tokens
    finally:
        server.remove()


def stored_keys(server: OwnPostgres) -> dict[str, int]:
    """How many ratings each idempotency key has in the database."""
    conn = psycopg2.connect(host="127.0.0.1", port=server.port, user="postgres", dbname=DATABASE)
    with conn, conn.cursor() as cursor:
        cursor.execute("SELECT idempotency_key, count(*) FROM annotation_rating GROUP BY idempotency_key")
        counts = dict(cursor.fetchall())
    conn.close()
    return counts


def wait_for(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {seconds} s for {what}")
        time.sleep(0.05)


def test_an_outage_under_raters_answers_503_and_loses_no_acknowledged_rating(own_postgres, tmp_path):
    server, tokens = own_postgres
    settings = {"WEB_WORKERS": "2", "WEB_THREADS": "2", "DATABASE_RETRY_AFTER_SECONDS": RETRY_AFTER}
    database_url = server.url.rsplit("/", 1)[0] + f"/{DATABASE}"
    with served(tmp_path / "web.log", database_url=database_url, **settings) as (port, log):
        stop = threading.Event()
        raters = [Rater(token, port, stop) for token in tokens]
        threads = [threading.Thread(target=rater.run) for rater in raters]
        for thread in threads:
            thread.start()
        try:
            wait_for(lambda: all(r.acknowledged for r in raters), 20, "every rater's first rating")
            server.stop_immediately()
            down = time.monotonic()
            time.sleep(OUTAGE_SECONDS)
            restarting = time.monotonic()
            server.start()
            up = time.monotonic()
            wait_for(lambda: all(r.acknowledged[-1][1] > up for r in raters), 20, "every rater to carry on")
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=60)
        served_log = log.read_text()

    sent = [request for rater in raters for request in rater.sent]
    statuses = sorted({str(request.status) for request in sent})
    # Nothing but work, an empty queue, a refusal of the queue or the outage's 503: no
    # 500, and no connection the server dropped.
    unexpected = [r for r in sent if not isinstance(r.status, int) or (r.status >= 500 and r.status != 503)]
    assert unexpected == [], statuses
    unavailable = [r for r in sent if r.status == 503]
    assert all(r.retry_after == RETRY_AFTER and r.code == "database_unavailable" for r in unavailable)
    # Every request sent and answered while the server was down is such a 503.
    during = [r for r in sent if r.started > down and r.ended < restarting]
    assert len(during) >= RATERS and all(r.status == 503 for r in during), statuses
    assert "Internal Server Error" not in served_log and "Traceback" not in served_log, served_log[-3000:]

    acknowledged = [key for rater in raters for key, _ in rater.acknowledged]
    stored = stored_keys(server)
    assert len(acknowledged) == len(set(acknowledged))
    assert {key: stored.get(key, 0) for key in acknowledged} == dict.fromkeys(acknowledged, 1)
    # Every rater stopped after its last acknowledgement: nothing stored went unacknowledged.
    assert sorted(stored) == sorted(acknowledged)
