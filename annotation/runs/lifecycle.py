"""One lifecycle for background runs (import/export jobs, sampling batches): claim the
row, write progress, finish or fail it, and find runs whose process died.

A runner (Celery worker, CLI) holds a PostgreSQL advisory lock keyed by (lock class,
row id) while it works. The server drops the lock when the runner's session ends, so a
row marked running whose lock nobody holds belongs to a process that died: its
transaction was rolled back and the row can be marked failed. On SQLite (embedded mode,
one machine) there are no such locks; a runner is then known by its process id.

Reads never write: a page or API call shows such a run as stale (``run_is_stale``); the
beat task and the services that start or restart runs mark it failed.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from django.db import connection
from django.utils import timezone

from annotation.catalog.upload_cleanup import run_uploads_remove
from annotation.core.errors import DomainError, NotFound
from annotation.core.progress import Progress
from annotation.models import BackgroundRun, JobStatus

logger = logging.getLogger(__name__)


# First keys of the advisory locks, one per kind of row a runner works on.
SAMPLING_BATCH_LOCKS = 7_301
JOB_LOCKS = 7_302


@dataclass(frozen=True)
class RunKind:
    """What the lifecycle needs to know about one kind of run row.

    ``claim_resets``: fields a fresh claim clears besides the common ones.
    ``orphan_message(row)``: the error stored on a run whose process died.
    ``after_orphaned(row)``: tidies what such a run left behind (export staging).
    """

    model: type[BackgroundRun]
    lock_class: int
    noun: str
    orphan_message: Callable[[BackgroundRun], str]
    claim_resets: dict = field(default_factory=dict)
    after_orphaned: Callable[[BackgroundRun], None] | None = None
    # For a run handed on to other processes (``run_detach``): whether its work is
    # still under way, asked when no process holds its runner lock.
    detached_alive: Callable[[BackgroundRun], bool] | None = None


# The runner of a row whose work went on in other processes (a Celery chord).
DETACHED = "chord:"


# --- runner identity and locks ---------------------------------------------------------


def runner_name() -> str:
    """This process, as stored on the row it runs: ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid()}"


@contextmanager
def runner_lock(lock_class: int, object_id: int, *, wait: bool = False) -> Iterator[bool]:
    """Hold the runner lock of one row for the block; yields False when another session
    holds it (or, with ``wait``, waits for it). On SQLite always True."""
    if connection.vendor != "postgresql":
        yield True
        return
    with connection.cursor() as cursor:
        if wait:
            cursor.execute("SELECT pg_advisory_lock(%s, %s), true", [lock_class, object_id])
        else:
            cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [lock_class, object_id])
        locked = cursor.fetchone()[-1]
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


# --- the lifecycle ---------------------------------------------------------------------


def run_once(
    kind: RunKind, run_id: int, body: Callable[[BackgroundRun, Progress], None], *, echo: Progress | None = None
) -> BackgroundRun:
    """Run a pending row once, holding its runner lock, and return it as it ends.

    Idempotent: only the caller that moves the row from pending to running runs
    ``body(row, progress)``, so a repeated task delivery does nothing; a row marked
    running whose runner died is marked failed. ``body`` marks the row succeeded itself
    (in the transaction that writes its result); the files uploaded for it are then
    removed. A DomainError fails the row with its message (no raise); anything
    unexpected fails it and re-raises.
    """
    with runner_lock(kind.lock_class, run_id) as locked:
        row = kind.model.objects.filter(pk=run_id).first()
        if row is None:
            raise NotFound(f"no {kind.noun} #{run_id}")
        if not locked:
            return row
        if not _claim(kind, run_id):
            if row.status == JobStatus.RUNNING and _gone_while_locked(kind, row):
                _fail_orphaned(kind, row)
            row.refresh_from_db()
            return row
        row.refresh_from_db()
        return _run_body(kind, row, body, echo)


def _run_body(
    kind: RunKind, row: BackgroundRun, body: Callable[[BackgroundRun, Progress], None], echo: Progress | None
) -> BackgroundRun:
    """``body(row, progress)`` with the lifecycle's handling of errors (a DomainError
    fails the row with its message; anything else fails it and re-raises); the row's
    uploads go when it succeeded. Returns the row as it ends."""
    try:
        body(row, progress_writer(kind, row.pk, echo))
    except DomainError as exc:
        run_fail(kind, row.pk, str(exc))
    except Exception as exc:
        logger.exception("%s #%s failed", kind.noun, row.pk)
        run_fail(kind, row.pk, f"unexpected error: {exc!r}")
        raise
    row.refresh_from_db()
    # A failed run keeps its uploads for diagnosis (the prune removes them later).
    if row.status == JobStatus.SUCCEEDED and run_uploads_remove(row):
        row.refresh_from_db()
    return row


