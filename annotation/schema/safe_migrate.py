"""The migrate command's guard on PostgreSQL: a lock timeout and a statement timeout set
for each migration, and a migration that waited too long for a lock tried again.

Why a lock timeout: an ALTER TABLE waiting for its lock holds up every request that
comes after it on that table (PostgreSQL queues them behind the waiting lock), so a
migration must give up soon and try again, not wait with the raters stuck behind it.
Why a statement timeout: a statement that runs long under a lock (a rewrite the linter
did not see) is stopped rather than left to hold the table.

The settings (``MIGRATION_*``, config/settings.py) are read when the command runs. The
session's own values are restored when it ends: the command also migrates the tests'
databases, whose connections live on.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.conf import settings

logger = logging.getLogger(__name__)

# SQLSTATEs of a lock wait given up: lock_timeout (lock_not_available) and a deadlock
# PostgreSQL broke by cancelling this side. Both leave an atomic migration rolled back.
LOCK_WAIT_CODES = {"55P03": "its lock timeout", "40P01": "a deadlock"}
# The longest pause between two tries: the retries stay spread over minutes, not hours.
BACKOFF_CAP_S = 30.0


@dataclass(frozen=True)
class MigrationTimeouts:
    """``lock_ms``: how long a statement waits for a lock; ``statement_ms``: how long one
    runs (0: no limit); ``retries``: how often a migration that gave up a lock wait is
    tried again; ``backoff_ms``: the wait before the first retry, doubled for each next up
    to BACKOFF_CAP_S."""

    lock_ms: int
    statement_ms: int
    retries: int
    backoff_ms: int

    @classmethod
    def from_settings(cls) -> MigrationTimeouts:
        return cls(
            lock_ms=settings.MIGRATION_LOCK_TIMEOUT_MS,
            statement_ms=settings.MIGRATION_STATEMENT_TIMEOUT_MS,
            retries=settings.MIGRATION_LOCK_RETRIES,
            backoff_ms=settings.MIGRATION_RETRY_BACKOFF_MS,
        )

    def describe(self) -> str:
        statement = f"{self.statement_ms} ms" if self.statement_ms else "none"
        return (
            f"lock timeout {self.lock_ms} ms, statement timeout {statement}, up to {self.retries} retries "
            f"from {self.backoff_ms} ms apart"
        )


def apply_timeouts(connection, timeouts: MigrationTimeouts) -> None:
    """Set the session's lock and statement timeouts (before each migration: one that sets
    its own, to build an index for longer, keeps them to itself)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT set_config('lock_timeout', %s, false), set_config('statement_timeout', %s, false)",
            [f"{timeouts.lock_ms}ms", f"{timeouts.statement_ms}ms"],
        )


def reset_timeouts(connection) -> None:
    """The session's own timeouts back (those of its connection options, role and
    database), when the connection is still open."""
    if connection.connection is None:
        return
    with connection.cursor() as cursor:
        cursor.execute("RESET lock_timeout; RESET statement_timeout")


def lock_wait_given_up(error: BaseException) -> str:
    """What ``error`` gave up ("its lock timeout", "a deadlock"), "" for any other error."""
    return LOCK_WAIT_CODES.get(getattr(error.__cause__, "pgcode", None) or "", "")


class MigrationNotRetried(Exception):
    """A lock wait given up that is not tried again: the message says why."""


class RetryBudget:
    """The retries of one command run, counted per migration."""

    def __init__(self, timeouts: MigrationTimeouts):
        self.timeouts = timeouts
        self.tried: dict[str, int] = {}

    def delay_after(self, migration, error: BaseException) -> float:
        """Seconds to wait before trying ``migration`` again after ``error``; raises
        MigrationNotRetried when it is not tried again (the error is no lock wait given
        up, the migration is not atomic and not marked idempotent, or its retries are
        spent), and re-raises ``error`` when no migration was running."""
        given_up = lock_wait_given_up(error)
        if migration is None or not given_up:
            raise error
        label = f"{migration.app_label}.{migration.name}"
        if not migration.atomic and not getattr(migration, "idempotent", False):
            raise MigrationNotRetried(
                f"{label} gave up a lock wait ({given_up}) and is not atomic: what it did before stays done, so it is "
                "not tried again by itself; check the database and run migrate again"
            )
        retry = self.tried.get(label, 0) + 1
        if retry > self.timeouts.retries:
            raise MigrationNotRetried(
                f"{label} gave up a lock wait ({given_up}) {retry} times (MIGRATION_LOCK_RETRIES="
                f"{self.timeouts.retries}): something holds its table; see pg_locks and pg_stat_activity"
            )
        self.tried[label] = retry
        delay = min(self.timeouts.backoff_ms * 2 ** (retry - 1) / 1000, BACKOFF_CAP_S)
        logger.warning(
            "migration %s gave up waiting for a lock (%s, %s ms); rolled back, retry %d of %d in %.1f s",
            label,
            given_up,
            self.timeouts.lock_ms,
            retry,
            self.timeouts.retries,
            delay,
        )
        return delay
