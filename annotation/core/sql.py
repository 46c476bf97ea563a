"""Hot-path SQL run as server-side prepared statements.

Planning the queue's statements (and the token lookup) costs PostgreSQL several times
more than running them; a prepared statement is planned once per connection and then
reuses a generic plan. Off PostgreSQL, or with DB_PREPARED_STATEMENTS off (needed behind
a transaction-mode pooler, where a session does not outlive a transaction), the same
SQL runs as a plain statement.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections

# A prepared statement is planned for its first five runs with their values; then
# PostgreSQL compares a generic plan with those and, for every statement here (six plans
# per connection, as pg_stat_statements counted them in bench-queue), keeps the generic
# one. The five are wasted, and not cheaply: the claim takes 12 ms to plan and the
# progress 8, each a hundred times their run. Every connection pays them again, and a
# connection lives CONN_MAX_AGE: a server's threads reconnecting at once planned 2-3 s
# of PostgreSQL CPU into one minute. Set with every PREPARE, a few a connection (a
# session setting: a transaction that aborts undoes it, and until the next PREPARE the
# statements then plan as before: slower, never wrong). It touches the session's cached
# plans only: these statements' and the tally triggers' (PL/pgSQL, key lookups); the
# ORM's statements are planned each time (tests/annotation/core/test_prepared_statements.py).
GENERIC_PLANS = "SET plan_cache_mode = force_generic_plan; "


# The default database's vendor by its ENGINE setting: ``connection.vendor`` reaches the
# connection through a context-local lookup each time, several times per rated item.
_VENDORS: dict[str, str] = {}


def default_vendor() -> str:
    """The default connection's ``vendor`` ("postgresql", "sqlite" ...)."""
    engine = connections.settings[DEFAULT_DB_ALIAS]["ENGINE"]
    vendor = _VENDORS.get(engine)
    if vendor is None:
        vendor = _VENDORS[engine] = connections[DEFAULT_DB_ALIAS].vendor
    return vendor


def use_postgres_sql() -> bool:
    """The one switch of the queue, gold serving and exclusion: their single-statement
    PostgreSQL paths, or (off PostgreSQL, or with ``SQL_PATHS=portable``) their ORM paths."""
    return default_vendor() == "postgresql" and settings.SQL_PATHS == "postgres"


@dataclass(frozen=True)
class Statement:
    """SQL with ``%(name)s`` parameters; ``params`` lists them in order with their SQL
    types (the types of the prepared statement's ``$1 .. $n``)."""

    name: str
    sql: str
    params: tuple[tuple[str, str], ...]

    def positional(self) -> str:
        sql = self.sql
        for number, (param, _) in enumerate(self.params, start=1):
            sql = sql.replace(f"%({param})s", f"${number}")
        if "%(" in sql:
            raise ValueError(f"{self.name}: a parameter is missing from params")
        return sql


@contextmanager
def hot_cursor() -> Iterator:
    """A cursor of the default connection for the rating cycle's statements: on PostgreSQL
    while nothing watches the connection's queries, the driver's own, after Django's
    connection health check and its check for a failed ``atomic`` block and inside its
    translation of errors (an IntegrityError is still Django's); else Django's cursor (a
    query log: DEBUG or a test's query capture; an execute wrapper). Django's cursor wraps
    every statement in several layers of calls: about 35 us of the web process's CPU a
    statement, four statements per rated item."""
    db = connections[DEFAULT_DB_ALIAS]
    if db.vendor != "postgresql" or db.queries_logged or db.execute_wrappers:
        with db.cursor() as cursor:
            yield cursor
        return
    # As Django's cursor does first: a connection that fails its health check (once a
    # request, with CONN_HEALTH_CHECKS) is replaced. (Its thread check cannot fail here:
    # ``connections`` gives each thread its own.)
    db.close_if_health_check_failed()
    db.ensure_connection()
    db.validate_no_broken_transaction()
    # create_cursor: the driver's cursor as Django's cursor holds it (its time zones).
    with db.wrap_database_errors, db.create_cursor() as cursor:
        yield cursor


def execute(cursor, statement: Statement, values: Mapping, *, prefix: str = "", then: Statement | None = None) -> None:
    """Run ``statement`` with ``values`` on ``cursor`` (of the default connection).
    ``prefix`` (PostgreSQL only) is SQL sent in the same round trip, before it. ``then``
    (PostgreSQL only): a statement sent after it in the same round trip, with the same
    ``values`` (a name means one value in both); the cursor then holds that one's rows
    only."""
    db = connections[DEFAULT_DB_ALIAS]  # once: each use of the proxy looks it up again
    if db.vendor != "postgresql" or not settings.DB_PREPARED_STATEMENTS:
        sql, arguments = prefix + statement.sql, values
        if then is not None:
            sql = f"{sql}; {then.sql}"
    else:
        sql = f"{prefix}EXECUTE {statement.name} ({_prepared(db, cursor, statement)})"
        arguments = [values[p] for p, _ in statement.params]
        if then is not None:
            sql = f"{sql}; EXECUTE {then.name} ({_prepared(db, cursor, then)})"
            arguments += [values[p] for p, _ in then.params]
    cursor.execute(sql, arguments)


def _prepared(db, cursor, statement: Statement) -> str:
    """Prepare ``statement`` on the connection unless it was; its EXECUTE placeholders."""
    # Prepared statements belong to the server session and PREPARE is not undone by a
    # rollback, so remembering them per client connection object is exact.
    raw = db.connection
    known = getattr(db, "_prepared_statements", None)
    if known is None or known[0] is not raw:
        known = (raw, set())
        db._prepared_statements = known
    if statement.name not in known[1]:
        types = ", ".join(sql_type for _, sql_type in statement.params)
        cursor.execute(f"{GENERIC_PLANS}PREPARE {statement.name} ({types}) AS {statement.positional()}")
        known[1].add(statement.name)
    return ", ".join(["%s"] * len(statement.params))
