"""Races made certain rather than hoped for: a connection of its own holds a row lock that
a request sent meanwhile (in a thread) must wait for; the test waits until PostgreSQL shows
the request waiting, does what the race needs, then lets the lock go."""

from __future__ import annotations

import threading
import time

import psycopg2
from django.db import connection


def hold_row_lock(sql: str, params: list):
    """A connection of its own holding the row lock ``sql`` takes (FOR UPDATE), as a chunk,
    a claim or another submission would."""
    holder = psycopg2.connect(**connection.get_connection_params())
    holder.cursor().execute(sql, params)
    return holder


def wait_for_lock_waiters(holder, count: int, stop_if_done=None, seconds: float = 15.0) -> None:
    """Until ``count`` other backends of the database wait for a lock (or ``stop_if_done``,
    a thread, has ended: what it would have waited for did not hold it up)."""
    own = holder.get_backend_pid()
    deadline = time.monotonic() + seconds
    with holder.cursor() as cursor:
        while time.monotonic() < deadline:
            # The holder is inside its transaction, where the activity view keeps the
            # snapshot of its first read unless told to drop it.
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> %s "
                "AND datname = current_database()",
                [own],
            )
            if cursor.fetchone()[0] >= count or (stop_if_done is not None and not stop_if_done.is_alive()):
                return
            time.sleep(0.02)
    raise AssertionError(f"fewer than {count} backends ever waited for a lock")


def in_thread(work, answers: list) -> threading.Thread:
    """``work()`` in a thread of its own (its own database connection, closed after),
    its result or exception appended to ``answers``."""

    def run():
        try:
            answers.append(work())
        except Exception as error:  # shown by the test's assertions
            answers.append(error)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread
