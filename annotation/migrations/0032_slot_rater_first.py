from django.conf import settings
from django.db import migrations, models

# slot_one_per_rater_per_pair leads with the rater and replaces slot_rater_idx (rater):
# lookups of a rater's slots range over theirs alone whatever the statistics say (see
# the constraint's comment on RatingSlot), and every slot update writes one index fewer.
# The old index goes first (the new one takes its name) and the new one is built in the
# same transaction: claims and submits wait on the slot table until it commits, as long
# as one index build over every rated slot takes. Apply it between campaigns.


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
