"""Ids for gold rows taken from the id sequences of the rows they stand in for.

A gold pair is served like any other pair: the pair, slot and rating ids a rater sees
must come from one sequence each, or a gap or range would tell which items are gold. So a
gold pair takes its id from the pairs' sequence, a gold lease from the slots', a gold
rating from the ratings' (and a flag on a gold lease from the flags'). The ordinary rows
keep taking theirs from the same sequences and never collide with a reserved id.
"""

from __future__ import annotations

from django.db import connection, transaction


def ids_reserve(model, count: int) -> list[int]:
    """Reserve ``count`` ids from the id sequence of ``model``'s table, ascending.

    PostgreSQL: ``nextval`` of the column's sequence (identity or serial). SQLite: the
    table's ``sqlite_sequence`` row (tables with AUTOINCREMENT never reuse an id below
    it), raised inside a transaction, which SQLite's write lock serializes."""
    if count < 1:
        return []
    table = model._meta.db_table
    column = model._meta.pk.column
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                # The same SQL in lower case: its text is not mutated.
                "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",  # pragma: no mutate
                [connection.ops.quote_name(table), column, count],
            )
            return sorted(row[0] for row in cursor.fetchall())
    # Below: the embedded mode's path and other databases, which a mutation run on
    # PostgreSQL never reaches (see _reserve_sqlite).
    if connection.vendor == "sqlite":  # pragma: no mutate
        return _reserve_sqlite(table=table, column=column, count=count)  # pragma: no mutate
    raise NotImplementedError(f"reserving ids is not implemented for {connection.vendor}")  # pragma: no mutate


# The embedded mode's path. Mutation testing runs on PostgreSQL, where no test can reach it;
# tests/annotation/serving/test_gold_ids.py runs it when the tests run on SQLite.
def _reserve_sqlite(*, table: str, column: str, count: int) -> list[int]:  # pragma: no mutate block
    quoted_table = connection.ops.quote_name(table)
    quoted_column = connection.ops.quote_name(column)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SELECT COALESCE(MAX({quoted_column}), 0) FROM {quoted_table}")
        highest_row = cursor.fetchone()[0]
        cursor.execute("SELECT seq FROM sqlite_sequence WHERE name = %s", [table])
        found = cursor.fetchone()
        start = max(highest_row, found[0] if found else 0)
        if found:
            cursor.execute("UPDATE sqlite_sequence SET seq = %s WHERE name = %s", [start + count, table])
        else:
            cursor.execute("INSERT INTO sqlite_sequence (name, seq) VALUES (%s, %s)", [table, start + count])
    return list(range(start + 1, start + count + 1))
