"""The web server (web/serve.py: granian, settings from the environment), its
keep-alive spreading (web/keep_alive.py: one answer in WEB_KEEPALIVE_REQUESTS of a
process closes its connection, so its client reconnects and lands on a process that is
free to accept, instead of staying bound to one busy process) and the database
connections of its request threads, closed when a thread ends (web/served_wsgi.py).
The container serves with it: the served tests start the Dockerfile's CMD."""

from __future__ import annotations

import http.client
import itertools
import os
import subprocess
import sys
import threading
import time

import pytest
from django.db import connection

from tests.conftest import REPO_DIR
from tests.support.web_server import served, served_command
from web.keep_alive import SpreadKeepAlive
from web.serve import ServeSettingError, server_options


def test_defaults_are_a_process_per_core_with_two_threads():
    options = server_options({}, cores=2)
    assert options == {
        "address": "127.0.0.1",
        "port": 8000,
        "workers": 2,
        "blocking_threads": 2,
        "blocking_threads_idle_timeout": 600,
        "backlog": 2048,
        "log_level": "warning",
        "log_access": False,
    }
    assert server_options({}, cores=32)["workers"] == 8
    assert server_options({}, cores=1)["workers"] == 1


def test_settings_come_from_the_environment():
    environ = {
        "WEB_BIND": "0.0.0.0:9000",
        "WEB_WORKERS": "5",
        "WEB_THREADS": "6",
        "WEB_THREAD_IDLE_SECONDS": "30",
        "WEB_BACKLOG": "512",
        "WEB_LOG_LEVEL": "INFO",
        "WEB_ACCESS_LOG": "true",
    }
    assert server_options(environ, cores=2) == {
        "address": "0.0.0.0",
        "port": 9000,
        "workers": 5,
        "blocking_threads": 6,
        "blocking_threads_idle_timeout": 30,
        "backlog": 512,
        "log_level": "info",
        "log_access": True,
    }
    assert server_options({"WEB_BIND": "[::1]:8001"}, cores=2)["address"] == "::1"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("WEB_BIND", "8000"),
        ("WEB_BIND", "localhost:http"),
        ("WEB_BIND", ":8000"),
        ("WEB_BIND", "0.0.0.0:70000"),
        ("WEB_WORKERS", "three"),
        ("WEB_WORKERS", "0"),
        ("WEB_THREADS", "-1"),
        ("WEB_THREAD_IDLE_SECONDS", "4"),
        ("WEB_THREAD_IDLE_SECONDS", "601"),
        ("WEB_BACKLOG", "10"),
        ("WEB_LOG_LEVEL", "loud"),
        ("WEB_ACCESS_LOG", "sometimes"),
        ("WEB_KEEPALIVE_REQUESTS", "-1"),
        ("WEB_BIND", "0.0.0.0:\u00b2"),
    ],
)
def test_a_bad_setting_is_refused_by_name(name, value):
    with pytest.raises(ServeSettingError, match=name):
        server_options({name: value}, cores=2)


def test_a_former_gunicorn_setting_stops_the_start_naming_its_replacement():
    # A deployment tuned through GUNICORN_WORKERS would otherwise run on defaults unseen.
    with pytest.raises(ServeSettingError, match=r"GUNICORN_WORKERS \(WEB_WORKERS\)"):
        server_options({"GUNICORN_WORKERS": "6"}, cores=2)
    with pytest.raises(ServeSettingError, match=r"GUNICORN_TIMEOUT \(no longer needed\)"):
        server_options({"GUNICORN_TIMEOUT": "30"}, cores=2)
    with pytest.raises(ServeSettingError, match=r"GUNICORN_CMD_ARGS \(no longer needed\)"):
        server_options({"GUNICORN_CMD_ARGS": "--workers 6"}, cores=2)


