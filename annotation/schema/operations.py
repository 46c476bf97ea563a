"""Migration operations that change a hot table's indexes while raters write to it.

On PostgreSQL each builds or drops CONCURRENTLY (the migration sets ``atomic = False``),
and every statement is safe to run again, so a migration of these alone may set
``idempotent = True`` and be retried after a lock wait given up (``safe_migrate``). On
other databases (the embedded SQLite mode) they do what Django's own operations do.
"""

from __future__ import annotations

from contextlib import contextmanager

from django.contrib.postgres.operations import AddIndexConcurrently as PostgresAddIndexConcurrently
from django.contrib.postgres.operations import RemoveIndexConcurrently as PostgresRemoveIndexConcurrently
from django.db import models
from django.db.migrations.operations import AddConstraint, AddIndex, RemoveConstraint, RemoveIndex
from django.db.migrations.operations.base import Operation

# Drops the swap's half-built index a failed CREATE INDEX CONCURRENTLY left (invalid), never
# a built one (a DO block may not drop CONCURRENTLY; the lock is short: the index is unused).
DROP_INVALID = """
DO $$ BEGIN
    IF EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
               WHERE c.relname = '{name}' AND NOT i.indisvalid) THEN
        DROP INDEX "{name}";
    END IF;
END $$
"""


@contextmanager
def _without_statement_timeout(schema_editor):
    """A build CONCURRENTLY blocks no writer: no statement timeout cuts it short; the
    session's comes back after it."""
    if schema_editor.collect_sql:
        yield
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('statement_timeout')")
        (before,) = cursor.fetchone()
        cursor.execute("SET statement_timeout TO 0")
    try:
        yield
    finally:
        with schema_editor.connection.cursor() as cursor:
            cursor.execute("SELECT set_config('statement_timeout', %s, false)", [before])


