"""A database that stops answering, for the outage tests: in this process (the test
connection pointed at a port nothing listens on, or its server backend ended), and WSGI
calls through the served application with Django's request signals connected, as a
server sends them (the test client disconnects them), so a broken connection is closed
at the request's end as in production."""

from __future__ import annotations

import contextlib
import json
import socket

import psycopg2
from django.db import connection
from django.test import RequestFactory


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on: connecting there is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def database_refusing():
    """The default connection closed and pointed at a closed port until the block ends:
    every query meets "Connection refused", as while PostgreSQL is stopped. Needs a
    transactional test (``django_db(transaction=True)``): the connection is closed."""
    settings_dict = connection.settings_dict
    port = settings_dict["PORT"]
    connection.close()
    settings_dict["PORT"] = str(closed_port())
    try:
        yield
    finally:
        connection.close()
        settings_dict["PORT"] = port


def end_backend_of_this_connection() -> None:
    """End the server backend of this thread's open connection from another session, as
    a fast or immediate stop or ``pg_terminate_backend`` ends it: the connection is
    broken, and Django learns it only at its next statement."""
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    settings_dict = connection.settings_dict
    other = psycopg2.connect(
        host=settings_dict["HOST"],
        port=settings_dict["PORT"],
        user=settings_dict["USER"],
        password=settings_dict["PASSWORD"],
        dbname=settings_dict["NAME"],
    )
    other.autocommit = True
    with other.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s, 5000)", [pid])
        assert cursor.fetchone() == (True,)
    other.close()


def wsgi_call(application, environ: dict) -> tuple[int, dict, bytes]:
    """(status, headers, body) of one WSGI request, the request signals left connected."""
    started = []

    def start_response(status, headers, exc_info=None):
        started.append((status, headers))

    answer = application(environ, start_response)
    body = b"".join(answer)
    if hasattr(answer, "close"):
        answer.close()
    ((status, headers),) = started
    return int(status.split(" ", 1)[0]), dict(headers), body


def token_post(path: str, body: dict, token: str) -> dict:
    """A rater's token POST's WSGI environ, as an API client sends it."""
    return (
        RequestFactory()
        .generic(
            "POST",
            path,
            json.dumps(body).encode(),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Token {token}",
        )
        .environ
    )


def get(path: str, **headers) -> dict:
    return RequestFactory().get(path, **headers).environ