def test_the_command_exits_with_the_problem_before_serving():
    finished = subprocess.run(
        [sys.executable, "-m", "web.serve"],
        cwd=REPO_DIR,
        env={"PATH": "/usr/bin:/bin", "WEB_WORKERS": "none"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert finished.returncode != 0
    assert "web.serve: WEB_WORKERS must be a whole number, got 'none'" in finished.stderr


def answers(spreader: SpreadKeepAlive, count: int, headers=(("Content-Type", "text/plain"),)) -> list[list]:
    """The headers ``spreader`` started ``count`` answers with."""
    started = []

    def start_response(status, response_headers, exc_info=None):
        started.append(response_headers)

    def application(environ, start_response):
        start_response("200 OK", list(headers))
        return [b"ok"]

    spreader.application = application
    for _ in range(count):
        assert spreader({}, start_response) == [b"ok"]
    return started


def closing(started: list[list]) -> list[int]:
    return [n + 1 for n, headers in enumerate(started) if ("Connection", "close") in headers]


def test_every_nth_answer_of_a_process_closes_its_connection():
    assert closing(answers(SpreadKeepAlive(None, 3), 10)) == [3, 6, 9]
    assert closing(answers(SpreadKeepAlive(None, 1), 3)) == [1, 2, 3]


def test_zero_never_closes_and_a_negative_count_is_refused():
    assert closing(answers(SpreadKeepAlive(None, 0), 50)) == []
    with pytest.raises(ValueError, match="every must be 0"):
        SpreadKeepAlive(None, -1)


def test_an_answer_that_names_its_connection_keeps_it():
    started = answers(SpreadKeepAlive(None, 1), 2, headers=(("connection", "keep-alive"),))
    assert started == [[("connection", "keep-alive")]] * 2


def test_the_server_s_start_response_gets_what_the_application_gave():
    # Two arguments where the application gave two (a server's may take no more), the
    # error's exc_info where it gave one.
    calls = []
    spreader = SpreadKeepAlive(None, 1)

    def application(environ, start_response):
        start_response("200 OK", [])
        start_response("500 Internal Server Error", [], ("error", "info", "trace"))
        return []

    spreader.application = application
    spreader({}, lambda *arguments: calls.append(arguments))
    assert calls == [
        ("200 OK", [("Connection", "close")]),
        ("500 Internal Server Error", [("Connection", "close")], ("error", "info", "trace")),
    ]


def test_the_application_s_headers_are_left_as_they_were():
    given = [("Content-Type", "text/plain")]
    seen = []

    def application(environ, start_response):
        start_response("200 OK", given)
        return []

    SpreadKeepAlive(application, 1)({}, lambda status, headers: seen.append(headers))
    assert given == [("Content-Type", "text/plain")]
    assert seen == [[("Content-Type", "text/plain"), ("Connection", "close")]]


def test_the_container_serves_config_serve_on_every_interface_with_two_workers():
    assert served_command() == [sys.executable, "-m", "web.serve"]
    settings = {}
    for line in (REPO_DIR / "Dockerfile").read_text().splitlines():
        if line.startswith("ENV "):
            settings.update(item.split("=", 1) for item in line.split()[1:])
    # Every interface; two workers, not one per host core (a thread's connection each).
    assert settings["WEB_BIND"] == "0.0.0.0:8000"
    assert settings["WEB_WORKERS"] == "2"


@pytest.mark.django_db(transaction=True)  # importing web.wsgi checks the database
def test_the_served_entry_spreads_with_the_configured_count_without_the_process_environment(settings):
    from web.served_wsgi import CloseConnectionsWithThreads, application
    from web.wsgi_environ import WithoutProcessEnvironment

    assert isinstance(application, CloseConnectionsWithThreads)
    assert isinstance(application.application, SpreadKeepAlive)
    assert application.application.every == settings.WEB_KEEPALIVE_REQUESTS
    without = application.application.application  # web.wsgi's: runserver serves it too
    assert isinstance(without, WithoutProcessEnvironment)
    assert dict(without.inherited)["PATH"] == os.environ["PATH"]  # the process's environment, taken at start


def requests_on_one_connection(port: int, count: int) -> list[tuple[int, str, bool]]:
    """(status, Connection header, closed after it) of ``count`` GETs on one keep-alive
    connection, which reconnects when the server closes it."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    seen = []
    for _ in range(count):
        conn.request("GET", "/login/")
        response = conn.getresponse()
        response.read()
        seen.append((response.status, (response.getheader("Connection") or "").lower(), conn.sock is None))
    conn.close()
    return seen


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_server_closes_a_keep_alive_connection_every_nth_answer(tmp_path):
    with served(tmp_path / "web.log", WEB_WORKERS="1", WEB_KEEPALIVE_REQUESTS="5") as (port, _):
        seen = requests_on_one_connection(port, 16)
    assert all(status == 200 for status, _, _ in seen), seen
    closed = [n + 1 for n, (_, header, gone) in enumerate(seen) if header == "close" and gone]
    # The process's count includes the start-up probe's answer: the first close comes
    # within five, then one every five, each followed by a new connection.
    assert len(closed) == 3 and closed[0] <= 5, seen
    assert [b - a for a, b in itertools.pairwise(closed)] == [5, 5], seen
    assert [n + 1 for n, (_, header, _) in enumerate(seen) if header == "close"] == closed


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_with_zero_the_server_keeps_the_connection(tmp_path):
    with served(tmp_path / "web.log", WEB_WORKERS="1", WEB_KEEPALIVE_REQUESTS="0") as (port, _):
        seen = requests_on_one_connection(port, 25)
    assert seen == [(200, "", False)] * 25


def other_backends() -> int:
    """Backends on the test database besides this test's own connection."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            " AND backend_type = 'client backend'"
        )
        return cursor.fetchone()[0]


def burst(port: int, clients: int = 8, requests: int = 10) -> set[int]:
    """``clients`` keep-alive connections at once, each sending token requests that read the
    database (an unknown token: 401), so that every request thread of the server connects."""
    statuses = set()

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        headers = {"Authorization": "Token " + "a" * 64, "Content-Type": "application/json"}
        for _ in range(requests):
            try:
                conn.request("POST", "/api/rate/anything/claim/", body=b"{}", headers=headers)
                response = conn.getresponse()
                response.read()
                statuses.add(response.status)
            except (ConnectionError, http.client.HTTPException) as problem:
                # A keep-alive connection the server closed as this request went out, as
                # clients meet it now and then (a browser sends again): noted, not retried.
                statuses.add(type(problem).__name__)
                conn.close()
        conn.close()

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return statuses


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_request_thread_that_ends_closes_its_database_connection(tmp_path):
    # Granian ends request threads idle for WEB_THREAD_IDLE_SECONDS and starts new ones
    # when requests come back; each new thread connects. Without the close, the ended
    # threads' connections stayed open (4, 7, then 10 backends over three idle spells).
    settings = {"WEB_WORKERS": "1", "WEB_THREADS": "4", "WEB_THREAD_IDLE_SECONDS": "5"}
    # Counted against the backends there before the server started: a connection an
    # earlier test of this worker left open is not the server's (CI read [2, 2, 2] once,
    # one backend more than the server's throughout).
    before = other_backends()
    after_idle = []
    with served(tmp_path / "web.log", **settings) as (port, _):
        for _ in range(3):
            assert 401 in burst(port)
            assert other_backends() - before >= 2  # the threads connected
            # Granian keeps its first request thread (and so one connection); the others
            # end 5 s after their last request. Polled: a loaded machine may take longer.
            deadline = time.monotonic() + 25
            while other_backends() - before > 1 and time.monotonic() < deadline:
                time.sleep(0.5)
            after_idle.append(other_backends() - before)
    assert max(after_idle) <= 1, (after_idle, before)
