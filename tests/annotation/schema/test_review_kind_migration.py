"""Migration 0042 on PostgreSQL: the pairs' rule that items match their kind takes the
review kind (REV) through SwapCheckConstraint (added NOT VALID beside the old rule,
validated apart, the old one dropped, the new one renamed: the table is never without a
rule, and the linter finds nothing to refuse), REV's uniqueness through a unique index
built CONCURRENTLY; reversed, the old rule comes back and the index goes."""

import pytest
from django.db import connection
from django.db.migrations.loader import MigrationLoader

from annotation.schema.hot_tables import hot_tables
from annotation.schema.recording import record, volatile_functions
from annotation.schema.rules import judge
from tests.support.migration_support import migrate_to, migrate_to_latest

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

BEFORE_0042 = [("annotation", "0041_review_failures")]


def pair_rules() -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE conrelid = 'annotation_pair'::regclass AND contype = 'c' AND conname LIKE 'pair_items%%'"
        )
        return dict(cursor.fetchall())


def review_index() -> str | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'pair_rev_unique'")
        row = cursor.fetchone()
    return row[0] if row else None


def test_the_pairs_rule_takes_reviews_validated_apart_and_comes_back_reversed():
    latest_rules, latest_index = pair_rules(), review_index()
    assert list(latest_rules) == ["pair_items_match_kind"] and "'REV'" in latest_rules["pair_items_match_kind"]
    assert "NOT VALID" not in latest_rules["pair_items_match_kind"]
    assert latest_index.startswith("CREATE UNIQUE INDEX pair_rev_unique") and "'REV'" in latest_index
    try:
        migrate_to(BEFORE_0042)
        before = pair_rules()
        assert list(before) == ["pair_items_match_kind"] and "REV" not in before["pair_items_match_kind"]
        assert review_index() is None
        loader = MigrationLoader(connection)
        migration = loader.get_migration("annotation", "0042_pair_review_kind")
        (recorded,) = record(connection, [migration], loader.project_state(BEFORE_0042[0]))
        texts = [statement.text for statement in recorded.statements]
        add = next(i for i, t in enumerate(texts) if '"pair_items_match_kind_swap" CHECK' in t)
        assert texts[add].endswith("NOT VALID")
        validate = next(i for i, t in enumerate(texts) if 'VALIDATE CONSTRAINT "pair_items_match_kind_swap"' in t)
        drop = next(i for i, t in enumerate(texts) if 'DROP CONSTRAINT IF EXISTS "pair_items_match_kind"' in t)
        rename = next(i for i, t in enumerate(texts) if "RENAME CONSTRAINT" in t)
        assert add < validate < drop < rename
        assert any(t.startswith("CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS") for t in texts)
        assert judge(recorded, set(hot_tables()), volatile_functions(connection)) == []
    finally:
        migrate_to_latest()
    assert pair_rules() == latest_rules and review_index() == latest_index
