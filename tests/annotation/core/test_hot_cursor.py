"""The rating cycle's cursor (annotation.core.sql.hot_cursor): the driver's own cursor when
nothing watches the queries, and still Django's health check, errors, transaction
checks and time zones; Django's cursor while a query capture or an execute wrapper
watches."""

from datetime import UTC, datetime

import pytest
from django.db import DEFAULT_DB_ALIAS, DatabaseError, IntegrityError, connection, connections, transaction
from django.db.backends.utils import CursorWrapper
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext

from annotation.core import sql
from annotation.core.sql import default_vendor, hot_cursor, use_postgres_sql

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _postgres_only():
    if connection.vendor != "postgresql":
        pytest.skip("the driver's cursor is psycopg2's (PostgreSQL)")


@pytest.fixture
def table():
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMP TABLE hot_cursor_t (id int PRIMARY KEY, at timestamptz)")
    yield "hot_cursor_t"
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE IF EXISTS hot_cursor_t")


def test_unwatched_statements_use_the_drivers_cursor_and_read_timestamps_alike(table):
    at = datetime(2026, 3, 2, 12, 30, 5, 123456, tzinfo=UTC)
    with hot_cursor() as cursor:
        assert not isinstance(cursor, CursorWrapper)
        cursor.execute(f"INSERT INTO {table} VALUES (1, %s) RETURNING at", [at])
        hot = cursor.fetchone()[0]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT at FROM {table}")
        django = cursor.fetchone()[0]
    assert hot == django == at
    assert hot.tzinfo == django.tzinfo == UTC


def test_a_unique_violation_is_djangos_integrity_error(table):
    with hot_cursor() as cursor:
        cursor.execute(f"INSERT INTO {table} VALUES (1, now())")
    with pytest.raises(IntegrityError), transaction.atomic(), hot_cursor() as cursor:
        cursor.execute(f"INSERT INTO {table} VALUES (1, now())")


def test_a_failed_atomic_block_is_refused_before_anything_is_sent(table):
    with transaction.atomic():
        try:
            with transaction.atomic(savepoint=False), hot_cursor() as cursor:
                cursor.execute("SELECT 1 / 0")
        except DatabaseError:
            pass
        with pytest.raises(TransactionManagementError), hot_cursor() as cursor:
            cursor.execute("SELECT 1")


def test_a_query_capture_and_an_execute_wrapper_see_the_statements(table):
    with CaptureQueriesContext(connection) as captured, hot_cursor() as cursor:
        assert isinstance(cursor, CursorWrapper)
        cursor.execute(f"SELECT count(*) FROM {table}")
    assert [q["sql"] for q in captured.captured_queries] == [f"SELECT count(*) FROM {table}"]
    seen = []

    def wrapper(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper), hot_cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {table}")
    assert seen == [f"SELECT count(*) FROM {table}"]


def test_the_vendor_is_the_connections_and_known_by_engine(settings, monkeypatch):
    assert default_vendor() == connection.vendor == "postgresql"
    assert use_postgres_sql()
    settings.SQL_PATHS = "portable"
    assert not use_postgres_sql()
    # Another ENGINE setting is another vendor, read from its connection once.
    monkeypatch.setitem(connections.settings[DEFAULT_DB_ALIAS], "ENGINE", "django.db.backends.sqlite3")
    monkeypatch.setitem(sql._VENDORS, "django.db.backends.sqlite3", "sqlite")
    assert default_vendor() == "sqlite"
    assert not use_postgres_sql()


@pytest.mark.django_db(transaction=True)
def test_a_connection_that_fails_its_health_check_is_replaced():
    with hot_cursor() as cursor:
        cursor.execute("SELECT 1")
    dead = connection.connection
    dead.close()  # as a database restart leaves it: the object is there, the session gone
    connection.health_check_enabled, connection.health_check_done = True, False
    try:
        with hot_cursor() as cursor:
            cursor.execute("SELECT 2")
            assert cursor.fetchone() == (2,)
        assert connection.connection is not dead
    finally:
        connection.health_check_enabled = False
