"""No index on the tables every rating writes is redundant: each is written with every
row that changes, so an index whose lookups another index already serves costs every
submit its upkeep (and its WAL) for nothing. Redundant here: a plain (not unique)
index whose columns lead another index, where that one is not partial or holds every
row with a value in the leading column (``col IS NOT NULL``: lookups by value)."""

from __future__ import annotations

import pytest
from django.db import connection

from annotation.models import Pair, Rating, RatingSlot

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

HOT_TABLES = (Rating._meta.db_table, RatingSlot._meta.db_table, Pair._meta.db_table)


def table_indexes(table: str) -> list[dict]:
    """The indexes of ``table``: name, key columns in order, unique, and predicate."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT c.relname, i.indisunique, pg_get_expr(i.indpred, i.indrelid),
                   ARRAY(SELECT a.attname FROM unnest(i.indkey) WITH ORDINALITY k(attnum, n)
                         JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
                         ORDER BY k.n),
                   i.indnkeyatts, i.indexprs IS NOT NULL
            FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
            WHERE i.indrelid = %s::regclass
            """,
            [table],
        )
        return [
            {"name": name, "unique": unique, "predicate": predicate, "columns": columns[:n_keys]}
            for name, unique, predicate, columns, n_keys, has_expressions in cursor.fetchall()
            if not has_expressions  # an expression index serves its expression's lookups only
        ]


def redundant_indexes(table: str) -> list[tuple[str, str]]:
    """(redundant index, the index that serves its lookups) pairs of ``table``."""
    indexes = table_indexes(table)
    found = []
    for index in indexes:
        if index["unique"] or index["predicate"] is not None:
            continue
        width = len(index["columns"])
        for other in indexes:
            if other is index or other["columns"][:width] != index["columns"]:
                continue
            if other["predicate"] in (None, f"({index['columns'][0]} IS NOT NULL)"):
                found.append((index["name"], other["name"]))
                break
    return found


@pytest.mark.parametrize("table", HOT_TABLES)
def test_no_redundant_index_on_the_tables_every_rating_writes(table):
    assert redundant_indexes(table) == []


def test_a_redundant_index_is_found():
    """The check finds each kind it names: one whose columns lead a composite index, and
    one that a partial index of the values serves."""
    table = Rating._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE INDEX test_rating_pair_only ON "{table}" (pair_id)')
        cursor.execute(f'CREATE INDEX test_rating_exclusion_all ON "{table}" (exclusion_id)')
        cursor.execute(f'CREATE INDEX test_rating_score ON "{table}" (score)')  # leads nothing: kept
    found = dict(redundant_indexes(table))
    assert found == {
        "test_rating_pair_only": "rating_one_per_rater_per_pair",
        "test_rating_exclusion_all": "rating_exclusion_idx",
    }
