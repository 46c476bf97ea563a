import django.db.models.deletion
from django.db import migrations, models

# Each trigger adds a gold pair to its dataset's and kind's count while it is serveable
# (active, outside the quiz) or takes it away; an update fires only when one of the
# columns the count reads changed (Model.save() writes every column). A count is taken
# down by UPDATE alone: a row deleted with its dataset stays deleted.
TRIGGERS = """
CREATE FUNCTION annotation_gold_counter_add(of_dataset bigint, of_kind varchar, delta integer)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF delta > 0 THEN
        INSERT INTO annotation_goldcounter (dataset_id, kind, pairs_serveable) VALUES (of_dataset, of_kind, delta)
        ON CONFLICT (dataset_id, kind)
        DO UPDATE SET pairs_serveable = annotation_goldcounter.pairs_serveable + EXCLUDED.pairs_serveable;
    ELSE
        UPDATE annotation_goldcounter SET pairs_serveable = pairs_serveable + delta
        WHERE dataset_id = of_dataset AND kind = of_kind;
    END IF;
END $$;

CREATE FUNCTION annotation_gold_pair_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' AND OLD.active AND NOT OLD.in_quiz THEN
        PERFORM annotation_gold_counter_add(OLD.dataset_id, OLD.kind, -1);
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.active AND NOT NEW.in_quiz THEN
        PERFORM annotation_gold_counter_add(NEW.dataset_id, NEW.kind, 1);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER annotation_gold_pair_count AFTER INSERT OR DELETE
ON annotation_goldpair FOR EACH ROW EXECUTE FUNCTION annotation_gold_pair_count();

CREATE TRIGGER annotation_gold_pair_count_change AFTER UPDATE OF dataset_id, kind, active, in_quiz
ON annotation_goldpair FOR EACH ROW
WHEN (OLD.dataset_id IS DISTINCT FROM NEW.dataset_id OR OLD.kind IS DISTINCT FROM NEW.kind
      OR OLD.active IS DISTINCT FROM NEW.active OR OLD.in_quiz IS DISTINCT FROM NEW.in_quiz)
EXECUTE FUNCTION annotation_gold_pair_count();
"""

# The gold pairs stored before the triggers, counted once. Creating the triggers locked
# the gold pair table against writes until the migration commits, so none is missed.
BACKFILL = """
INSERT INTO annotation_goldcounter (dataset_id, kind, pairs_serveable)
SELECT dataset_id, kind, count(*) FROM annotation_goldpair WHERE active AND NOT in_quiz
GROUP BY dataset_id, kind;
"""

DROP_TRIGGERS = """
DROP TRIGGER annotation_gold_pair_count_change ON annotation_goldpair;
DROP TRIGGER annotation_gold_pair_count ON annotation_goldpair;
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
