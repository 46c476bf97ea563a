"""Record in each earlier finished c2i_intrasim batch the rule its pairs were made by: two pairs per
pivot, both directions, the pivot's own caption for caption pivots. Their pairs stay as
they are; new batches make one pair per pivot (sampling.methods.intrasim.INTRASIM_RULE)."""

from django.db import migrations

EARLIER_RULE = {
    "rule": "both_directions",
    "direction": "SIS pivot (a, b) gave (a random caption of b, a) and (a random caption of a, b); "
    "STS pivot (a, b) gave (a, the image of b) and (b, the image of a)",
    "order": "decreasing pivot score, equal scores in pair id order",
}


def record_earlier_rule(apps, schema_editor):
    batches = apps.get_model("sampling", "SamplingBatch")
    for batch in batches.objects.filter(
        source="sampled", status="succeeded", methods__has_key="c2i_intrasim"
    ).iterator():
        if "c2i_intrasim" not in batch.stats:
            batch.stats = {**batch.stats, "c2i_intrasim": EARLIER_RULE}
            batch.save(update_fields=["stats"])


class Migration(migrations.Migration):
    dependencies = [("sampling", "0006_model_topk")]

    operations = [migrations.RunPython(record_earlier_rule, migrations.RunPython.noop)]
