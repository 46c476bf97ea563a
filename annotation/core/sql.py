"""Hot-path SQL run as server-side prepared statements.

Planning the queue's statements (and the token lookup) costs PostgreSQL several times
more than running them; a prepared statement is planned once per connection and then
reuses a generic plan. Off PostgreSQL, or with DB_PREPARED_STATEMENTS off (needed behind
a transaction-mode pooler, where a session does not outlive a transaction), the same
SQL runs as a plain statement.

A statement may also be ``sent_ahead`` of the next one, in its round trip: a remembered
API token's check (``annotation.people.authentication``), which stops what follows it
when the token no longer stands.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections, transaction

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
    statement, four statements per rated item. Run statements on it with ``execute``:
    a statement ``sent_ahead`` travels with the first one (the driver's cursor has no
    execute wrapper to run it otherwise)."""
    db = connections[DEFAULT_DB_ALIAS]
    if db.vendor != "postgresql" or db.queries_logged or _watched(db):
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
    ``prefix`` (PostgreSQL only) is SQL sent in the same round trip, before it; a
    statement ``sent_ahead`` goes before both. ``then`` (PostgreSQL only): a statement
    sent after it in the same round trip, with the same ``values`` (a name means one value
    in both); the cursor then holds that one's rows only. Raises RefusedAhead when the
    statement sent ahead refused."""
    db = connections[DEFAULT_DB_ALIAS]  # once: each use of the proxy looks it up again
    ahead = _take_ahead(db)
    if ahead is not None and _begun(db):
        _run_alone(db, ahead)
        ahead = None
    if db.vendor != "postgresql" or not settings.DB_PREPARED_STATEMENTS:
        if ahead is not None:
            prefix, values = f"{ahead[0].sql}; {prefix}", {**ahead[1], **values}
        sql, arguments = prefix + statement.sql, values
        if then is not None:
            sql = f"{sql}; {then.sql}"
    else:
        try:
            sql = f"{prefix}EXECUTE {statement.name} ({_prepared(db, cursor, statement)})"
            arguments = [values[p] for p, _ in statement.params]
            if then is not None:
                sql = f"{sql}; EXECUTE {then.name} ({_prepared(db, cursor, then)})"
                arguments += [values[p] for p, _ in then.params]
            if ahead is not None:
                sql = f"EXECUTE {ahead[0].name} ({_prepared(db, cursor, ahead[0])}); {sql}"
                arguments = [ahead[1][p] for p, _ in ahead[0].params] + arguments
        except BaseException:
            if ahead is not None:
                db._sent_ahead = ahead  # not sent: still ahead of the next statement
            raise
    with nullcontext() if ahead is None else _refusal_of(ahead[0]):
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


# --- a statement sent ahead of the next -------------------------------------------------

# The SQLSTATE of ``annotation_refuse_ahead()`` (migration 0036): a statement sent ahead
# calls it to stop the statement behind it.
AHEAD_REFUSED = "CX401"


class RefusedAhead(Exception):
    """The statement sent ahead refused (``annotation_refuse_ahead``): its round trip's
    transaction was rolled back, and nothing behind it ran."""


@contextmanager
def _refusal_of(statement: Statement) -> Iterator[None]:
    """Within: ``statement``'s refusal (the driver's error, or Django's wrapping of it)
    raised as RefusedAhead."""
    try:
        yield
    except Exception as exc:
        if AHEAD_REFUSED in (getattr(exc, "pgcode", None), getattr(exc.__cause__, "pgcode", None)):
            raise RefusedAhead(statement.name) from exc
        raise


@contextmanager
def sent_ahead(statement: Statement, values: Mapping) -> Iterator[None]:
    """Within: ``statement`` (PostgreSQL, which may call ``annotation_refuse_ahead()``)
    runs before the next statement of this thread on the default connection: in the same
    round trip when that one goes through ``execute`` (as one implicit transaction in
    autocommit, so a refusal leaves nothing of it behind), else on its own just before it.
    When nothing ran inside, it runs on leaving (unless by an exception), so the block's
    answer never goes out without it. Raises RefusedAhead when it refused."""
    db = connections[DEFAULT_DB_ALIAS]
    db._sent_ahead = (statement, values)
    db.execute_wrappers.append(_run_ahead)
    try:
        yield
        ahead = _take_ahead(db)
        if ahead is not None:
            _run_alone(db, ahead)
    finally:
        db._sent_ahead = None
        db.execute_wrappers.remove(_run_ahead)


def _take_ahead(db):
    ahead = getattr(db, "_sent_ahead", None)
    if ahead is not None:
        db._sent_ahead = None
    return ahead


def _run_ahead(run, sql, params, many, context):
    """The execute wrapper of ``sent_ahead``: a statement that is not ``execute``'s (an
    ORM query) runs after the statement sent ahead, which runs on its own."""
    db = context["connection"]
    ahead = _take_ahead(db)
    if ahead is not None:
        _run_alone(db, ahead)
    return run(sql, params, many, context)


def _run_alone(db, ahead) -> None:
    """The statement sent ahead, in a round trip of its own; inside a transaction that
    has begun, in a savepoint, so that a refusal leaves the transaction usable (a caller
    may answer after rolling back what it did, a test's transaction goes on)."""
    savepoint = transaction.atomic(using=db.alias) if _begun(db) else nullcontext()
    with _refusal_of(ahead[0]), savepoint, db.cursor() as cursor:
        execute(cursor, *ahead)


def _begun(db) -> bool:
    """Whether the connection is inside a transaction that has sent a statement already.
    In one that has not (an ``atomic`` block's first statement), a refusal aborts nothing
    done before it: RefusedAhead leaves the block, which rolls the transaction back."""
    if not db.in_atomic_block:
        return False
    from psycopg2.extensions import TRANSACTION_STATUS_IDLE  # sent_ahead is PostgreSQL's

    return db.connection.info.transaction_status != TRANSACTION_STATUS_IDLE


def _watched(db) -> bool:
    """Whether an execute wrapper other than ``sent_ahead``'s watches the connection."""
    return any(wrapper is not _run_ahead for wrapper in db.execute_wrappers)
