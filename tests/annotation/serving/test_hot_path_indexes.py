"""No index on the tables every rating writes is redundant: each is written with every
row that changes, so an index whose lookups another index already serves costs every
submit its upkeep (and its WAL) for nothing. Redundant here: an index that is not
unique whose columns lead another index that holds every row it holds: one with no
predicate, the same predicate, or (for an index without one) ``col IS NOT NULL`` on the
leading column, which lookups by value imply."""

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
        if index["unique"]:
            continue
        width = len(index["columns"])
        covering_predicates = {None, index["predicate"]}
        if index["predicate"] is None:
            covering_predicates.add(f"({index['columns'][0]} IS NOT NULL)")
        for other in indexes:
            if other is index or other["columns"][:width] != index["columns"]:
                continue
            if other["predicate"] in covering_predicates:
                found.append((index["name"], other["name"]))
                break
    return found


@pytest.mark.parametrize("table", HOT_TABLES)
def test_no_redundant_index_on_the_tables_every_rating_writes(table):
    assert redundant_indexes(table) == []


def test_a_redundant_index_is_found():
    """The check finds each kind it names: one whose columns lead a composite index, one
    that a partial index of the values serves, and a partial one whose columns lead an
    index with the same predicate (slot_rater_idx, before migration 0032)."""
    ratings, slots = Rating._meta.db_table, RatingSlot._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE INDEX test_rating_pair_only ON "{ratings}" (pair_id)')
        cursor.execute(f'CREATE INDEX test_rating_exclusion_all ON "{ratings}" (exclusion_id)')
        cursor.execute(f'CREATE INDEX test_rating_score ON "{ratings}" (score)')  # leads nothing: kept
        cursor.execute(f'CREATE INDEX test_slot_rater ON "{slots}" (rater_id) WHERE rater_id IS NOT NULL')
        cursor.execute(f'CREATE INDEX test_slot_kind ON "{slots}" (kind) WHERE rater_id IS NOT NULL')  # kept
    assert dict(redundant_indexes(ratings)) == {
        "test_rating_pair_only": "rating_one_per_rater_per_pair",
        "test_rating_exclusion_all": "rating_exclusion_idx",
        "rating_exclusion_idx": "test_rating_exclusion_all",  # each holds what the other serves
    }
    assert dict(redundant_indexes(slots)) == {"test_slot_rater": "slot_one_per_rater_per_pair"}
