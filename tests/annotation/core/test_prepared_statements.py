"""The hot path's prepared statements (annotation/core/sql.py): planned once per connection."""

import uuid

import pytest
from django.db import connection

from annotation.core.sql import Statement, execute

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

# A name of its own per run: a prepared statement outlives the test's transaction, the
# setting made with its PREPARE does not.
STATEMENT = Statement(
    f"test_generic_plans_{uuid.uuid4().hex}",
    "SELECT count(*) FROM annotation_dataset WHERE name = %(name)s",
    (("name", "text"),),
)


def plans(name: str) -> tuple[int, int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = %s", [name])
        return cursor.fetchone()


def test_a_prepared_statement_keeps_its_generic_plan_from_the_first_run(settings):
    # Without the setting PostgreSQL plans the first five runs for their values, then
    # compares: (2, 5) after seven runs.
    settings.DB_PREPARED_STATEMENTS = True
    with connection.cursor() as cursor:
        for name in ["a", "b", "c", "d", "e", "f", "g"]:
            execute(cursor, STATEMENT, {"name": name})
            assert cursor.fetchone() == (0,)
    assert plans(STATEMENT.name) == (7, 0)
