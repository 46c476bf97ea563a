"""The migration linter's rules on recorded statements, without a database: each rule
refuses what rewrites or long-locks a hot table, and lets the safe form of the same change
pass (a table the migration created, a table that is not hot, CONCURRENTLY, NOT VALID)."""

import pytest

from annotation.schema.excused import Excuse
from annotation.schema.lint import verdict
from annotation.schema.rules import RULES, RecordedMigration, judge
from annotation.schema.statements import read, split

HOT = {"annotation_rating", "annotation_ratingslot", "annotation_pair"}
VOLATILE = {"clock_timestamp", "random", "gen_random_uuid", "nextval"}


def recorded(*sql: str, atomic: bool = True, label: str = "annotation.0999_planted", defaults=()) -> RecordedMigration:
    statements = [read(text) for chunk in sql for text in split(chunk)]
    return RecordedMigration(label, atomic, statements, list(defaults))


def rules_of(migration: RecordedMigration) -> list[str]:
    return [refusal.rule for refusal in judge(migration, HOT, VOLATILE)]


@pytest.mark.parametrize(
    ("sql", "rules"),
    [
        (
            "ALTER TABLE annotation_rating ADD COLUMN planted timestamptz DEFAULT clock_timestamp() NOT NULL",
            ["volatile-default"],
        ),
        (
            'ALTER TABLE "annotation_rating" ADD COLUMN "planted" uuid DEFAULT (gen_random_uuid()) NOT NULL',
            ["volatile-default"],
        ),
        (
            "ALTER TABLE public.annotation_rating ADD planted double precision DEFAULT pg_catalog.random()",
            ["volatile-default"],
        ),
        ("ALTER TABLE annotation_rating ADD COLUMN planted bigserial", ["volatile-default"]),
        (
            "ALTER TABLE annotation_rating ADD COLUMN planted int GENERATED ALWAYS AS (score * 2) STORED",
            ["volatile-default"],
        ),
        # now() is stable, a constant is a constant: PostgreSQL 11+ adds such a column without a rewrite.
        ("ALTER TABLE annotation_rating ADD COLUMN planted timestamptz DEFAULT now() NOT NULL", []),
        ("ALTER TABLE annotation_rating ADD COLUMN planted text DEFAULT 'random()' NOT NULL", []),
        ("ALTER TABLE annotation_rating ADD COLUMN planted integer NULL", []),
        ("ALTER TABLE annotation_rating ADD COLUMN planted integer NOT NULL", ["not-null-without-default"]),
        ('ALTER TABLE "annotation_rating" ALTER COLUMN "score" TYPE numeric(4, 2)', ["type-change"]),
        ('ALTER TABLE "annotation_rating" ALTER COLUMN "score" SET DATA TYPE real', ["type-change"]),
        ('ALTER TABLE "annotation_rating" ALTER COLUMN "score" SET NOT NULL', ["set-not-null"]),
        ('ALTER TABLE "annotation_rating" ALTER COLUMN "score" DROP NOT NULL', []),
        ('ALTER TABLE "annotation_rating" ALTER COLUMN "score" SET DEFAULT random()', []),
        ('ALTER TABLE "annotation_rating" ADD CONSTRAINT "planted" CHECK ("score" >= 0)', ["validated-constraint"]),
        ('ALTER TABLE "annotation_rating" ADD CONSTRAINT "planted" CHECK ("score" >= 0) NOT VALID', []),
        ('ALTER TABLE "annotation_rating" VALIDATE CONSTRAINT "planted"', []),
        (
            'ALTER TABLE "annotation_rating" ADD CONSTRAINT "planted" UNIQUE ("rater_id", "score")',
            ["validated-constraint"],
        ),
        ('ALTER TABLE "annotation_rating" ADD CONSTRAINT "planted" UNIQUE USING INDEX "planted_idx"', []),
        (
            'ALTER TABLE "annotation_rating" ADD CONSTRAINT "planted_fk" FOREIGN KEY ("pair_id") '
            'REFERENCES "annotation_pair" ("id") DEFERRABLE INITIALLY DEFERRED',
            ["validated-constraint"],
        ),
        (
            'ALTER TABLE "annotation_rating" ADD COLUMN "other_id" bigint NULL REFERENCES "annotation_pair" ("id")',
            ["validated-constraint"],
        ),
        ('ALTER TABLE "annotation_rating" DROP COLUMN "score" CASCADE', []),
        ('ALTER TABLE "annotation_rating" DROP CONSTRAINT "planted"', []),
        ('ALTER TABLE "annotation_rating" SET TABLESPACE fast', ["table-rewrite"]),
        ('CREATE INDEX "planted_idx" ON "annotation_ratingslot" ("rater_id")', ["index-build"]),
        (
            'CREATE UNIQUE INDEX "planted_idx" ON "annotation_ratingslot" ("rater_id") WHERE "rater_id" IS NOT NULL',
            ["index-build"],
        ),
        ('CREATE INDEX CONCURRENTLY "planted_idx" ON "annotation_ratingslot" ("rater_id")', []),
        ('CREATE INDEX "planted_idx" ON "annotation_flag" ("rater_id")', []),
        ('DROP INDEX IF EXISTS "planted_idx"', []),
        ("UPDATE annotation_ratingslot SET priority = 1", ["whole-table-write"]),
        (
            "UPDATE annotation_ratingslot s SET dataset_id = p.dataset_id FROM annotation_pair p "
            "WHERE p.id = s.pair_id",
            ["whole-table-write"],
        ),
        ("UPDATE annotation_ratingslot SET priority = 1 WHERE id = 7", []),
        ("DELETE FROM annotation_rating", ["whole-table-write"]),
        ("DELETE FROM annotation_rating WHERE id = 7", []),
        ("VACUUM FULL annotation_rating", ["table-rewrite"]),
        ("CLUSTER annotation_rating USING rating_idx", ["table-rewrite"]),
        ("REINDEX TABLE annotation_rating", ["table-rewrite"]),
        ("LOCK TABLE annotation_rating IN SHARE MODE", ["explicit-lock"]),
        ("CREATE TRIGGER planted AFTER INSERT ON annotation_rating FOR EACH ROW EXECUTE FUNCTION f()", []),
    ],
)
def test_each_rule_refuses_its_statement_on_a_hot_table(sql, rules):
    assert rules_of(recorded(sql)) == rules


