"""Migration 0037 drops ``annotation_refuse_ahead()``, which only the remembered token's
check (deleted) called; migrated back to 0036, the function is there again exactly as
0036 made it, so a rollback of the code finds the schema it expects."""

import pytest
from django.db import connection

from tests.support.migration_support import migrate_to, migrate_to_latest

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

BEFORE_FUNCTION = [("annotation", "0035_slot_rater_active_done")]
WITH_FUNCTION = [("annotation", "0036_token_refused_function")]
WITHOUT_FUNCTION = [("annotation", "0037_drop_token_refused_function")]


def function_definition() -> str | None:
    """``annotation_refuse_ahead()``'s definition as PostgreSQL prints it, or None."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_get_functiondef(p.oid) FROM pg_proc p WHERE p.proname = 'annotation_refuse_ahead'")
        row = cursor.fetchone()
    return None if row is None else row[0]


def test_the_function_goes_and_comes_back_as_0036_made_it():
    try:
        migrate_to(BEFORE_FUNCTION)
        migrate_to(WITH_FUNCTION)
        made = function_definition()  # as 0036 makes it
        migrate_to(WITHOUT_FUNCTION)
        assert function_definition() is None
        migrate_to(WITH_FUNCTION)  # 0037 reversed
        assert function_definition() == made
    finally:
        migrate_to_latest()
    assert function_definition() is None
    assert made is not None and "ERRCODE = 'CX401'" in made
