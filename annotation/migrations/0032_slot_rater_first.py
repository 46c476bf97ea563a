from django.conf import settings
from django.db import migrations, models

# slot_one_per_rater_per_pair leads with the rater and replaces slot_rater_idx (rater):
# lookups of a rater's slots range over theirs alone whatever the statistics say (see
# the constraint's comment on RatingSlot), and every slot update writes one index fewer.


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0031_rating_composite_indexes_only"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="ratingslot",
            name="slot_one_per_rater_per_pair",
        ),
        migrations.RemoveIndex(
            model_name="ratingslot",
            name="slot_rater_idx",
        ),
        migrations.AddConstraint(
            model_name="ratingslot",
            constraint=models.UniqueConstraint(
                condition=models.Q(("rater__isnull", False)),
                fields=("rater", "pair"),
                name="slot_one_per_rater_per_pair",
            ),
        ),
    ]
