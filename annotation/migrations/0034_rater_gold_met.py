import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

# Per statement, the triggers sum what the written leases and gold pairs add to and take
# from each rater's count per dataset and kind (a lease counts while its gold pair is
# serveable: active, outside the quiz; by the pair's dataset and kind) and apply the sums
# in (rater, dataset, kind) order, as the gold counter's triggers do (migration 0033): two
# statements never lock counter rows crosswise, and a write that changes no count takes
# no lock. A lease counts while both rows exist: whichever of a lease and its gold pair is
# written last gives the count, whichever is deleted first takes it (the foreign key is
# checked at commit, so raw SQL may write them in either order). Not followed: one
# statement that writes both tables (a CTE deleting leases beside their pair), as each
# table's trigger then sees the other's rows changed already; the app writes them apart. A count is taken down by UPDATE alone: a row deleted with its
# rater or dataset stays deleted. A lease's own updates (renewed, submitted) fire nothing:
# the row trigger runs only when one names another pair or rater. The lease triggers lock
# the leases' gold pairs (FOR SHARE) before reading them: a concurrent change of a pair's
# serveable state, dataset or kind counts the leases it sees, so one of the two waits for
# the other's commit and then sees it (READ COMMITTED: each statement of a trigger
# function reads anew).
TRIGGERS = """
CREATE FUNCTION annotation_gold_met_add(of_rater bigint, of_dataset bigint, of_kind varchar, delta integer)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF delta > 0 THEN
        INSERT INTO annotation_ratergoldmet (rater_id, dataset_id, kind, leased_serveable)
        VALUES (of_rater, of_dataset, of_kind, delta)
        ON CONFLICT (rater_id, dataset_id, kind)
        DO UPDATE SET leased_serveable = annotation_ratergoldmet.leased_serveable + EXCLUDED.leased_serveable;
    ELSIF delta < 0 THEN
        UPDATE annotation_ratergoldmet SET leased_serveable = leased_serveable + delta
        WHERE rater_id = of_rater AND dataset_id = of_dataset AND kind = of_kind;
    END IF;
END $$;

CREATE FUNCTION annotation_gold_lease_met() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    change record;
BEGIN
    PERFORM 1 FROM annotation_goldpair g WHERE g.id IN (SELECT gold_pair_id FROM transition_rows)
    ORDER BY g.id FOR SHARE;
    FOR change IN
        SELECT l.rater_id, g.dataset_id, g.kind,
               (CASE WHEN TG_OP = 'INSERT' THEN count(*) ELSE -count(*) END)::integer AS delta
        FROM transition_rows l JOIN annotation_goldpair g ON g.id = l.gold_pair_id
        WHERE g.active AND NOT g.in_quiz
        GROUP BY l.rater_id, g.dataset_id, g.kind ORDER BY l.rater_id, g.dataset_id, g.kind
    LOOP
        PERFORM annotation_gold_met_add(change.rater_id, change.dataset_id, change.kind, change.delta);
    END LOOP;
    RETURN NULL;
END $$;

CREATE FUNCTION annotation_gold_lease_moved() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    gold record;
BEGIN
    PERFORM 1 FROM annotation_goldpair WHERE id IN (OLD.gold_pair_id, NEW.gold_pair_id) ORDER BY id FOR SHARE;
    SELECT dataset_id, kind INTO gold FROM annotation_goldpair
    WHERE id = OLD.gold_pair_id AND active AND NOT in_quiz;
    IF FOUND THEN
        PERFORM annotation_gold_met_add(OLD.rater_id, gold.dataset_id, gold.kind, -1);
    END IF;
    SELECT dataset_id, kind INTO gold FROM annotation_goldpair
    WHERE id = NEW.gold_pair_id AND active AND NOT in_quiz;
    IF FOUND THEN
        PERFORM annotation_gold_met_add(NEW.rater_id, gold.dataset_id, gold.kind, 1);
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION annotation_gold_pair_met() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    change record;
BEGIN
    IF TG_OP = 'INSERT' THEN
        -- Leases written before their pair (the foreign key waits for the commit).
        FOR change IN
            SELECT l.rater_id, n.dataset_id, n.kind, count(*)::integer AS delta
            FROM new_rows n JOIN annotation_goldlease l ON l.gold_pair_id = n.id
            WHERE n.active AND NOT n.in_quiz
            GROUP BY l.rater_id, n.dataset_id, n.kind ORDER BY l.rater_id, n.dataset_id, n.kind
        LOOP
            PERFORM annotation_gold_met_add(change.rater_id, change.dataset_id, change.kind, change.delta);
        END LOOP;
    ELSIF TG_OP = 'DELETE' THEN
        FOR change IN
            SELECT l.rater_id, o.dataset_id, o.kind, -count(*)::integer AS delta
            FROM old_rows o JOIN annotation_goldlease l ON l.gold_pair_id = o.id
            WHERE o.active AND NOT o.in_quiz
            GROUP BY l.rater_id, o.dataset_id, o.kind ORDER BY l.rater_id, o.dataset_id, o.kind
        LOOP
            PERFORM annotation_gold_met_add(change.rater_id, change.dataset_id, change.kind, change.delta);
        END LOOP;
    ELSE
        -- Only the pairs whose serveable state, dataset or kind changed read their leases.
        FOR change IN
            WITH moved AS (
                SELECT o.id, o.dataset_id AS old_dataset, o.kind AS old_kind, o.active AND NOT o.in_quiz AS was,
                       n.dataset_id AS new_dataset, n.kind AS new_kind, n.active AND NOT n.in_quiz AS now
                FROM old_rows o JOIN new_rows n ON n.id = o.id
                WHERE (o.active AND NOT o.in_quiz) IS DISTINCT FROM (n.active AND NOT n.in_quiz)
                   OR (n.active AND NOT n.in_quiz AND (o.dataset_id <> n.dataset_id OR o.kind <> n.kind))
            )
            SELECT rater_id, dataset_id, kind, sum(delta)::integer AS delta FROM (
                SELECT l.rater_id, m.old_dataset AS dataset_id, m.old_kind AS kind, -1 AS delta
                FROM moved m JOIN annotation_goldlease l ON l.gold_pair_id = m.id WHERE m.was
                UNION ALL
                SELECT l.rater_id, m.new_dataset, m.new_kind, 1
                FROM moved m JOIN annotation_goldlease l ON l.gold_pair_id = m.id WHERE m.now
            ) changed
            GROUP BY rater_id, dataset_id, kind HAVING sum(delta) <> 0 ORDER BY rater_id, dataset_id, kind
        LOOP
            PERFORM annotation_gold_met_add(change.rater_id, change.dataset_id, change.kind, change.delta);
        END LOOP;
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION annotation_gold_lease_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM annotation_ratergoldmet;
    RETURN NULL;
END $$;

CREATE TRIGGER annotation_gold_lease_met_insert AFTER INSERT ON annotation_goldlease
REFERENCING NEW TABLE AS transition_rows FOR EACH STATEMENT EXECUTE FUNCTION annotation_gold_lease_met();

CREATE TRIGGER annotation_gold_lease_met_delete AFTER DELETE ON annotation_goldlease
REFERENCING OLD TABLE AS transition_rows FOR EACH STATEMENT EXECUTE FUNCTION annotation_gold_lease_met();

CREATE TRIGGER annotation_gold_lease_met_moved AFTER UPDATE OF gold_pair_id, rater_id ON annotation_goldlease
FOR EACH ROW WHEN (OLD.gold_pair_id IS DISTINCT FROM NEW.gold_pair_id OR OLD.rater_id IS DISTINCT FROM NEW.rater_id)
EXECUTE FUNCTION annotation_gold_lease_moved();

CREATE TRIGGER annotation_gold_lease_truncate AFTER TRUNCATE ON annotation_goldlease
FOR EACH STATEMENT EXECUTE FUNCTION annotation_gold_lease_truncated();

CREATE TRIGGER annotation_gold_pair_met_insert AFTER INSERT ON annotation_goldpair
REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION annotation_gold_pair_met();

CREATE TRIGGER annotation_gold_pair_met_update AFTER UPDATE ON annotation_goldpair
REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION annotation_gold_pair_met();

CREATE TRIGGER annotation_gold_pair_met_delete AFTER DELETE ON annotation_goldpair
REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION annotation_gold_pair_met();
"""