def _gone_while_locked(kind: RunKind, row: BackgroundRun) -> bool:
    if row.runner.startswith(DETACHED):
        return kind.detached_alive is not None and not kind.detached_alive(row)
    return previous_runner_gone(kind.lock_class, row.pk, row.runner)


def run_detach(kind: RunKind, run_id: int, message: str) -> None:
    """Hand a running row on to other processes: it stays running when this one ends
    (``detached_alive`` tells whether its work goes on; ``run_resume`` finishes it)."""
    kind.model.objects.filter(pk=run_id, status=JobStatus.RUNNING).update(
        runner=f"{DETACHED}{runner_name()}", progress_message=message[:255]
    )


def run_resume(
    kind: RunKind, run_id: int, body: Callable[[BackgroundRun, Progress], None], *, echo: Progress | None = None
) -> BackgroundRun | None:
    """Finish a detached running row in this process, holding its runner lock: ``body``
    as in ``run_once``, with the same handling of errors. Waits for the lock (the process
    that detached the row may not have let go of it yet); None when the row is gone, or
    no longer running or detached (a repeated delivery)."""
    with runner_lock(kind.lock_class, run_id, wait=True):
        row = kind.model.objects.filter(pk=run_id).first()
        if row is None or row.status != JobStatus.RUNNING or not row.runner.startswith(DETACHED):
            return None
        return _run_body(kind, row, body, echo)


def _claim(kind: RunKind, run_id: int) -> bool:
    """Move a pending row to running for this process; False if it is not pending."""
    return bool(
        kind.model.objects.filter(pk=run_id, status=JobStatus.PENDING).update(
            status=JobStatus.RUNNING,
            runner=runner_name(),
            started_at=timezone.now(),
            finished_at=None,
            error="",
            progress_done=0,
            progress_total=0,
            progress_message="starting",
            **kind.claim_resets,
        )
    )


def progress_writer(kind: RunKind, run_id: int, echo: Progress | None = None) -> Progress:
    """Progress goes to the row at once (autocommit, outside the run's own transaction),
    where admin, API and CLI read it; ``echo`` also gets it (the CLI prints it)."""

    def report(done: int, total: int, message: str) -> None:
        kind.model.objects.filter(pk=run_id).update(
            progress_done=done, progress_total=total, progress_message=message[:255]
        )
        if echo is not None:
            echo(done, total, message)

    return report


def run_succeed(kind: RunKind, run_id: int, *, message: str, **results) -> None:
    """Mark a running row succeeded with its results (call inside the transaction that
    writes them, so the row never says succeeded about work that was rolled back)."""
    kind.model.objects.filter(pk=run_id).update(
        status=JobStatus.SUCCEEDED, progress_message=message[:255], finished_at=timezone.now(), **results
    )


def run_fail(kind: RunKind, run_id: int, message: str) -> bool:
    """Mark a running row failed; False if it is no longer running (a row whose work
    committed stays succeeded even if something after the commit failed)."""
    # A message quoting bad input verbatim must still store: PostgreSQL text holds no NUL.
    message = message.replace("\x00", "\\x00")
    return bool(
        kind.model.objects.filter(pk=run_id, status=JobStatus.RUNNING).update(
            status=JobStatus.FAILED, error=message, progress_message="failed", finished_at=timezone.now()
        )
    )


def _fail_orphaned(kind: RunKind, row: BackgroundRun) -> bool:
    failed = run_fail(kind, row.pk, kind.orphan_message(row))
    if failed and kind.after_orphaned is not None:
        kind.after_orphaned(row)
    return failed


def runs_fail_orphaned(kind: RunKind) -> list[int]:
    """Mark failed every running row of this kind whose runner is gone. Returns their ids.
    Called by the beat task and by the services that start or restart runs."""
    return [
        row.pk
        for row in kind.model.objects.filter(status=JobStatus.RUNNING)
        if not run_alive(kind, row) and _fail_orphaned(kind, row)
    ]


def run_alive(kind: RunKind, row: BackgroundRun) -> bool:
    """Whether a running row's work may still be going on: its runner holds the lock (or
    its process lives), or, detached, ``detached_alive`` says so."""
    if runner_alive(kind.lock_class, row.pk, row.runner):
        return True
    if row.runner.startswith(DETACHED):
        return kind.detached_alive is None or kind.detached_alive(row)
    return False


def run_is_stale(kind: RunKind, row: BackgroundRun) -> bool:
    """A row marked running whose runner is gone (read only: nothing is written)."""
    return row.status == JobStatus.RUNNING and not run_alive(kind, row)
