from django.conf import settings
from django.db import migrations, models

from annotation.schema.operations import SwapIndexConcurrently

# slot_rater_active_idx holds only rated slots of unfinished pairs (the state joins its
# condition): progress counts them from the index alone instead of reading the table row
# of every slot the rater rated (see the index's comment on RatingSlot). On PostgreSQL the
# new one is built CONCURRENTLY beside the old one, which then goes, and takes its name:
# claims and submits go on meanwhile (annotation/schema/operations.py). Every statement
# may run again, so a try that gave up a lock wait is repeated (idempotent).


class Migration(migrations.Migration):
    atomic = False
    idempotent = True

    dependencies = [
        ("annotation", "0034_rater_gold_met"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        SwapIndexConcurrently(
            "ratingslot",
            models.Index(
                condition=models.Q(("pair_complete", False), ("rater__isnull", False), ("state", "done")),
                fields=["rater", "dataset", "kind"],
                name="slot_rater_active_idx",
            ),
        ),
    ]
