"""The rating cycle's cursor (annotation.sql.hot_cursor): the driver's own cursor when
nothing watches the queries, and still Django's errors, transaction checks and time
zones; Django's cursor while a query capture or an execute wrapper watches."""

from datetime import UTC, datetime

import pytest
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.backends.utils import CursorWrapper
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext

from annotation.sql import hot_cursor

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


def test_unwatched_statements_use_the_drivers_cursor_and_read_alike(table):
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


def test_the_vendor_read_by_engine_is_the_connections(settings):
    from annotation.sql import default_vendor, use_postgres_sql

    assert default_vendor() == connection.vendor == "postgresql"
    assert use_postgres_sql()
    settings.SQL_PATHS = "portable"
    assert not use_postgres_sql()
