"""A migration planted after the latest, recorded on the test database (PostgreSQL, inside
the test's transaction: rolled back with it) and judged as the linter judges: a column
added to the rating table with a volatile default is refused, named with its reason; the
same column with a constant default, or on a table that is not hot, passes."""

import uuid

import pytest
from django.db import connection, models
from django.db.migrations import AddField, RunSQL
from django.db.migrations.loader import MigrationLoader

from annotation.schema.hot_tables import HOT_MODELS, hot_tables
from annotation.schema.lint import verdict
from annotation.schema.recording import record, volatile_functions
from tests.support.planted_migrations import PLANT_NAME, in_memory

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

LABEL = f"annotation.{PLANT_NAME}"


def judged(*operations):
    """The verdict on a plant of ``operations``, no excuse applying."""
    state = MigrationLoader(connection).project_state()
    recorded = record(connection, [in_memory(list(operations))], state)
    return verdict(recorded, set(hot_tables()), volatile_functions(connection), excused={})


def clock_timestamp():
    return models.Func(function="clock_timestamp", output_field=models.DateTimeField())


def test_a_volatile_database_default_on_the_rating_table_is_refused():
    result = judged(AddField("rating", "planted_at", models.DateTimeField(db_default=clock_timestamp())))
    assert not result.passed
    assert [(r.migration, r.rule, r.why) for r in result.refused] == [
        (LABEL, "volatile-default", "adds annotation_rating.planted_at with the volatile default clock_timestamp()")
    ]


def test_a_volatile_default_added_in_raw_sql_is_refused():
    result = judged(RunSQL("ALTER TABLE annotation_rating ADD COLUMN planted_noise double precision DEFAULT random()"))
    assert [(r.migration, r.rule, r.table) for r in result.refused] == [
        (LABEL, "volatile-default", "annotation_rating")
    ]


def test_a_python_callable_default_is_refused():
    result = judged(AddField("rating", "planted_id", models.UUIDField(default=uuid.uuid4)))
    assert [(r.rule, r.why) for r in result.refused] == [
        ("callable-default", "adds annotation_rating.planted_id with default=uuid.uuid4")
    ]


def test_a_constant_or_stable_default_passes():
    constant = models.IntegerField(db_default=models.Value(0))
    stable = models.DateTimeField(db_default=models.functions.Now())
    assert judged(AddField("rating", "planted", constant), AddField("rating", "planted_at", stable)).passed


def test_the_same_volatile_default_on_a_table_that_is_not_hot_passes():
    assert "annotation.Flag" not in HOT_MODELS
    assert judged(AddField("flag", "planted_at", models.DateTimeField(db_default=clock_timestamp()))).passed


def test_an_index_built_in_place_on_the_slot_table_is_refused():
    in_place = judged(RunSQL('CREATE INDEX "planted_idx" ON "annotation_ratingslot" ("priority")'))
    assert [r.rule for r in in_place.refused] == ["index-build"]
