from django.db import migrations, models

COCAPTION_CHOICES = [("cycle", "cycle: each caption in two pairs, as CxC"), ("all", "all: every pair of a group")]
REPEATS_CHOICES = [("merge", "merge: queue a repeated pair once"), ("refuse", "refuse the list")]


def _field(choices, default, help_text, db_default=models.NOT_PROVIDED):
    return models.CharField(choices=choices, default=default, db_default=db_default, help_text=help_text, max_length=10)


class Migration(migrations.Migration):
    """Batches made before these settings existed were sampled with every co-caption pair
    and refused pair lists with repeats: they get those values, new batches the new
    defaults."""

    dependencies = [
        ("sampling", "0003_batch_runner_help"),
    ]

    operations = [
        migrations.AddField(
            model_name="samplingbatch",
            name="cocaption_pairs",
            field=_field(COCAPTION_CHOICES, "all", "Which co-caption pairs c2c_cocaption draws from."),
        ),
        migrations.AlterField(
            model_name="samplingbatch",
            name="cocaption_pairs",
            field=_field(COCAPTION_CHOICES, "cycle", "Which co-caption pairs c2c_cocaption draws from.", "cycle"),
        ),
        migrations.AddField(
            model_name="samplingbatch",
            name="upload_repeats",
            field=_field(
                REPEATS_CHOICES,
                "refuse",
                "Uploaded batches: what a pair named twice in the list (in either order) gets.",
            ),
        ),
        migrations.AlterField(
            model_name="samplingbatch",
            name="upload_repeats",
            field=_field(
                REPEATS_CHOICES,
                "merge",
                "Uploaded batches: what a pair named twice in the list (in either order) gets.",
                "merge",
            ),
        ),
    ]
