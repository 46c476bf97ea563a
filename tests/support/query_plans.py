"""A prepared statement's generic plan and the nodes of a plan, for the query plan tests."""

import json

from django.db import connection, transaction


def nodes(plan: dict):
    yield plan
    for child in plan.get("Plans", []):
        yield from nodes(child)


def generic_plan(statement, values: dict) -> dict:
    """EXPLAIN (ANALYZE, BUFFERS) of ``statement`` run once through its generic plan (the
    setting lasts the transaction: the session's stays as the app's statements set it)."""
    types = ", ".join(sql_type for _, sql_type in statement.params)
    placeholders = ", ".join(["%s"] * len(statement.params))
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        cursor.execute(f"PREPARE plan_of_{statement.name} ({types}) AS {statement.positional()}")
        try:
            cursor.execute(
                f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE plan_of_{statement.name} ({placeholders})",
                [values[name] for name, _ in statement.params],
            )
            (plan,) = cursor.fetchone()
        finally:
            cursor.execute(f"DEALLOCATE plan_of_{statement.name}")
    return (json.loads(plan) if isinstance(plan, str) else plan)[0]
