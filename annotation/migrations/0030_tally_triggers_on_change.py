from django.db import migrations

# The tally's update triggers (0027) fire only when a column the tally reads changed:
# Model.save() writes every column, and each such save re-tallied the row (taking the
# tally's row lock for a change that nets to nothing). A migration of its own, not an edit
# of 0027: databases migrated past 0027 keep its triggers until this replaces them.
ON_CHANGE = """
DROP TRIGGER annotation_rating_tally ON annotation_rating;
DROP TRIGGER annotation_gold_rating_tally ON annotation_goldrating;

CREATE TRIGGER annotation_rating_tally AFTER INSERT OR DELETE
ON annotation_rating FOR EACH ROW EXECUTE FUNCTION annotation_rating_tally();

CREATE TRIGGER annotation_rating_tally_change AFTER UPDATE OF rater_id, pair_id, created_at
ON annotation_rating FOR EACH ROW
WHEN (OLD.rater_id IS DISTINCT FROM NEW.rater_id OR OLD.pair_id IS DISTINCT FROM NEW.pair_id
      OR OLD.created_at IS DISTINCT FROM NEW.created_at)
EXECUTE FUNCTION annotation_rating_tally();

CREATE TRIGGER annotation_gold_rating_tally AFTER INSERT OR DELETE
ON annotation_goldrating FOR EACH ROW EXECUTE FUNCTION annotation_gold_rating_tally();

CREATE TRIGGER annotation_gold_rating_tally_change AFTER UPDATE OF rater_id, dataset_id, created_at, purpose
ON annotation_goldrating FOR EACH ROW
WHEN (OLD.rater_id IS DISTINCT FROM NEW.rater_id OR OLD.dataset_id IS DISTINCT FROM NEW.dataset_id
      OR OLD.created_at IS DISTINCT FROM NEW.created_at OR OLD.purpose IS DISTINCT FROM NEW.purpose)
EXECUTE FUNCTION annotation_gold_rating_tally();
"""

# Back to 0027's triggers.
ON_EVERY_UPDATE = """
DROP TRIGGER annotation_gold_rating_tally_change ON annotation_goldrating;
DROP TRIGGER annotation_gold_rating_tally ON annotation_goldrating;
DROP TRIGGER annotation_rating_tally_change ON annotation_rating;
DROP TRIGGER annotation_rating_tally ON annotation_rating;

CREATE TRIGGER annotation_rating_tally AFTER INSERT OR DELETE OR UPDATE OF rater_id, pair_id, created_at
ON annotation_rating FOR EACH ROW EXECUTE FUNCTION annotation_rating_tally();

CREATE TRIGGER annotation_gold_rating_tally
AFTER INSERT OR DELETE OR UPDATE OF rater_id, dataset_id, created_at, purpose
ON annotation_goldrating FOR EACH ROW EXECUTE FUNCTION annotation_gold_rating_tally();
"""


def fire_on_change(apps, schema_editor):
    """PostgreSQL only, as 0027's triggers."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(ON_CHANGE)


def fire_on_every_update(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(ON_EVERY_UPDATE)


class Migration(migrations.Migration):
    dependencies = [("annotation", "0029_exclusion_ratings_through")]

    operations = [migrations.RunPython(fire_on_change, fire_on_every_update)]
