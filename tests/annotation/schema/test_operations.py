"""The slot table's indexes swapped CONCURRENTLY (annotation/schema/operations.py, used by
migrations 0032 and 0035) on PostgreSQL: the new index is built before the old one goes,
so the one-rating-per-rater rule holds throughout; the result is the definition Django's
own operations made (as PostgreSQL prints it); a try cut short is finished by the next;
reversed, the old definitions come back. An index added CONCURRENTLY passes the linter on
PostgreSQL, and elsewhere is Django's AddIndex."""

from types import SimpleNamespace

import pytest
from django.db import connection, models
from django.db.migrations.loader import MigrationLoader

from annotation.schema.hot_tables import hot_tables
from annotation.schema.operations import AddIndexConcurrently
from annotation.schema.recording import record, volatile_functions
from annotation.schema.rules import judge
from tests.support.migration_support import migrate_to, migrate_to_latest
from tests.support.planted_migrations import in_memory

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

BEFORE_0032 = [("annotation", "0031_rating_composite_indexes_only")]
BEFORE_0035 = [("annotation", "0034_rater_gold_met")]
AT_0035 = [("annotation", "0035_slot_rater_active_done")]
# As Django's RemoveConstraint/AddConstraint and RemoveIndex/AddIndex made them, in one
# transaction, before these migrations built them concurrently.
LATEST = {
    "slot_one_per_rater_per_pair": "CREATE UNIQUE INDEX slot_one_per_rater_per_pair ON public.annotation_ratingslot "
    "USING btree (rater_id, pair_id) WHERE (rater_id IS NOT NULL)",
    "slot_rater_active_idx": "CREATE INDEX slot_rater_active_idx ON public.annotation_ratingslot USING btree "
    "(rater_id, dataset_id, kind) WHERE ((NOT pair_complete) AND (rater_id IS NOT NULL) AND "
    "((state)::text = 'done'::text))",
}
BEFORE = {
    "slot_one_per_rater_per_pair": "CREATE UNIQUE INDEX slot_one_per_rater_per_pair ON public.annotation_ratingslot "
    "USING btree (pair_id, rater_id) WHERE (rater_id IS NOT NULL)",
    "slot_rater_active_idx": "CREATE INDEX slot_rater_active_idx ON public.annotation_ratingslot USING btree "
    "(rater_id, dataset_id, kind) WHERE ((NOT pair_complete) AND (rater_id IS NOT NULL))",
    "slot_rater_idx": "CREATE INDEX slot_rater_idx ON public.annotation_ratingslot USING btree (rater_id) "
    "WHERE (rater_id IS NOT NULL)",
}


def rater_indexes() -> dict[str, str]:
    """The slot table's indexes whose names start as these migrations' do."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'annotation_ratingslot' "
            "AND (indexname LIKE 'slot_rater%%' OR indexname LIKE 'slot_one_per_rater%%')"
        )
        return dict(cursor.fetchall())


def test_reversed_the_old_ones_are_back_and_the_new_unique_index_is_built_before_the_old_one_goes():
    try:
        migrate_to(BEFORE_0032)
        assert rater_indexes() == BEFORE
        loader = MigrationLoader(connection)
        migration = loader.get_migration("annotation", "0032_slot_rater_first")
        (recorded,) = record(connection, [migration], loader.project_state(BEFORE_0032[0]))
        texts = [statement.text for statement in recorded.statements]
        build = next(i for i, t in enumerate(texts) if t.startswith("CREATE UNIQUE INDEX CONCURRENTLY"))
        drop = texts.index('DROP INDEX CONCURRENTLY IF EXISTS "slot_one_per_rater_per_pair"')
        rename = texts.index(
            'ALTER INDEX IF EXISTS "slot_one_per_rater_per_pair_swap" RENAME TO "slot_one_per_rater_per_pair"'
        )
        assert build < drop < rename
        assert judge(recorded, set(hot_tables()), volatile_functions(connection)) == []
    finally:
        migrate_to_latest()
    assert rater_indexes() == LATEST


def test_a_try_cut_short_is_finished_by_the_next():
    try:
        migrate_to(BEFORE_0035)
        with connection.cursor() as cursor:  # what a CREATE INDEX CONCURRENTLY that failed leaves
            cursor.execute("CREATE INDEX slot_rater_active_idx_swap ON annotation_ratingslot (id)")
            cursor.execute(
                "UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'slot_rater_active_idx_swap'::regclass"
            )
        migrate_to(AT_0035)
        assert rater_indexes() == LATEST
        loader = MigrationLoader(connection)
        (operation,) = loader.get_migration("annotation", "0035_slot_rater_active_done").operations
        before, after = loader.project_state(BEFORE_0035[0]), loader.project_state(AT_0035[0])
        with connection.schema_editor(atomic=False) as editor:  # all of it again, as a retry does
            operation.database_forwards("annotation", editor, before, after)
        assert rater_indexes() == LATEST
    finally:
        migrate_to_latest()


PLANTED_INDEX = models.Index(fields=["priority"], name="planted_priority_idx")


def test_an_index_added_concurrently_passes_the_linter():
    state = MigrationLoader(connection).project_state()
    plant = in_memory([AddIndexConcurrently("ratingslot", PLANTED_INDEX)], atomic=False)
    try:
        (recorded,) = record(connection, [plant], state)
        assert [s.text for s in recorded.statements if s.verb == "create index"] == [
            'CREATE INDEX CONCURRENTLY "planted_priority_idx" ON "annotation_ratingslot" ("priority")'
        ]
        assert judge(recorded, set(hot_tables()), volatile_functions(connection)) == []
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP INDEX IF EXISTS planted_priority_idx")
            cursor.execute("DELETE FROM django_migrations WHERE app = 'annotation' AND name = %s", [plant.name])


def test_elsewhere_the_index_is_added_as_django_adds_it():
    added = []
    editor = SimpleNamespace(
        connection=SimpleNamespace(vendor="sqlite", alias="default"),
        add_index=lambda model, index: added.append((model._meta.db_table, index.name)),
    )
    before = MigrationLoader(None, ignore_no_migrations=True).project_state()
    after = before.clone()
    operation = AddIndexConcurrently("ratingslot", PLANTED_INDEX)
    operation.state_forwards("annotation", after)
    operation.database_forwards("annotation", editor, before, after)
    assert added == [("annotation_ratingslot", "planted_priority_idx")]
