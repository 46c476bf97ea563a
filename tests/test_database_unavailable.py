"""A database that does not answer is a 503 with Retry-After on every entry, never a 500
(config/exceptions.py): the served WSGI application (web/served_wsgi.py, web/wsgi.py),
the rating cycle's direct way past the middleware chain (web/rating_wsgi.py), the token
view's answer (annotation/apis/rating_cycle.py), DRF's views and Django's pages. A
statement the server refused stays a 500, and a connection the server ended is replaced
by the next request. The served server against a PostgreSQL killed mid-load is
tests/test_database_outage.py."""

from __future__ import annotations

import json
import logging
import sqlite3

import psycopg2
import pytest
from django.db import IntegrityError, OperationalError, ProgrammingError, connection
from django.test import Client
from knox.models import AuthToken

from annotation.rating import policy
from config.exceptions import database_unavailable
from config.metrics import DATABASE_UNAVAILABLE
from tests.factories import SplitFactory, UserFactory
from tests.support.database_outage import (
    closed_port,
    database_refusing,
    end_backend_of_this_connection,
    get,
    token_post,
    wsgi_call,
)
from tests.support.queue_support import queue_pairs, rate_url, submit_kwargs

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def served():
    """The application as granian serves it (importing it checks the database)."""
    from web.served_wsgi import application

    return application


@pytest.fixture
def dataset():
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=3)
    return split.dataset


def rater_token(user=None) -> str:
    user = user or UserFactory(roles=["rater"], qualified_for=["SIS"])
    return AuthToken.objects.create(user)[1]


def session_cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


def assert_unavailable(answer, *, retry_after: str, api: bool = True):
    status, headers, body = answer
    assert status == 503, body[:300]
    assert headers["Retry-After"] == retry_after
    assert headers["Cache-Control"] == "no-store"
    if api:
        data = json.loads(body)
        assert data["code"] == "database_unavailable"
        assert "Retry-After" in data["detail"]
    else:
        assert headers["Content-Type"].startswith("text/html")
        assert b"The service is briefly unavailable" in body
        assert f"Try again in {retry_after} seconds".encode() in body


def test_every_entry_answers_503_with_retry_after_while_the_database_refuses(served, dataset, settings, caplog):
    settings.DATABASE_RETRY_AFTER_SECONDS = 7
    user = UserFactory(roles=["rater", "admin"], qualified_for=["SIS"])
    looked_up, remembered = rater_token(user), rater_token(user)
    claim = rate_url(dataset, "claim")
    # A token the process has used is remembered: its check goes ahead of the answer's statement.
    status, _, body = wsgi_call(served, token_post(claim, {"kind": "SIS"}, remembered))
    assert status == 200, body
    slot_id = json.loads(body)["slot_id"]
    cookie = session_cookie(user)
    submit = rate_url(dataset, "submit", slot_id)
    entries = {  # each a request's WSGI environ, made anew for each call (its body is read)
        # web/rating_wsgi.py: the token's lookup fails in the direct way (Django's handler500)
        "direct way, token looked up": lambda: token_post(claim, {"kind": "SIS"}, looked_up),
        # the token view's answer fails (the project's exception handler)
        "direct way, token remembered": lambda: token_post(submit, submit_kwargs("k1"), remembered),
        # a DRF view through the whole middleware chain
        "DRF view": lambda: get(rate_url(dataset, "progress"), HTTP_AUTHORIZATION=f"Token {looked_up}"),
        "API with a session": lambda: get(rate_url(dataset, "progress"), HTTP_COOKIE=cookie),
    }
    pages = {
        "rating home": lambda: get("/rate/", HTTP_COOKIE=cookie),
        "admin": lambda: get("/admin/", HTTP_COOKIE=cookie),
    }
    counted = {answer: DATABASE_UNAVAILABLE.labels(answer=answer) for answer in ("api", "page")}
    before = {answer: counter._value.get() for answer, counter in counted.items()}
    with database_refusing():
        answers = {name: wsgi_call(served, environ()) for name, environ in {**entries, **pages}.items()}
    for name in entries:
        assert_unavailable(answers[name], retry_after="7")
    for name in pages:
        assert_unavailable(answers[name], retry_after="7", api=False)
    # A line naming the cause for each, no traceback (the remembered token's check, sent
    # again alone when the answer's statement failed, meets the refusal a second time).
    logged = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert {r.name for r in logged} == {"config.outage"}, [r.getMessage() for r in logged]
    assert all("Connection refused" in r.getMessage() and r.exc_info is None for r in logged)
    assert {r.getMessage().split(":")[0] for r in logged} == {
        f"Database unavailable, answered 503 to {environ['REQUEST_METHOD']} {environ['PATH_INFO']}"
        for environ in (make() for make in {**entries, **pages}.values())
    }
    # Each counted for the operator's metrics, by the kind of answer (config/metrics.py).
    api_lines = sum(" /api/" in r.getMessage() for r in logged)
    assert {answer: counter._value.get() - before[answer] for answer, counter in counted.items()} == {
        "api": api_lines,
        "page": len(logged) - api_lines,
    }
    # The database answers again: so does every entry.
    assert wsgi_call(served, entries["direct way, token remembered"]())[0] == 201
    assert wsgi_call(served, pages["rating home"]())[0] == 200


