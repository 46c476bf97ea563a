"""Migration 0007 records the earlier c2i_intrasim rule in finished batches made by it."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("sampling", "0006_model_topk")]
AFTER = [("sampling", "0007_intrasim_rule_of_earlier_batches")]


@pytest.mark.django_db(transaction=True)
def test_finished_intrasim_batches_get_the_rule_they_were_made_by():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old_apps = executor.loader.project_state(BEFORE).apps
    dataset = old_apps.get_model("annotation", "Dataset").objects.create(
        name="before-0007", image_url_prefix="https://images.example.org/"
    )
    split = old_apps.get_model("annotation", "Split").objects.create(dataset=dataset, name="val")
    batches = old_apps.get_model("sampling", "SamplingBatch").objects

    def batch(status, methods, source="sampled", stats=None):
        return batches.create(
            dataset=dataset, split=split, status=status, methods=methods, source=source, stats=stats or {}
        ).pk

    made = batch("succeeded", {"c2i_intrasim": 10}, stats={"load_s": 0.1})
    pending = batch("pending", {"c2i_intrasim": 10})
    other = batch("succeeded", {"i2i_csim": None})
    uploaded = batch("succeeded", {"c2i_intrasim": 3}, source="uploaded")

    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    new_apps = executor.loader.project_state(AFTER).apps
    stats = dict(new_apps.get_model("sampling", "SamplingBatch").objects.values_list("pk", "stats"))
    assert stats[made]["load_s"] == 0.1
    assert stats[made]["c2i_intrasim"]["rule"] == "both_directions"
    assert stats[pending] == stats[other] == stats[uploaded] == {}
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
