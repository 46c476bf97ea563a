import django.db.models.deletion
from django.db import migrations, models

# Per statement, the trigger sums what the written gold pairs add to and take from each
# dataset's and kind's count while serveable (active, outside the quiz), and applies the
# sums in (dataset, kind) order: two statements that change several kinds (a bulk retire,
# a quiz of mixed kinds) lock the counter rows in the same order, never each other's
# first; a 2,000-pair upload writes its counter row once; a write that changes no count
# (Model.save(), a score edited) takes no lock. A count is taken down by UPDATE alone: a
# row deleted with its dataset stays deleted. TRUNCATE empties the counter.
TRIGGERS = """
CREATE FUNCTION annotation_gold_counter_add(of_dataset bigint, of_kind varchar, delta integer)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF delta > 0 THEN
        INSERT INTO annotation_goldcounter (dataset_id, kind, pairs_serveable) VALUES (of_dataset, of_kind, delta)
        ON CONFLICT (dataset_id, kind)
        DO UPDATE SET pairs_serveable = annotation_goldcounter.pairs_serveable + EXCLUDED.pairs_serveable;
    ELSIF delta < 0 THEN
        UPDATE annotation_goldcounter SET pairs_serveable = pairs_serveable + delta
        WHERE dataset_id = of_dataset AND kind = of_kind;
    END IF;
END $$;

CREATE FUNCTION annotation_gold_pair_count() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    change record;
BEGIN
    IF TG_OP = 'INSERT' THEN
        FOR change IN
            SELECT dataset_id, kind, count(*)::integer AS delta FROM new_rows WHERE active AND NOT in_quiz
            GROUP BY dataset_id, kind ORDER BY dataset_id, kind
        LOOP
            PERFORM annotation_gold_counter_add(change.dataset_id, change.kind, change.delta);
        END LOOP;
    ELSIF TG_OP = 'DELETE' THEN
        FOR change IN
            SELECT dataset_id, kind, -count(*)::integer AS delta FROM old_rows WHERE active AND NOT in_quiz
            GROUP BY dataset_id, kind ORDER BY dataset_id, kind
        LOOP
            PERFORM annotation_gold_counter_add(change.dataset_id, change.kind, change.delta);
        END LOOP;
    ELSE
        FOR change IN
            SELECT dataset_id, kind, sum(delta)::integer AS delta FROM (
                SELECT dataset_id, kind, -1 AS delta FROM old_rows WHERE active AND NOT in_quiz
                UNION ALL
                SELECT dataset_id, kind, 1 FROM new_rows WHERE active AND NOT in_quiz
            ) changed
            GROUP BY dataset_id, kind HAVING sum(delta) <> 0 ORDER BY dataset_id, kind
        LOOP
            PERFORM annotation_gold_counter_add(change.dataset_id, change.kind, change.delta);
        END LOOP;
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION annotation_gold_pair_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM annotation_goldcounter;
    RETURN NULL;
END $$;

CREATE TRIGGER annotation_gold_pair_count_insert AFTER INSERT ON annotation_goldpair
REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION annotation_gold_pair_count();

CREATE TRIGGER annotation_gold_pair_count_update AFTER UPDATE ON annotation_goldpair
REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION annotation_gold_pair_count();

CREATE TRIGGER annotation_gold_pair_count_delete AFTER DELETE ON annotation_goldpair
REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION annotation_gold_pair_count();

CREATE TRIGGER annotation_gold_pair_truncate AFTER TRUNCATE ON annotation_goldpair
FOR EACH STATEMENT EXECUTE FUNCTION annotation_gold_pair_truncated();
"""

# The gold pairs stored before the triggers, counted once. Creating the triggers locked
# the gold pair table against writes until the migration commits, so none is missed.
BACKFILL = """
INSERT INTO annotation_goldcounter (dataset_id, kind, pairs_serveable)
SELECT dataset_id, kind, count(*) FROM annotation_goldpair WHERE active AND NOT in_quiz
GROUP BY dataset_id, kind;
"""

DROP_TRIGGERS = """
DROP TRIGGER annotation_gold_pair_truncate ON annotation_goldpair;
DROP TRIGGER annotation_gold_pair_count_delete ON annotation_goldpair;
DROP TRIGGER annotation_gold_pair_count_update ON annotation_goldpair;
DROP TRIGGER annotation_gold_pair_count_insert ON annotation_goldpair;
DROP FUNCTION annotation_gold_pair_truncated();
DROP FUNCTION annotation_gold_pair_count();
DROP FUNCTION annotation_gold_counter_add(bigint, varchar, integer);
"""


def create_triggers(apps, schema_editor):
    """PostgreSQL only: elsewhere the counter stays empty and progress counts gold pairs."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(TRIGGERS)
        schema_editor.execute(BACKFILL)


def drop_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP_TRIGGERS)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0032_slot_rater_first"),
    ]

    operations = [
        migrations.CreateModel(
            name="GoldCounter",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("STS", "caption-caption (STS)"),
                            ("SIS", "image-image (SIS)"),
                            ("SITS", "caption-image (SITS)"),
                        ],
                        max_length=4,
                    ),
                ),
                ("pairs_serveable", models.IntegerField(help_text="Active gold pairs of the kind outside the quiz.")),
                (
                    "dataset",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="annotation.dataset",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("dataset", "kind"), name="gold_counter_unique"),
                    models.CheckConstraint(
                        condition=models.Q(("pairs_serveable__gte", 0)), name="gold_counter_nonnegative"
                    ),
                ],
            },
        ),
        migrations.RunPython(create_triggers, drop_triggers),
    ]
