"""What a backup records of the database, read alike from both engines: the row count of
every table, and the schema version, which is the latest migration applied of each app
(the ``django_migrations`` table) set against the latest this code holds."""

from __future__ import annotations

from django.db import connection
from django.db.migrations.loader import MigrationLoader


def count_rows(cursor, tables: list[str]) -> dict[str, int]:
    """``{table: rows}`` read through ``cursor`` (a DB-API cursor of either engine, in the
    caller's snapshot)."""
    counts = {}
    for table in sorted(tables):
        cursor.execute(f"SELECT COUNT(*) FROM {connection.ops.quote_name(table)}")
        counts[table] = int(cursor.fetchone()[0])
    return counts


def latest_applied(cursor) -> dict[str, str]:
    """``{app: name of its latest applied migration}`` as the database records them."""
    cursor.execute("SELECT app, name FROM django_migrations")
    latest: dict[str, str] = {}
    for app, name in cursor.fetchall():
        latest[app] = max(latest.get(app, name), name)
    return dict(sorted(latest.items()))


def code_schema() -> dict[str, str]:
    """``{app: name of its latest migration}`` as this code's migration files have them."""
    latest: dict[str, str] = {}
    for app, name in MigrationLoader(None, ignore_no_migrations=True).graph.leaf_nodes():
        latest[app] = max(latest.get(app, name), name)
    return dict(sorted(latest.items()))


def schema_differences(recorded: dict[str, str], code: dict[str, str]) -> list[str]:
    """Each app whose latest migration differs between a backup and this code, named with
    both (``-`` where one side has none of the app)."""
    return [
        f"{app}: the backup's {recorded.get(app, '-')}, this code's {code.get(app, '-')}"
        for app in sorted(set(recorded) | set(code))
        if recorded.get(app) != code.get(app)
    ]


def count_differences(recorded: dict[str, int], found: dict[str, int]) -> list[str]:
    """Each table whose row count differs from the manifest's, or that is on one side only."""
    return [
        f"{table}: {recorded.get(table, 'no such table')} in the backup, {found.get(table, 'no such table')} restored"
        for table in sorted(set(recorded) | set(found))
        if recorded.get(table) != found.get(table)
    ]
