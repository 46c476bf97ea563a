"""manage.py migrate: Django's command, on PostgreSQL with a lock timeout and a statement
timeout set before each migration and a migration that gave up a lock wait tried again
(annotation.schema.safe_migrate; the MIGRATION_* settings). Elsewhere (the embedded
SQLite mode) Django's command as it is.

A retry runs the command again: the migrations applied before stay applied, the one that
gave up was rolled back, so the plan starts with it.
"""

import time

from django.core.management.base import CommandError
from django.core.management.commands.migrate import Command as DjangoMigrate
from django.db import OperationalError, connections

from annotation.schema.safe_migrate import (
    MigrationNotRetried,
    MigrationTimeouts,
    RetryBudget,
    apply_timeouts,
    reset_timeouts,
)


class Command(DjangoMigrate):
    help = (
        DjangoMigrate.help + " On PostgreSQL, each migration runs with MIGRATION_LOCK_TIMEOUT_MS and "
        "MIGRATION_STATEMENT_TIMEOUT_MS, and one that gives up a lock wait is tried again "
        "(MIGRATION_LOCK_RETRIES, MIGRATION_RETRY_BACKOFF_MS)."
    )

    guarded = None  # (connection, timeouts) while a PostgreSQL run is guarded
    running = None  # the migration being applied or unapplied

    def handle(self, *args, **options):
        connection = connections[options["database"]]
        if connection.vendor != "postgresql":
            return super().handle(*args, **options)
        timeouts = MigrationTimeouts.from_settings()
        budget = RetryBudget(timeouts)
        self.guarded = (connection, timeouts)
        if options["verbosity"] >= 2:
            self.stdout.write(f"Migrating with {timeouts.describe()}")
        try:
            while True:
                self.running = None
                try:
                    return super().handle(*args, **options)
                except OperationalError as error:
                    try:
                        delay = budget.delay_after(self.running, error)
                    except MigrationNotRetried as stop:
                        raise CommandError(str(stop)) from error
                    if options["verbosity"] >= 1:  # ends the "Applying ..." line
                        self.stdout.write(self.style.WARNING(f" GAVE UP A LOCK WAIT, again in {delay:.1f} s"))
                    time.sleep(delay)
        finally:
            self.guarded = None
            reset_timeouts(connection)

    def migration_progress_callback(self, action, migration=None, fake=False):
        if self.guarded is not None and action in ("apply_start", "unapply_start"):
            self.running = migration
            apply_timeouts(*self.guarded)
        super().migration_progress_callback(action, migration, fake)
