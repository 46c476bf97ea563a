"""Qualifications hold per dataset and kind (issue #25): a quiz or a campaign link grants a
kind in its own dataset only. Today's grants (each for every dataset) are kept as one row
per existing dataset, so nobody loses or gains a kind anywhere they rate now; a dataset
made later asks for its own grants."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def grants_per_dataset(apps, schema_editor):
    Qualification = apps.get_model("annotation", "Qualification")
    Dataset = apps.get_model("annotation", "Dataset")
    dataset_ids = list(Dataset.objects.values_list("id", flat=True))
    grants = list(Qualification.objects.filter(dataset__isnull=True).values_list("rater_id", "kind"))
    Qualification.objects.bulk_create(
        [
            Qualification(rater_id=rater_id, dataset_id=dataset_id, kind=kind)
            for rater_id, kind in grants
            for dataset_id in dataset_ids
        ],
        batch_size=5_000,
    )
    Qualification.objects.filter(dataset__isnull=True).delete()
    if schema_editor.connection.vendor == "postgresql":
        # The new rows' foreign-key checks run now, not at commit: PostgreSQL builds no
        # index on a table with pending trigger events, and the constraints follow.
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def grants_global(apps, schema_editor):
    """Back to one grant per rater and kind: the union over the datasets."""
    Qualification = apps.get_model("annotation", "Qualification")
    pairs = set(Qualification.objects.values_list("rater_id", "kind"))
    Qualification.objects.all().delete()
    Qualification.objects.bulk_create([Qualification(rater_id=r, kind=k) for r, k in sorted(pairs)])


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0014_model_topk"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="qualification",
            name="qualification_unique",
        ),
        migrations.AddField(
            model_name="qualification",
            name="dataset",
            field=models.ForeignKey(
                blank=True,
                help_text="The dataset this grant holds in; empty: every dataset.",
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="annotation.dataset",
            ),
        ),
        migrations.RunPython(grants_per_dataset, grants_global),
        migrations.AddConstraint(
            model_name="qualification",
            constraint=models.UniqueConstraint(
                condition=models.Q(("dataset__isnull", False)),
                fields=("rater", "dataset", "kind"),
                name="qualification_unique_in_dataset",
            ),
        ),
        migrations.AddConstraint(
            model_name="qualification",
            constraint=models.UniqueConstraint(
                condition=models.Q(("dataset__isnull", True)),
                fields=("rater", "kind"),
                name="qualification_unique_global",
            ),
        ),
    ]
