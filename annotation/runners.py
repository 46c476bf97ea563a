"""Who runs a background job, and whether that process is still alive.

A runner (Celery worker, CLI) holds a PostgreSQL advisory lock keyed by (lock class,
object id) while it works. The server drops the lock when the runner's session ends, so
a row marked running whose lock nobody holds belongs to a process that died: its
transaction was rolled back and the row can be marked failed. On SQLite (embedded mode,
one machine) there are no such locks; a runner is then known by its process id.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection

# First keys of the advisory locks, one per kind of row a runner works on.
SAMPLING_BATCH_LOCKS = 7_301
JOB_LOCKS = 7_302


def runner_name() -> str:
    """This process, as stored on the row it runs: ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid()}"


@contextmanager
def runner_lock(lock_class: int, object_id: int) -> Iterator[bool]:
    """Hold the runner lock of one row for the block; yields False when another session
    holds it (on SQLite always True)."""
    if connection.vendor != "postgresql":
        yield True
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [lock_class, object_id])
        locked = cursor.fetchone()[0]
    try:
        yield locked
    finally:
        if locked:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [lock_class, object_id])


def previous_runner_gone(lock_class: int, object_id: int, runner: str) -> bool:
    """For a row marked running, asked while holding its runner lock."""
    # On PostgreSQL holding the lock proves its previous holder is gone.
    return connection.vendor == "postgresql" or not runner_alive(lock_class, object_id, runner)


def runner_alive(lock_class: int, object_id: int, runner: str) -> bool:
    """Whether the process that marked a row running may still be working on it."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted"
                " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
                " AND classid::bigint = %s AND objid::bigint = %s AND objsubid = 2)",
                [lock_class, object_id],
            )
            return cursor.fetchone()[0]
    host, _, pid = runner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        # Another machine's process cannot be checked from here; assume it still works.
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
