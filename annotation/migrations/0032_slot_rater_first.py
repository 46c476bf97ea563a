from django.conf import settings
from django.db import migrations, models

from annotation.schema.operations import RemoveIndexConcurrently, SwapIndexConcurrently

# slot_one_per_rater_per_pair leads with the rater and replaces slot_rater_idx (rater):
# lookups of a rater's slots range over theirs alone whatever the statistics say (see
# the constraint's comment on RatingSlot), and every slot update writes one index fewer.
# On PostgreSQL the new unique index is built CONCURRENTLY beside the old one, which then
# goes, and takes its name: the rule holds at every moment and claims and submits go on
# meanwhile (annotation/schema/operations.py). Every statement may run again, so a try
# that gave up a lock wait is repeated (idempotent).


class Migration(migrations.Migration):
    atomic = False
    idempotent = True

    dependencies = [
        ("annotation", "0031_rating_composite_indexes_only"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        SwapIndexConcurrently(
            "ratingslot",
            models.UniqueConstraint(
                condition=models.Q(("rater__isnull", False)),
                fields=("rater", "pair"),
                name="slot_one_per_rater_per_pair",
            ),
        ),
        RemoveIndexConcurrently(
            model_name="ratingslot",
            name="slot_rater_idx",
        ),
    ]
