"""Recording what migrations run: each one applied on a PostgreSQL connection while every
statement it sends is written down (``RecordedMigration``), RunPython's and the deferred
SQL's included, which ``sqlmigrate`` would not show. The linter records every migration
on a scratch database made for the purpose (``scratch_database``); a test can record a
planted one on the test database inside its transaction.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connections
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.migration import Migration
from django.db.migrations.operations import AddField, SeparateDatabaseAndState
from django.db.migrations.state import ProjectState

from annotation.schema.rules import RecordedMigration
from annotation.schema.statements import read, split, unquote

_DROP_INDEX = re.compile(
    r'^DROP INDEX (?:CONCURRENTLY )?(?:IF EXISTS )?((?:"[^"]+"|[\w$]+)(?:\.(?:"[^"]+"|[\w$]+))?)', re.I
)


class _Recorder:
    """An execute wrapper writing each statement into ``entry`` before it runs; a DROP
    INDEX's table is looked up first (afterwards the index is gone)."""

    def __init__(self, connection, entry: RecordedMigration):
        self.connection = connection
        self.entry = entry

    def __call__(self, execute, sql, params, many, context):
        for text in split(str(sql)):
            dropped = _DROP_INDEX.match(text)
            index_tables = {}
            if dropped:
                index = unquote(dropped[1])
                index_tables[index] = self._table_of_index(index)
            self.entry.statements.append(read(text, index_tables))
        return execute(sql, params, many, context)

    def _table_of_index(self, index: str) -> str:
        # The driver's own cursor: a Django cursor would pass through this wrapper again.
        with self.connection.connection.cursor() as cursor:
            cursor.execute("SELECT tablename FROM pg_indexes WHERE indexname = %s", [index.split(".")[-1]])
            row = cursor.fetchone()
        return row[0] if row else ""


def database_operations(operations) -> Iterator:
    """The operations that reach the database, SeparateDatabaseAndState's opened."""
    for operation in operations:
        if isinstance(operation, SeparateDatabaseAndState):
            yield from database_operations(operation.database_operations)
        else:
            yield operation


def callable_defaults(migration: Migration, state: ProjectState) -> list[tuple[str, str, str]]:
    """(table, column, callable's name) for each column ``migration`` adds with a Python
    callable default to a model that exists in ``state`` (the state before it)."""
    found = []
    for operation in database_operations(migration.operations):
        field = getattr(operation, "field", None)
        if not isinstance(operation, AddField) or not field.has_default() or not callable(field.default):
            continue
        try:
            table = state.apps.get_model(migration.app_label, operation.model_name)._meta.db_table
        except LookupError:  # a model the migration creates itself: a new table
            continue
        column = field.db_column or (f"{operation.name}_id" if field.is_relation else operation.name)
        name = f"{getattr(field.default, '__module__', '')}.{getattr(field.default, '__qualname__', field.default)}"
        found.append((table, column, name))
    return found


def record(connection, migrations: list[Migration], state: ProjectState) -> list[RecordedMigration]:
    """Apply ``migrations`` forwards, in order, on ``connection`` (PostgreSQL), from
    ``state`` (the project's state before the first), recording each one's statements."""
    executor = MigrationExecutor(connection)
    recorded = []
    for migration in migrations:
        entry = RecordedMigration(f"{migration.app_label}.{migration.name}", migration.atomic)
        entry.reversible = all(operation.reversible for operation in migration.operations)
        entry.callable_defaults = callable_defaults(migration, state)
        with connection.execute_wrapper(_Recorder(connection, entry)):
            state = executor.apply_migration(state, migration)
        recorded.append(entry)
    return recorded


def volatile_functions(connection) -> set[str]:
    """The names of the functions PostgreSQL marks volatile (a name with any volatile
    overload counts)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT DISTINCT proname FROM pg_proc WHERE provolatile = 'v'")
        return {row[0] for row in cursor.fetchall()}


@contextmanager
def scratch_database(name: str, alias: str = "default") -> Iterator:
    """The ``alias`` connection pointed at a new, empty database ``name`` on the same
    server (dropped first if it is there, dropped again at the end), as Django's test
    runner points it at its test database: RunPython code that uses the default
    connection then writes there, never into the real database."""
    connection = connections[alias]
    if connection.vendor != "postgresql":
        raise ValueError(f"the {alias!r} database is {connection.vendor}, not PostgreSQL: its SQL is not PostgreSQL's")
    original = connection.settings_dict["NAME"]
    quoted = connection.ops.quote_name(name)
    with connection._nodb_cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {quoted} WITH (FORCE)")
        cursor.execute(f"CREATE DATABASE {quoted}")
    connection.close()
    connection.settings_dict["NAME"] = name
    try:
        yield connection
    finally:
        connection.close()
        connection.settings_dict["NAME"] = original
        with connection._nodb_cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {quoted} WITH (FORCE)")


def record_every_migration(connection) -> list[RecordedMigration]:
    """Every migration of the project, from an empty database (``connection``'s) to the
    latest, recorded."""
    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes(), clean_start=True)
    return record(
        connection, [migration for migration, _ in plan], ProjectState(real_apps=executor.loader.unmigrated_apps)
    )