def test_the_same_statements_pass_on_a_table_that_is_not_hot():
    sql = (
        "ALTER TABLE annotation_flag ADD COLUMN planted timestamptz DEFAULT clock_timestamp() NOT NULL; "
        'CREATE INDEX "planted_idx" ON "annotation_flag" ("rater_id"); UPDATE annotation_flag SET reason = 1'
    )
    assert rules_of(recorded(sql)) == []


def test_a_table_the_migration_creates_is_new_and_empty():
    migration = recorded(
        'CREATE TABLE "annotation_rating" ("id" bigint NOT NULL PRIMARY KEY)',
        'ALTER TABLE "annotation_rating" ADD COLUMN "score" integer NOT NULL',
        'CREATE INDEX "planted_idx" ON "annotation_rating" ("score")',
        'ALTER TABLE "annotation_rating" ADD CONSTRAINT "fk" FOREIGN KEY ("id") REFERENCES "annotation_pair" ("id")',
    )
    assert rules_of(migration) == []


def test_a_foreign_key_to_a_hot_table_from_an_old_table_waits_on_both():
    migration = recorded(
        'ALTER TABLE "annotation_flag" ADD CONSTRAINT "fk" FOREIGN KEY ("pair_id") REFERENCES "annotation_pair" ("id")'
    )
    (refusal,) = judge(migration, HOT, VOLATILE)
    assert (refusal.rule, refusal.table) == ("validated-constraint", "annotation_pair")
    assert rules_of(recorded(migration.statements[0].text + " NOT VALID")) == []


def test_a_backfill_after_a_lock_on_a_hot_table_in_one_transaction():
    lock_then_backfill = (
        "CREATE TRIGGER tally AFTER INSERT ON annotation_rating FOR EACH ROW EXECUTE FUNCTION f()",
        "INSERT INTO annotation_ratertally (rater_id, ratings) "
        "SELECT rater_id, count(*) FROM annotation_rating GROUP BY 1",
    )
    assert rules_of(recorded(*lock_then_backfill)) == ["backfill-under-lock"]
    assert rules_of(recorded(*lock_then_backfill, atomic=False)) == []  # the trigger's lock ended with its statement
    assert rules_of(recorded(*reversed(lock_then_backfill))) == []  # the backfill ran before the lock
    assert rules_of(recorded(lock_then_backfill[0], "INSERT INTO annotation_ratertally VALUES (1, 2)")) == []


def test_a_python_callable_default_on_a_hot_table():
    refused = recorded(defaults=[("annotation_rating", "planted", "uuid.uuid4")])
    assert [(r.rule, r.why) for r in judge(refused, HOT, VOLATILE)] == [
        ("callable-default", "adds annotation_rating.planted with default=uuid.uuid4")
    ]
    assert rules_of(recorded(defaults=[("annotation_flag", "planted", "uuid.uuid4")])) == []


def test_dollar_quoted_bodies_stay_whole_and_comments_go():
    sql = (
        "-- a comment\nCREATE FUNCTION f() RETURNS trigger AS $$ BEGIN UPDATE annotation_rating SET x = 1; END $$ "
        "LANGUAGE plpgsql;\nSELECT 1;"
    )
    statements = split(sql)
    assert len(statements) == 2 and statements[0].startswith("CREATE FUNCTION") and statements[1] == "SELECT 1"
    assert rules_of(recorded(sql)) == []


def test_every_rule_has_a_description():
    codes = {refusal.rule for refusal in judge(recorded("VACUUM FULL annotation_rating"), HOT, VOLATILE)}
    assert codes <= set(RULES)


class TestVerdict:
    def refusing(self, label: str = "annotation.0999_planted") -> list[RecordedMigration]:
        return [recorded('CREATE INDEX "i" ON "annotation_rating" ("score")', label=label)]

    def test_a_refused_migration_fails_it_naming_the_migration_and_the_rule(self):
        result = verdict(self.refusing(), HOT, VOLATILE, excused={})
        assert not result.passed
        assert [f"{r.migration} {r.rule}" for r in result.refused] == ["annotation.0999_planted index-build"]

    def test_an_excuse_covers_exactly_the_rules_it_lists(self):
        covered = verdict(
            self.refusing(),
            HOT,
            VOLATILE,
            excused={"annotation.0999_planted": Excuse(frozenset({"index-build"}), "why")},
        )
        assert covered.passed and covered.excused == {"annotation.0999_planted": frozenset({"index-build"})}
        other_rule = verdict(
            self.refusing(),
            HOT,
            VOLATILE,
            excused={"annotation.0999_planted": Excuse(frozenset({"type-change"}), "why")},
        )
        assert [r.rule for r in other_rule.refused] == ["index-build"]
        assert other_rule.stale == ["annotation.0999_planted: excused for type-change, which it no longer breaks"]

    def test_an_excuse_for_a_migration_that_does_not_exist_is_stale(self):
        result = verdict([], HOT, VOLATILE, excused={"annotation.0001_gone": Excuse(frozenset({"index-build"}), "why")})
        assert result.stale == ["annotation.0001_gone: excused, but no such migration was recorded"]
