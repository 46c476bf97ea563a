from django.conf import settings
from django.db import migrations, models

# slot_rater_active_idx holds only rated slots of unfinished pairs (the state joins its
# condition): progress counts them from the index alone instead of reading the table row
# of every slot the rater rated (see the index's comment on RatingSlot). The old index
# goes first (the new one takes its name) and the new one is built in the same
# transaction: claims and submits wait on the slot table until it commits, as long as one
# index build over the slots takes. Apply it between campaigns.


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0034_rater_gold_met"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name="ratingslot",
            name="slot_rater_active_idx",
        ),
        migrations.AddIndex(
            model_name="ratingslot",
            index=models.Index(
                condition=models.Q(("pair_complete", False), ("rater__isnull", False), ("state", "done")),
                fields=["rater", "dataset", "kind"],
                name="slot_rater_active_idx",
            ),
        ),
    ]
