"""The served application's requests do not carry the server process's environment
(web/wsgi_environ.py): granian copies it into every WSGI environ, DATABASE_URL with
its password and SECRET_KEY included."""

import http.client
import os
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO_DIR
from tests.support.web_server import free_port, stop_server
from web.wsgi_environ import REQUEST_VARIABLES, WithoutProcessEnvironment


def seen_by(process: dict, environ: dict) -> dict:
    seen = {}

    def inner(environ, start_response):
        seen.update(environ)
        return []

    WithoutProcessEnvironment(inner, process)(environ, lambda *args: None)
    return seen


def test_the_process_variables_are_dropped_and_the_request_s_kept():
    process = {"DATABASE_URL": "postgres://u:pw@db/cxc", "SECRET_KEY": "k", "HTTP_PROXY": "http://proxy:3128"}
    request = {
        **process,
        "REQUEST_METHOD": "GET",
        "PATH_INFO": "/login/",
        "HTTP_HOST": "rate.example.org",
        "wsgi.url_scheme": "https",
    }
    seen = seen_by(process, dict(request))
    assert seen == {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": "/login/",
        "HTTP_HOST": "rate.example.org",
        "wsgi.url_scheme": "https",
    }


def test_a_request_value_other_than_the_process_s_is_kept():
    seen = seen_by({"HTTP_PROXY": "http://proxy:3128"}, {"HTTP_PROXY": "http://other", "PATH_INFO": "/"})
    assert seen == {"HTTP_PROXY": "http://other", "PATH_INFO": "/"}


def test_the_server_s_request_variables_stay_whatever_the_process_holds():
    process = dict.fromkeys(REQUEST_VARIABLES, "same")
    assert seen_by(process, dict(process)) == process


def served_keys(app: str, port: int, probe: str) -> set[str]:
    """The lines ``tests/support/wsgi_environ_echo.<app>`` answers, served by granian with
    CXC_PROBE_SECRET=probe in its environment, to a request with a Cxc-Probe-Header."""
    env = {**os.environ, "CXC_PROBE_SECRET": probe, "PYTHONPATH": str(REPO_DIR)}
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "granian",
            "--interface",
            "wsgi",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
            "--log-level",
            "error",
            f"tests.support.wsgi_environ_echo:{app}",
        ],
        cwd=REPO_DIR,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("GET", "/", headers={"Cxc-Probe-Header": "sent"})
                body = conn.getresponse().read().decode()
                conn.close()
                return set(body.splitlines())
            except OSError:
                conn.close()
                if time.monotonic() > deadline or server.poll() is not None:
                    server.terminate()
                    raise AssertionError(f"granian did not answer: {server.communicate(timeout=10)[1]!r}") from None
                time.sleep(0.2)
    finally:
        stop_server(server)


@pytest.mark.parametrize("app", ["raw", "kept"])
def test_granian_s_environ_holds_the_process_environment_unless_dropped(app):
    lines = served_keys(app, free_port(), "pw-123")
    assert {"REQUEST_METHOD", "PATH_INFO", "HTTP_HOST", "HTTP_CXC_PROBE_HEADER=sent"} <= lines
    if app == "raw":
        assert "CXC_PROBE_SECRET=pw-123" in lines  # what granian does: why the wrapper exists
    else:
        # Nothing but the request's headers and what granian sets for every request (so a
        # granian that sets other variables, which the filter would let through or drop,
        # fails here).
        assert {line for line in lines if not line.startswith(("HTTP_", "wsgi."))} == REQUEST_VARIABLES, lines
