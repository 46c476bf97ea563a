"""The app served as the container serves it, for tests over HTTP: the Dockerfile's CMD
(``python -m web.serve``, read by ``benchmarks/_common.served_command``) on the test
database, on a free port of 8121-8129."""

from __future__ import annotations

import contextlib
import http.client
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from tests.conftest import REPO_DIR

sys.path.insert(0, str(REPO_DIR / "benchmarks"))
from _common import served_command, stop_server

PORTS = range(8121, 8130)


def free_port(ports: range = PORTS) -> int:
    """The first port of ``ports`` free on 127.0.0.1, from this pytest-xdist worker's share
    of them (every worker-count-th port): two workers that both found the same port free
    started a server each on it (granian binds with SO_REUSEPORT), and each test then
    talked to the other's server at times. None free fails the test."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
    for port in ports[worker::workers]:
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    pytest.fail(f"no free port in {ports.start}-{ports.stop - 1}")


@contextlib.contextmanager
def served(log: Path, *, database_url: str | None = None, **settings: str):
    """(port, log): the container's command serving the test database (or
    ``database_url``), ``settings`` added to its environment (WEB_WORKERS ...); stopped on
    leaving. The bind comes from WEB_BIND, as in the container."""
    port = free_port()
    if database_url is None:
        db = connection.settings_dict
        database_url = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    # The caller's WEB_* or GUNICORN_* variables would change or stop the server under test.
    inherited = {name: value for name, value in os.environ.items() if not name.startswith(("WEB_", "GUNICORN_"))}
    env = inherited | {
        "DATABASE_URL": database_url,
        "RUN_MODE": "services",
        "CELERY_TASK_ALWAYS_EAGER": "true",
        "WEB_BIND": f"127.0.0.1:{port}",
        "DEBUG": "false",
        **settings,
    }
    with log.open("w") as out:
        process = subprocess.Popen(served_command(), cwd=REPO_DIR, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                pytest.fail(f"the web server exited with {process.returncode}:\n{log.read_text()[-3000:]}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("GET", "/api/schema/")
                conn.getresponse().read()
                conn.close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"the web server did not answer on port {port}:\n{log.read_text()[-3000:]}")
                time.sleep(0.2)
        yield port, log
    finally:
        stop_server(process)