class SwapIndexConcurrently(Operation):
    """Give an index (``models.Index``) or an index-backed unique constraint (a
    ``UniqueConstraint`` with a condition) of ``model_name`` the definition ``new``, under
    its name. On PostgreSQL the new one is built CONCURRENTLY under a temporary name before
    the old one is dropped and the new one renamed: writes never wait for the build, and a
    unique rule holds at every moment. Reversed, the old definition comes back the same way."""

    reversible = True

    def __init__(self, model_name: str, new: models.Index | models.UniqueConstraint):
        if isinstance(new, models.UniqueConstraint) and new.condition is None:
            raise ValueError(f"{new.name}: a unique constraint without a condition is no index to swap")
        self.model_name = model_name
        self.new = new

    @property
    def is_index(self) -> bool:
        return isinstance(self.new, models.Index)

    def _state_operations(self) -> list[Operation]:
        if self.is_index:
            return [RemoveIndex(self.model_name, self.new.name), AddIndex(self.model_name, self.new)]
        return [RemoveConstraint(self.model_name, self.new.name), AddConstraint(self.model_name, self.new)]

    def state_forwards(self, app_label, state):
        for operation in self._state_operations():
            operation.state_forwards(app_label, state)

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        self._swap(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        self._swap(app_label, schema_editor, from_state, to_state)

    def _definition(self, state, app_label):
        model_state = state.models[app_label, self.model_name.lower()]
        if self.is_index:
            return model_state.get_index_by_name(self.new.name)
        return model_state.get_constraint_by_name(self.new.name)

    def _swap(self, app_label, schema_editor, current_state, target_state):
        """From ``current_state``'s definition of the name to ``target_state``'s."""
        model = target_state.apps.get_model(app_label, self.model_name)
        current, target = self._definition(current_state, app_label), self._definition(target_state, app_label)
        if schema_editor.connection.vendor != "postgresql":
            old_model = current_state.apps.get_model(app_label, self.model_name)
            if self.is_index:
                schema_editor.remove_index(old_model, current)
                schema_editor.add_index(model, target)
            else:
                schema_editor.remove_constraint(old_model, current)
                schema_editor.add_constraint(model, target)
            return
        temporary = f"{target.name}_swap"
        schema_editor.execute(DROP_INVALID.format(name=temporary), params=None)
        with _without_statement_timeout(schema_editor):
            schema_editor.execute(self._build_sql(model, schema_editor, target, temporary), params=None)
        schema_editor.execute(f'DROP INDEX CONCURRENTLY IF EXISTS "{target.name}"', params=None)
        schema_editor.execute(f'ALTER INDEX IF EXISTS "{temporary}" RENAME TO "{target.name}"', params=None)

    def _build_sql(self, model, schema_editor, target, temporary: str) -> str:
        """``target``'s CREATE INDEX as Django writes it, under ``temporary``, CONCURRENTLY
        and IF NOT EXISTS (a built one from an earlier try stays)."""
        built = target.clone()
        built.name = temporary
        if self.is_index:
            create = str(built.create_sql(model, schema_editor, concurrently=True))
            return create.replace("INDEX CONCURRENTLY ", "INDEX CONCURRENTLY IF NOT EXISTS ", 1)
        create = str(built.create_sql(model, schema_editor))
        return create.replace("CREATE UNIQUE INDEX ", "CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS ", 1)

    def describe(self):
        return f"Swap {self.new.name} of {self.model_name} for its new definition, concurrently"

    @property
    def migration_name_fragment(self):
        return f"swap_{self.new.name.lower()}"


class _ElsewhereAsDjango:
    """The PostgreSQL operation it is mixed into on PostgreSQL; ``elsewhere``, Django's
    own operation of the same arguments, on any other database."""

    elsewhere: type[Operation]

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            return super().database_forwards(app_label, schema_editor, from_state, to_state)
        return self.elsewhere.database_forwards(self, app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            return super().database_backwards(app_label, schema_editor, from_state, to_state)
        return self.elsewhere.database_backwards(self, app_label, schema_editor, from_state, to_state)


class RemoveIndexConcurrently(_ElsewhereAsDjango, PostgresRemoveIndexConcurrently):
    """django.contrib.postgres's (``DROP INDEX CONCURRENTLY IF EXISTS``) on PostgreSQL,
    Django's RemoveIndex elsewhere."""

    elsewhere = RemoveIndex


class AddIndexConcurrently(_ElsewhereAsDjango, PostgresAddIndexConcurrently):
    """django.contrib.postgres's (``CREATE INDEX CONCURRENTLY``) on PostgreSQL, Django's
    AddIndex elsewhere. Not safe to run again by itself: a failed build leaves an invalid
    index of the name (drop it, then migrate again)."""

    elsewhere = AddIndex


class AddUniqueConstraintConcurrently(Operation):
    """Add a unique constraint with a condition (an index-backed one) to ``model_name``:
    on PostgreSQL its unique index built CONCURRENTLY (IF NOT EXISTS, after dropping a
    half-built one a failed try left), so writes never wait for the build; elsewhere
    Django's AddConstraint. Reversed, the index is dropped CONCURRENTLY."""

    reversible = True

    def __init__(self, model_name: str, constraint: models.UniqueConstraint):
        if constraint.condition is None:
            raise ValueError(f"{constraint.name}: only a unique constraint with a condition is an index to build")
        self.model_name = model_name
        self.constraint = constraint

    def state_forwards(self, app_label, state):
        AddConstraint(self.model_name, self.constraint).state_forwards(app_label, state)

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        model = to_state.apps.get_model(app_label, self.model_name)
        if schema_editor.connection.vendor != "postgresql":
            schema_editor.add_constraint(model, self.constraint)
            return
        schema_editor.execute(DROP_INVALID.format(name=self.constraint.name), params=None)
        create = str(self.constraint.create_sql(model, schema_editor))
        with _without_statement_timeout(schema_editor):
            schema_editor.execute(
                create.replace("CREATE UNIQUE INDEX ", "CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS ", 1),
                params=None,
            )

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        model = from_state.apps.get_model(app_label, self.model_name)
        if schema_editor.connection.vendor != "postgresql":
            schema_editor.remove_constraint(model, self.constraint)
            return
        schema_editor.execute(f'DROP INDEX CONCURRENTLY IF EXISTS "{self.constraint.name}"', params=None)

    def describe(self):
        return f"Add {self.constraint.name} to {self.model_name}, its index built concurrently"

    @property
    def migration_name_fragment(self):
        return f"add_{self.constraint.name.lower()}"


class SwapCheckConstraint(Operation):
    """Give a CHECK constraint of ``model_name`` the definition ``new``, under its name.
    On PostgreSQL the new one is added NOT VALID under a temporary name (a short lock),
    validated (reading every row under a lock that lets writes go on), then the old one
    is dropped and the new one renamed: the table is never without a check, and every
    statement may run again. Elsewhere Django's RemoveConstraint and AddConstraint.
    Reversed, the old definition comes back the same way."""

    reversible = True

    def __init__(self, model_name: str, new: models.CheckConstraint):
        self.model_name = model_name
        self.new = new

    def state_forwards(self, app_label, state):
        RemoveConstraint(self.model_name, self.new.name).state_forwards(app_label, state)
        AddConstraint(self.model_name, self.new).state_forwards(app_label, state)

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        self._swap(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        self._swap(app_label, schema_editor, from_state, to_state)

    def _swap(self, app_label, schema_editor, current_state, target_state):
        name = self.new.name
        current = current_state.models[app_label, self.model_name.lower()].get_constraint_by_name(name)
        target = target_state.models[app_label, self.model_name.lower()].get_constraint_by_name(name)
        model = target_state.apps.get_model(app_label, self.model_name)
        if schema_editor.connection.vendor != "postgresql":
            schema_editor.remove_constraint(current_state.apps.get_model(app_label, self.model_name), current)
            schema_editor.add_constraint(model, target)
            return
        table = schema_editor.quote_name(model._meta.db_table)
        temporary = schema_editor.quote_name(f"{name}_swap")
        check = target._get_check_sql(model, schema_editor)
        for statement in (
            f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {temporary}",
            f"ALTER TABLE {table} ADD CONSTRAINT {temporary} CHECK ({check}) NOT VALID",
            f"ALTER TABLE {table} VALIDATE CONSTRAINT {temporary}",
            f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {schema_editor.quote_name(name)}",
            f"ALTER TABLE {table} RENAME CONSTRAINT {temporary} TO {schema_editor.quote_name(name)}",
        ):
            schema_editor.execute(statement, params=None)

    def describe(self):
        return f"Swap the check {self.new.name} of {self.model_name} for its new definition, validated apart"

    @property
    def migration_name_fragment(self):
        return f"swap_{self.new.name.lower()}"
