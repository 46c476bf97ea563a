"""Numeric columns through PostgreSQL's binary COPY (annotation.dashboard.pgcopy)."""

import numpy as np
import pytest
from django.db import connection

from annotation.dashboard import pgcopy

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


@pytest.mark.parametrize("block_records", [1, 7, 100_000])
def test_columns_arrive_whole_whatever_the_block_size(monkeypatch, block_records):
    monkeypatch.setattr(pgcopy, "BLOCK_RECORDS", block_records)
    sql = "SELECT g::int8, (g * -3)::int8, (g / 7.0)::float8 FROM generate_series(1, 5000) AS g"
    with connection.cursor() as cursor:
        first, second, third = pgcopy.copy_columns(cursor, sql, "iif")
    expected = np.arange(1, 5001)
    np.testing.assert_array_equal(first, expected)
    np.testing.assert_array_equal(second, -3 * expected)
    np.testing.assert_allclose(third, expected / 7.0, rtol=0, atol=1e-12)
    assert (first.dtype, third.dtype) == (np.int64, np.float64)


def test_no_rows_give_empty_columns():
    with connection.cursor() as cursor:
        columns = pgcopy.copy_columns(cursor, "SELECT 1::int8, 2.0::float8 WHERE false", "if")
    assert [column.shape for column in columns] == [(0,), (0,)]


@pytest.mark.parametrize(
    "sql",
    ["SELECT NULL::int8, 1.0::float8", "SELECT 1::int4, 1.0::float8", "SELECT 1::int8"],
    ids=["null", "four-byte column", "missing column"],
)
def test_rows_not_of_the_asked_shape_are_refused(sql):
    with connection.cursor() as cursor, pytest.raises(pgcopy.CopyColumnsError):
        pgcopy.copy_columns(cursor, sql, "if")
