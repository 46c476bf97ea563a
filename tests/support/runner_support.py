"""Helpers for tests of locks between database sessions: a second session of the test
database, another session's runner lock (annotation.runs.lifecycle), and waiting for the server to
drop a closed session's locks."""

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import psycopg2
from django.db import connection


def another_session():
    """A second psycopg2 session of the test database (PostgreSQL), outside Django's; the
    caller closes it."""
    params = connection.get_connection_params()
    return psycopg2.connect(**{k: v for k, v in params.items() if k != "cursor_factory"})


@contextmanager
def runner_lock_held_elsewhere(lock_class: int, object_id: int) -> Iterator[None]:
    """A second database session holds the runner lock for the block, then disconnects."""
    other = another_session()
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s, %s)", [lock_class, object_id])
        yield
    finally:
        other.close()


def poll(check: Callable[[], list], seconds: float = 10) -> list:
    """``check()`` until it returns something (the server drops a closed session's locks
    a moment after it goes) or ``seconds`` pass; returns its last answer."""
    deadline = time.monotonic() + seconds
    answer = check()
    while not answer and time.monotonic() < deadline:
        time.sleep(0.05)
        answer = check()
    return answer
