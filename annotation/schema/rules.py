"""The migration linter's rules: which recorded statements would rewrite a hot table or
hold a lock on it for as long as its rows take (PostgreSQL 11 and later).

Pure: a migration's recorded statements (``statements.Statement``) in, ``Refusal`` out,
given the hot tables (``hot_tables``), the names of PostgreSQL's volatile functions and
the tables the migration itself created (new and empty, so nothing on them waits long).
What is never refused: a lock that is taken and let go at once (DROP INDEX, DROP COLUMN,
a trigger created or dropped, a default set, a NOT NULL dropped, a constraint dropped):
the migrate command's lock timeout keeps such a wait short (``safe_migrate``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from annotation.schema.statements import Statement, alter_actions, called_functions, is_backfill

# Each rule's code and what it stands for; a Refusal's ``why`` says it for the statement.
RULES = {
    "volatile-default": "a column added with a volatile default (or a serial, identity or stored generated "
    "column): PostgreSQL writes every row again under an ACCESS EXCLUSIVE lock",
    "callable-default": "a column added with a Python callable default: Django computes it once, so every "
    "existing row gets the same value, and giving each its own means updating every row",
    "not-null-without-default": "a NOT NULL column added without a default: fails on a table with rows",
    "type-change": "a column's type changed: PostgreSQL rewrites the table and its indexes under ACCESS "
    "EXCLUSIVE (unless the types are binary-coercible)",
    "set-not-null": "SET NOT NULL scans every row under ACCESS EXCLUSIVE",
    "validated-constraint": "a CHECK or FOREIGN KEY added without NOT VALID, or a UNIQUE, PRIMARY KEY or "
    "EXCLUDE constraint built in place: every row is read (or indexed) while writes wait",
    "index-build": "CREATE INDEX without CONCURRENTLY: writes to the table wait while the whole index is built",
    "whole-table-write": "an UPDATE or DELETE of every row in one statement: each row stays locked to the end",
    "table-rewrite": "VACUUM FULL, CLUSTER, REINDEX, SET TABLESPACE or SET LOGGED/UNLOGGED: the table is written "
    "again under ACCESS EXCLUSIVE",
    "explicit-lock": "LOCK TABLE: the lock is held to the migration's end",
    "backfill-under-lock": "a statement whose time grows with a table ran after a write-blocking lock on a hot "
    "table in the same transaction: writes wait for the whole backfill",
}

_ADD_COLUMN = re.compile(r"^ADD (?:COLUMN )?(?:IF NOT EXISTS )?(\"[^\"]+\"|[A-Za-z_][A-Za-z0-9_$]*) (.*)$", re.I)
_REWRITING_TYPES = re.compile(r"^(?:small|big)?serial\b|\bGENERATED\b.*\b(?:STORED|IDENTITY)\b", re.I)
# Statements after which, in one transaction, writes to the table wait until the commit.
_WRITE_BLOCKING = ("alter table", "create index", "drop index", "trigger", "lock", "rewrite", "reindex")


@dataclass(frozen=True)
class Refusal:
    """A statement (or operation) of ``migration`` that ``rule`` refuses on ``table``."""

    migration: str
    rule: str
    table: str
    why: str
    statement: str = ""

    def __str__(self) -> str:
        shown = f"\n    {self.statement[:300]}" if self.statement else ""
        return f"{self.migration}: [{self.rule}] {self.why}{shown}"


@dataclass
class RecordedMigration:
    """What one migration ran on PostgreSQL: its statements in order and the Python
    callable defaults of the columns it added, as ``(table, column, callable's name)``;
    ``reversible``: whether every operation of it can be unapplied."""

    label: str
    atomic: bool
    statements: list[Statement] = field(default_factory=list)
    callable_defaults: list[tuple[str, str, str]] = field(default_factory=list)
    reversible: bool = True

    def created_tables(self) -> set[str]:
        return {s.table for s in self.statements if s.verb == "create table"}

    def touched_tables(self) -> set[str]:
        """The tables its statements act on (DDL and data alike)."""
        return {s.table for s in self.statements if s.table}


def judge(migration: RecordedMigration, hot: Iterable[str], volatile: set[str]) -> list[Refusal]:
    """Every refusal of ``migration``'s statements on the ``hot`` tables (those it created
    itself are new and empty, and are left alone); ``volatile``: function names PostgreSQL
    marks volatile."""
    hot_old = set(hot) - migration.created_tables()
    refusals = [
        Refusal(migration.label, "callable-default", table, f"adds {table}.{column} with default={name}")
        for table, column, name in migration.callable_defaults
        if table in hot_old
    ]
    locked = ""
    for statement in migration.statements:
        if locked and migration.atomic and is_backfill(statement):
            refusals.append(
                Refusal(
                    migration.label,
                    "backfill-under-lock",
                    locked,
                    f"{statement.verb.upper()} on {statement.table} after a lock on {locked} in the same transaction",
                    statement.text,
                )
            )
        if statement.table in hot_old:
            refusals += [
                Refusal(migration.label, rule, statement.table, why, statement.text)
                for rule, why in _refused(statement, volatile)
            ]
            if statement.verb in _WRITE_BLOCKING and not statement.concurrently:
                locked = locked or statement.table
        refusals += _references_hot(migration.label, statement, hot_old, migration.created_tables())
    return refusals


def _refused(statement: Statement, volatile: set[str]) -> list[tuple[str, str]]:
    """(rule, why) for each thing ``statement`` does to its (hot, old) table."""
    table = statement.table
    if statement.verb == "create index" and not statement.concurrently:
        return [("index-build", f"builds an index on {table} without CONCURRENTLY")]
    if statement.verb in ("update", "delete") and is_backfill(statement) and statement.table:
        return [
            ("whole-table-write", f"{statement.verb.upper()} of {table} reaching every row or reading another table")
        ]
    if statement.verb in ("rewrite", "reindex"):
        return [("table-rewrite", f"writes {table} again")]
    if statement.verb == "lock":
        return [("explicit-lock", f"locks {table} explicitly")]
    if statement.verb == "alter table":
        return [found for action in alter_actions(statement) for found in _alter_action(table, action, volatile)]
    return []


def _alter_action(table: str, action: str, volatile: set[str]) -> list[tuple[str, str]]:
    """(rule, why) for one action of an ALTER TABLE on a hot table."""
    added = _ADD_COLUMN.match(action)
    if added and not re.match(r"^ADD (?:CONSTRAINT|CHECK|FOREIGN|UNIQUE|PRIMARY|EXCLUDE)\b", action, re.I):
        return _added_column(table, added[1].strip('"'), added[2], volatile)
    if re.match(r"^ALTER (?:COLUMN )?\S+ (?:SET DATA )?TYPE\b", action, re.I):
        return [("type-change", f"changes a column type of {table}: {action[:120]}")]
    if re.match(r"^ALTER (?:COLUMN )?\S+ SET NOT NULL\b", action, re.I):
        return [("set-not-null", f"sets NOT NULL on {table}: {action[:120]}")]
    if re.match(r"^ADD\b", action, re.I) and not re.search(r"\bNOT VALID\b|\bUSING INDEX\b", action, re.I):
        return [
            ("validated-constraint", f"adds a constraint to {table} that is checked or built at once: {action[:120]}")
        ]
    if re.match(r"^(?:SET TABLESPACE|SET (?:UN)?LOGGED)\b", action, re.I):
        return [("table-rewrite", f"{action[:40]} on {table}")]
    return []


def _added_column(table: str, column: str, definition: str, volatile: set[str]) -> list[tuple[str, str]]:
    found = []
    default = re.search(r"\bDEFAULT\b(.*)$", definition, re.I)
    calls = called_functions(default[1]) & volatile if default else set()
    if calls or _REWRITING_TYPES.search(definition):
        what = f"the volatile default {', '.join(sorted(calls))}()" if calls else definition[:60]
        found.append(("volatile-default", f"adds {table}.{column} with {what}"))
    if re.search(r"\bNOT NULL\b", definition, re.I) and not default and not _REWRITING_TYPES.search(definition):
        found.append(("not-null-without-default", f"adds {table}.{column} NOT NULL without a default"))
    if re.search(r"\bREFERENCES\b", definition, re.I):
        found.append(("validated-constraint", f"adds {table}.{column} with a foreign key checked at once"))
    return found


def _references_hot(label: str, statement: Statement, hot_old: set[str], created: set[str]) -> list[Refusal]:
    """A foreign key to a hot table added to an old table of any kind: both tables are
    locked against writes while the referencing table's rows are checked."""
    if statement.verb != "alter table" or statement.table in hot_old or statement.table in created:
        return []
    refusals = []
    for action in alter_actions(statement):
        target = re.search(r"\bREFERENCES (\"[^\"]+\"|[A-Za-z_][A-Za-z0-9_$.]*)", action, re.I)
        if target and target[1].strip('"') in hot_old and not re.search(r"\bNOT VALID\b", action, re.I):
            why = f"adds a foreign key from {statement.table} to {target[1].strip(chr(34))} checked at once"
            refusals.append(Refusal(label, "validated-constraint", target[1].strip('"'), why, statement.text))
    return refusals
