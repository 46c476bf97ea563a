"""bench-queue's servers keep their database connections for the run (CONN_MAX_AGE
3600) unless CONN_MAX_AGE is set: production's 60 s age made every server's connections
run out together within one phase, a minute after its warm-up (benchmarks/bench_queue.py
``start_server``)."""

import sys

import pytest

from tests.conftest import REPO_DIR

sys.path.insert(0, str(REPO_DIR / "benchmarks"))
import bench_queue


@pytest.fixture
def started(monkeypatch):
    """The environment start_server hands to the web server, captured instead of a server."""
    seen = {}
    monkeypatch.setattr(bench_queue, "start_web_server", lambda env, port, log_path, **_: seen.update(env))
    return seen


def test_the_phases_servers_keep_their_connections_for_the_run(monkeypatch, started, tmp_path):
    monkeypatch.delenv("CONN_MAX_AGE", raising=False)
    bench_queue.start_server("cxc_bench_queue_10k", 8121, tmp_path / "server.log")
    assert started["CONN_MAX_AGE"] == "3600"
    assert started["DATABASE_URL"].endswith("/cxc_bench_queue_10k")


def test_a_connection_age_given_in_the_environment_is_kept(monkeypatch, started, tmp_path):
    monkeypatch.setenv("CONN_MAX_AGE", "60")
    bench_queue.start_server("cxc_bench_queue_10k", 8121, tmp_path / "server.log")
    assert started["CONN_MAX_AGE"] == "60"