# The leases stored before the triggers, counted once. Creating the triggers locked both
# tables against writes until the migration commits, so none is missed.
BACKFILL = """
INSERT INTO annotation_ratergoldmet (rater_id, dataset_id, kind, leased_serveable)
SELECT l.rater_id, g.dataset_id, g.kind, count(*)
FROM annotation_goldlease l JOIN annotation_goldpair g ON g.id = l.gold_pair_id
WHERE g.active AND NOT g.in_quiz
GROUP BY l.rater_id, g.dataset_id, g.kind;
"""

DROP_TRIGGERS = """
DROP TRIGGER annotation_gold_pair_met_delete ON annotation_goldpair;
DROP TRIGGER annotation_gold_pair_met_update ON annotation_goldpair;
DROP TRIGGER annotation_gold_pair_met_insert ON annotation_goldpair;
DROP TRIGGER annotation_gold_lease_truncate ON annotation_goldlease;
DROP TRIGGER annotation_gold_lease_met_moved ON annotation_goldlease;
DROP TRIGGER annotation_gold_lease_met_delete ON annotation_goldlease;
DROP TRIGGER annotation_gold_lease_met_insert ON annotation_goldlease;
DROP FUNCTION annotation_gold_lease_truncated();
DROP FUNCTION annotation_gold_pair_met();
DROP FUNCTION annotation_gold_lease_moved();
DROP FUNCTION annotation_gold_lease_met();
DROP FUNCTION annotation_gold_met_add(bigint, bigint, varchar, integer);
"""


def create_triggers(apps, schema_editor):
    """PostgreSQL only: elsewhere the counter stays empty and progress tests each lease."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(TRIGGERS)
        schema_editor.execute(BACKFILL)


def drop_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP_TRIGGERS)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0033_gold_counter"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="RaterGoldMet",
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
                (
                    "leased_serveable",
                    models.IntegerField(help_text="Serveable gold pairs of the kind the rater has a lease of."),
                ),
                (
                    "dataset",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="annotation.dataset",
                    ),
                ),
                (
                    "rater",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("rater", "dataset", "kind"), name="rater_gold_met_unique"),
                    models.CheckConstraint(
                        condition=models.Q(("leased_serveable__gte", 0)), name="rater_gold_met_nonnegative"
                    ),
                ],
            },
        ),
        migrations.RunPython(create_triggers, drop_triggers),
    ]
