"""manage.py lint_migrations: refuse a migration that would rewrite or long-lock a hot table.

Every migration is applied to a scratch PostgreSQL database made for the run (the
configured database's name + ``_migration_lint`` unless --scratch-database names one,
dropped afterwards) while the SQL it sends is recorded, and the recorded statements are
judged (annotation.schema.rules). Exits non-zero naming each refused migration, its rule
and its statement. Runs in the test command (scripts/test).
"""

import json

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from annotation.schema.excused import EXCUSED
from annotation.schema.hot_tables import hot_tables
from annotation.schema.lint import lint_every_migration
from annotation.schema.rules import RULES


class Command(BaseCommand):
    help = (
        "Apply every migration to a scratch PostgreSQL database, recording its SQL, and refuse any that would "
        "rewrite a hot table or hold a lock on it while its rows are read (see docs/operator-guide.md)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--scratch-database",
            default="",
            help="the database to create, migrate and drop (default: the configured one's name + _migration_lint)",
        )
        parser.add_argument(
            "--json",
            action="store_true",
            help="end with one JSON line: whether it passed and every migration in the order they apply, with the "
            "hot tables it touches and whether it can be unapplied",
        )

    def handle(self, *args, **options):
        if connection.vendor != "postgresql":
            raise CommandError(
                f"lint_migrations judges the SQL PostgreSQL runs; the database is {connection.vendor} "
                "(set DATABASE_URL to a PostgreSQL server)"
            )
        scratch = options["scratch_database"] or f"{connection.settings_dict['NAME']}_migration_lint"
        result = lint_every_migration(scratch)
        self.stdout.write(
            f"{result.migrations} migrations recorded on PostgreSQL ({scratch}); hot tables: "
            f"{', '.join(sorted(hot_tables()))}"
        )
        for label, rules in result.excused.items():
            self.stdout.write(f"  excused {label} [{', '.join(sorted(rules))}]: {EXCUSED[label].why}")
        for refusal in result.refused:
            self.stderr.write(f"REFUSED {refusal}\n    rule: {RULES[refusal.rule]}")
        for stale in result.stale:
            self.stderr.write(f"STALE EXCUSE {stale} (annotation/schema/excused.py)")
        if result.passed:
            self.stdout.write(f"ok: no migration rewrites or long-locks a hot table ({len(result.excused)} excused)")
        if options["json"]:
            self.stdout.write(json.dumps({"passed": result.passed, "migrations": result.recorded}))
        if not result.passed:
            raise CommandError(
                f"{len(result.refused)} refused statement(s), {len(result.stale)} stale excuse(s): make the migration "
                "safe (docs/operator-guide.md, 'Safe migrations')"
            )
