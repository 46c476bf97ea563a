"""The served configuration (config/gunicorn.conf.py): a keep-alive connection is closed
after GUNICORN_KEEPALIVE_REQUESTS requests, so its client reconnects and lands on a worker
process that is free to accept, instead of staying bound to one busy process. The
container serves with it: the server fixture starts the Dockerfile's CMD."""

from __future__ import annotations

import http.client
import runpy
from types import SimpleNamespace

import pytest

from tests.annotation.test_queue_concurrency import served_command, server  # noqa: F401  (the gunicorn fixture)
from tests.conftest import REPO_DIR

CONF = REPO_DIR / "config" / "gunicorn.conf.py"


def closes_after(settings: dict, numbers: range) -> list[int]:
    """The request numbers on one connection after which the hook closes it."""
    closed = []
    for number in numbers:
        request = SimpleNamespace(req_number=number, must_close=False)
        settings["pre_request"](None, request)
        if request.must_close:
            closed.append(number)
    return closed


def test_every_twentieth_request_on_a_connection_closes_it_by_default(monkeypatch):
    monkeypatch.delenv("GUNICORN_KEEPALIVE_REQUESTS", raising=False)
    assert closes_after(runpy.run_path(str(CONF)), range(1, 61)) == [20, 40, 60]


def test_the_limit_comes_from_the_environment_and_zero_turns_it_off(monkeypatch):
    monkeypatch.setenv("GUNICORN_KEEPALIVE_REQUESTS", "3")
    assert closes_after(runpy.run_path(str(CONF)), range(1, 8)) == [3, 6]
    monkeypatch.setenv("GUNICORN_KEEPALIVE_REQUESTS", "0")
    assert closes_after(runpy.run_path(str(CONF)), range(1, 100)) == []


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_gunicorn_closes_a_keep_alive_connection_after_its_twentieth_request(server):  # noqa: F811
    port, _ = server
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    answers = []
    for _ in range(21):
        conn.request("GET", "/login/")
        response = conn.getresponse()
        response.read()
        answers.append((response.status, (response.getheader("Connection") or "").lower(), conn.sock is None))
    conn.close()
    assert all(status == 200 for status, _, _ in answers), answers
    # Requests 1-19 keep the connection; the 20th says close and the client reconnects.
    assert [i + 1 for i, (_, header, _) in enumerate(answers) if header == "close"] == [20]
    assert answers[18][2] is False and answers[19][2] is True


def test_the_container_serves_with_the_configuration_file_on_every_interface():
    # The image once ran gunicorn with its own flags: no keep-alive limit, a 2 s keep-alive,
    # and GUNICORN_* settings ignored.
    command = served_command()
    assert "config/gunicorn.conf.py" in command and command[command.index("config/gunicorn.conf.py") - 1] == "-c"
    settings = {}
    for line in (REPO_DIR / "Dockerfile").read_text().splitlines():
        if line.startswith("ENV "):
            settings.update(item.split("=", 1) for item in line.split()[1:])
    # Every interface; three workers, not the host's cores + 1 (a thread's connection each).
    assert settings["GUNICORN_BIND"] == "0.0.0.0:8000"
    assert settings["GUNICORN_WORKERS"] == "3"
