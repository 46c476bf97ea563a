"""``manage.py migrate`` on PostgreSQL: a migration that gives up waiting for a lock is
rolled back and tried again after a growing pause, each retry logged, until its retries
are spent; a non-atomic one is not tried again; a statement past the statement timeout
stops the run at once; the session's timeouts are its own again afterwards.

The plant (after the latest annotation migration, loaded through MIGRATION_MODULES) locks
or reads the flag table, which another session holds locked for a while."""

import logging
import threading
from io import StringIO

import psycopg2
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import OperationalError, connection
from django.db.migrations.recorder import MigrationRecorder

from tests.support.planted_migrations import PLANT_NAME, plant

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

LOCKS_THE_FLAGS = """
    operations = [migrations.RunSQL("LOCK TABLE annotation_flag IN ACCESS EXCLUSIVE MODE", migrations.RunSQL.noop)]
"""


@pytest.fixture
def planted(settings, tmp_path, request):
    """Plants ``body`` (the test's parameter, LOCKS_THE_FLAGS by default) with the guard's
    settings made quick; unrecorded again afterwards."""
    body, atomic = getattr(request, "param", (LOCKS_THE_FLAGS, True))
    package = plant(
        tmp_path, f"planted_{request.node.name.replace('[', '_').rstrip(']')}", body + f"    atomic = {atomic}\n"
    )
    settings.MIGRATION_MODULES = {"annotation": package}
    settings.MIGRATION_LOCK_TIMEOUT_MS = 150
    settings.MIGRATION_STATEMENT_TIMEOUT_MS = 60_000
    settings.MIGRATION_RETRY_BACKOFF_MS = 100
    settings.MIGRATION_LOCK_RETRIES = 5
    yield
    MigrationRecorder(connection).record_unapplied("annotation", PLANT_NAME)


def hold_flag_table(seconds: float) -> threading.Thread:
    """Another session holds a lock on the flag table for ``seconds`` from now."""
    settings = connection.settings_dict
    holder = psycopg2.connect(
        dbname=settings["NAME"], user=settings["USER"], host=settings["HOST"], port=settings["PORT"] or 5432
    )
    with holder.cursor() as cursor:
        cursor.execute("LOCK TABLE annotation_flag IN ACCESS EXCLUSIVE MODE")

    def release():
        holder.commit()
        holder.close()

    timer = threading.Timer(seconds, release)
    timer.start()
    return timer


def applied() -> bool:
    return ("annotation", PLANT_NAME) in MigrationRecorder(connection).applied_migrations()


def session_timeouts() -> tuple[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('lock_timeout'), current_setting('statement_timeout')")
        return cursor.fetchone()


class _FirstRetry(logging.Handler):
    """Set when the guard logs its first retry: the lock is let go only then, however long
    the command takes to reach the planted migration on a busy machine."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.seen = threading.Event()

    def emit(self, record):
        self.seen.set()


def hold_flag_table_until(event: threading.Event, most_seconds: float) -> threading.Thread:
    """Another session holds a lock on the flag table until ``event`` (or ``most_seconds``)."""
    settings = connection.settings_dict
    holder = psycopg2.connect(
        dbname=settings["NAME"], user=settings["USER"], host=settings["HOST"], port=settings["PORT"] or 5432
    )
    with holder.cursor() as cursor:
        cursor.execute("LOCK TABLE annotation_flag IN ACCESS EXCLUSIVE MODE")

    def release():
        event.wait(most_seconds)
        holder.commit()
        holder.close()

    thread = threading.Thread(target=release)
    thread.start()
    return thread


def test_a_lock_wait_given_up_is_retried_until_the_lock_is_free(planted, caplog):
    before = session_timeouts()
    first_retry = _FirstRetry()
    guard_log = logging.getLogger("annotation.schema.safe_migrate")
    guard_log.addHandler(first_retry)
    holder = hold_flag_table_until(first_retry.seen, 20)
    try:
        with caplog.at_level(logging.WARNING, logger="annotation.schema.safe_migrate"):
            call_command("migrate", "annotation", verbosity=1, stdout=StringIO())
    finally:
        first_retry.seen.set()
        holder.join()
        guard_log.removeHandler(first_retry)
    retries = [r.getMessage() for r in caplog.records]
    assert applied()
    assert retries and all(
        f"annotation.{PLANT_NAME} gave up waiting for a lock (its lock timeout, 150 ms)" in r for r in retries
    )
    assert "retry 1 of 5 in 0.1 s" in retries[0]
    assert len(retries) == 1 or "retry 2 of 5 in 0.2 s" in retries[1]  # the pause doubles
    assert session_timeouts() == before


def test_when_the_retries_are_spent_the_command_fails_naming_the_migration(planted, settings):
    settings.MIGRATION_LOCK_RETRIES = 1
    timer = hold_flag_table(3)
    try:
        with pytest.raises(
            CommandError, match=rf"annotation\.{PLANT_NAME} gave up a lock wait \(its lock timeout\) 2 times"
        ):
            call_command("migrate", "annotation", verbosity=0)
    finally:
        timer.join()
    assert not applied()


READS_THE_FLAGS = """
    operations = [migrations.RunSQL("SELECT count(*) FROM annotation_flag", migrations.RunSQL.noop)]
"""


@pytest.mark.parametrize("planted", [(READS_THE_FLAGS, False)], indirect=True)
def test_a_migration_that_is_not_atomic_is_not_retried(planted, caplog):
    timer = hold_flag_table(1.5)
    try:
        with pytest.raises(CommandError, match="is not atomic"):
            call_command("migrate", "annotation", verbosity=0)
    finally:
        timer.join()
    assert not caplog.records


@pytest.mark.parametrize(
    "planted", [('    operations = [migrations.RunSQL("SELECT pg_sleep(5)")]\n', True)], indirect=True
)
def test_a_statement_past_the_statement_timeout_stops_the_run(planted, settings, caplog):
    settings.MIGRATION_STATEMENT_TIMEOUT_MS = 200
    with pytest.raises(OperationalError, match="statement timeout"):
        call_command("migrate", "annotation", verbosity=0)
    assert not applied() and not caplog.records
