import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

# Rating's single-column indexes of pair, rater and exclusion duplicate composite ones
# that lead with the same column (rating_one_per_rater_per_pair, rating_rater_time_idx,
# rating_exclusion_idx), and every submit writes each of them. Only the indexes go:
# Django's own AlterField would also drop and re-add the foreign keys, checking every
# rating again under a lock on the table.
SINGLE_COLUMN_INDEXES = {
    "annotation_rating_pair_id_655ec643": "pair_id",
    "annotation_rating_rater_id_5608c8c3": "rater_id",
    "annotation_rating_exclusion_id_048aabaf": "exclusion_id",
}


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0030_tally_triggers_on_change"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    f'DROP INDEX IF EXISTS "{name}"',
                    reverse_sql=f'CREATE INDEX IF NOT EXISTS "{name}" ON "annotation_rating" ("{column}")',
                )
                for name, column in SINGLE_COLUMN_INDEXES.items()
            ],
            state_operations=[
                migrations.AlterField(
                    model_name="rating",
                    name="exclusion",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        help_text="The exclusion that excluded this rating (or whose undo superseded it).",
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="ratings",
                        to="annotation.ratingexclusion",
                    ),
                ),
                migrations.AlterField(
                    model_name="rating",
                    name="pair",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="ratings",
                        to="annotation.pair",
                    ),
                ),
                migrations.AlterField(
                    model_name="rating",
                    name="rater",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="ratings",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
        ),
    ]