def test_a_connection_the_server_ended_is_replaced_by_the_next_request(served, dataset):
    # CONN_MAX_AGE keeps the connection from request to request, and the health check is
    # off (settings): the first request after a restart meets the ended connection.
    assert connection.settings_dict["CONN_MAX_AGE"] > 0
    token = rater_token()

    def claim():
        return token_post(rate_url(dataset, "claim"), {"kind": "SIS"}, token)

    assert wsgi_call(served, claim())[0] == 200
    end_backend_of_this_connection()
    try:
        assert_unavailable(wsgi_call(served, claim()), retry_after="5")
        assert connection.connection is None  # Django closed it when the request ended
    finally:
        connection.close()  # for the database's teardown, should the request not have
    assert wsgi_call(served, claim())[0] == 200


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT * FROM no_such_table",  # ProgrammingError
        "SET statement_timeout = 1; SELECT pg_sleep(1)",  # an OperationalError with its SQLSTATE (57014)
    ],
)
def test_a_statement_the_server_refuses_stays_a_500(served, dataset, monkeypatch, caplog, statement):
    def failing(**kwargs):
        with connection.cursor() as cursor:
            try:
                cursor.execute(statement)
            finally:
                cursor.execute("RESET statement_timeout")

    monkeypatch.setattr(policy, "slot_claim", failing)
    token = rater_token()
    status, headers, body = wsgi_call(served, token_post(rate_url(dataset, "claim"), {"kind": "SIS"}, token))
    assert (status, json.loads(body)["code"]) == (500, "server_error")
    assert "Retry-After" not in headers
    assert [r.name for r in caplog.records if r.levelno >= logging.ERROR] == ["django.request"]


def test_what_counts_as_the_database_unavailable():
    with database_refusing(), pytest.raises(OperationalError) as refused:
        connection.ensure_connection()
    assert database_unavailable(refused.value)  # Django's wrapper, raised from psycopg2's
    assert database_unavailable(refused.value.__cause__)
    with pytest.raises(psycopg2.OperationalError) as raw_refused:
        psycopg2.connect(host="127.0.0.1", port=closed_port(), user="postgres", dbname="postgres")
    assert database_unavailable(raw_refused.value)
    connection.ensure_connection()
    raw = psycopg2.connect(connection.connection.dsn)
    raw.close()
    with pytest.raises(psycopg2.InterfaceError) as closed:
        raw.cursor()
    assert database_unavailable(closed.value)
    try:
        raise RuntimeError("the queue could not be read") from refused.value
    except RuntimeError as wrapped:
        assert database_unavailable(wrapped)

    for sqlstate in ("57P01", "57P02", "57P03", "53300", "08006", "08001"):
        coded = type("Coded", (psycopg2.OperationalError,), {"pgcode": sqlstate})
        assert database_unavailable(coded("the server went away")), sqlstate

    with pytest.raises(ProgrammingError) as syntax, connection.cursor() as cursor:
        cursor.execute("SELEC 1")
    with pytest.raises(IntegrityError) as constraint, connection.cursor() as cursor:
        cursor.execute("CREATE TEMP TABLE once (id int PRIMARY KEY); INSERT INTO once VALUES (1), (1)")
    with pytest.raises(OperationalError) as cancelled, connection.cursor() as cursor:
        try:
            cursor.execute("SET statement_timeout = 1; SELECT pg_sleep(1)")
        finally:
            cursor.execute("RESET statement_timeout")
    deadlock = type("Coded", (psycopg2.OperationalError,), {"pgcode": "40P01"})("deadlock detected")
    for genuine in (syntax.value, constraint.value, cancelled.value, deadlock, sqlite3.OperationalError("locked")):
        assert not database_unavailable(genuine), genuine
    assert not database_unavailable(RuntimeError("no database involved"))
