"""The operator's view of the served application (``python -m web.serve``, the container's
command, with two worker processes) on a PostgreSQL of the test's own: after claims and
submits spread over both workers, a scrape of ``/metrics`` finds their counts summed over
the workers and the claim's and submit's latency histograms; ``/readyz`` answers 200
while the database answers and 503 once it is stopped, while ``/healthz`` still answers
200."""

from __future__ import annotations

import glob
import http.client
import json
import sys
import uuid

import pytest
from prometheus_client.mmap_dict import MmapedDict
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import REPO_DIR
from tests.support.own_postgres import OwnPostgres
from tests.support.web_server import served

sys.path.insert(0, str(REPO_DIR / "benchmarks"))
import _queue_data
from _common import fresh_database

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

DATABASE = "cxc_metrics"
TOKEN = "metrics-token-" + "x" * 32
MAX_CYCLES = 100  # 3 raters x 40 pairs: 120 ratings at most


@pytest.fixture
def own_postgres(monkeypatch):
    server = OwnPostgres()
    try:
        server.create()
        monkeypatch.setenv("DATABASE_URL", server.url)  # read by the benchmarks' helpers
        fresh_database(DATABASE)
        _queue_data.migrate(DATABASE)
        _, tokens = _queue_data.fill(DATABASE, open_slots=200, n_raters=3)
        yield server, tokens
    finally:
        server.remove()


def send(port: int, method: str, path: str, *, body: dict | None = None, headers: dict | None = None):
    """(status, headers, body) of one request on a connection of its own."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        data = json.dumps(body).encode() if body is not None else None
        conn.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def rate(port: int, token: str) -> tuple[int, int]:
    """One claim and the submit of its slot: (claim status, submit status)."""
    auth = {"Authorization": f"Token {token}"}
    status, _, body = send(port, "POST", "/api/rate/bench/claim/", body={"kind": "SIS"}, headers=auth)
    assert status == 200, body
    slot = json.loads(body)["slot_id"]
    submit = {
        "score": 3.0,
        "time_on_item_ms": 9000,
        "time_to_first_move_ms": 700,
        "adjustments": 1,
        "idempotency_key": uuid.uuid4().hex,
    }
    submitted, _, body = send(port, "POST", f"/api/rate/bench/slots/{slot}/submit/", body=submit, headers=auth)
    assert submitted in (200, 201), body
    return status, submitted


def scrape(port: int) -> dict[tuple[str, tuple], float]:
    status, _, body = send(port, "GET", "/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert status == 200, body
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(body.decode())
        for sample in family.samples
    }


def claims_per_file(folder: str) -> list[float]:
    """The claims each web worker process counted in its own file."""
    found = []
    for path in glob.glob(f"{folder}/counter_web-*.db"):
        values = MmapedDict.read_all_values_from_file(path)
        found.append(sum(value for key, value, _, _ in values if '"rate-claim"' in key))
    return [n for n in found if n]


def test_metrics_sum_the_workers_and_readyz_follows_the_database(own_postgres, tmp_path):
    server, tokens = own_postgres
    folder = tmp_path / "metrics"
    settings = {
        "WEB_WORKERS": "2",
        "METRICS_ENABLED": "true",
        "METRICS_TOKEN": TOKEN,
        "PROMETHEUS_MULTIPROC_DIR": str(folder),
    }
    database_url = f"{server.url.rsplit('/', 1)[0]}/{DATABASE}"
    with served(tmp_path / "web.log", database_url=database_url, **settings) as (port, _log):
        # Claims and submits, each on a new connection, until both workers have counted
        # some (the kernel hands connections to either).
        statuses = []
        while len(statuses) < MAX_CYCLES and (len(statuses) < 6 or len(claims_per_file(str(folder))) < 2):
            statuses.append(rate(port, tokens[len(statuses) % len(tokens)]))
        cycles = len(statuses)
        submitted = {status for _, status in statuses}
        assert len(submitted) == 1, statuses  # every submit was a first store
        submit_status = str(submitted.pop())

        # Counted by both workers, each in its own file; the scrape sums them.
        per_worker = claims_per_file(str(folder))
        assert len(per_worker) == 2 and sum(per_worker) == cycles, per_worker
        samples = scrape(port)
        claim = (("status", "200"), ("view", "rate-claim"))
        assert samples[("cxc_http_requests_total", claim)] == cycles
        assert samples[("cxc_http_requests_total", (("status", submit_status), ("view", "rate-submit")))] == cycles
        for view in ("rate-claim", "rate-submit"):
            assert samples[("cxc_rating_request_seconds_count", (("view", view),))] == cycles
            assert samples[("cxc_rating_request_seconds_bucket", (("le", "+Inf"), ("view", view)))] == cycles
        # A request through Django's chain: the server's readiness probe of tests/support/web_server.py.
        assert samples[("cxc_http_requests_total", (("status", "200"), ("view", "api-schema")))] >= 1
        # The queue's figures, read at the scrape: 40 pairs, none complete (3 raters, 5 ratings each).
        assert samples[("cxc_database_up", ())] == 1
        assert samples[("cxc_queue_pairs_open", (("dataset", "1"), ("kind", "SIS")))] == 40

        # Unauthenticated, without a login; the metrics are not.
        assert send(port, "GET", "/metrics")[0] == 401
        status, _, body = send(port, "GET", "/readyz")
        assert (status, json.loads(body)["database"]) == (200, "ok"), body
        server.stop_immediately()
        status, _, body = send(port, "GET", "/readyz")
        assert (status, json.loads(body)) == (503, {"ready": False, "database": "unavailable", "broker": "in-process"})
        assert send(port, "GET", "/healthz")[0] == 200
        assert scrape(port)[("cxc_database_up", ())] == 0
