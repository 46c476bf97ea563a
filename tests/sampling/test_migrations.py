"""Batches made before a setting existed keep what they were made with."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("sampling", "0003_batch_runner_help")]
AFTER = [("sampling", "0004_batch_upload_repeats_and_cocaption_pairs")]


@pytest.mark.django_db(transaction=True)
def test_existing_batches_keep_all_cocaption_pairs_and_refused_repeats():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    dataset = old.get_model("annotation", "Dataset").objects.create(name="old", image_url_prefix="https://x/")
    split = old.get_model("annotation", "Split").objects.create(dataset=dataset, name="val")
    batch = old.get_model("sampling", "SamplingBatch").objects.create(
        dataset=dataset, split=split, methods={"c2c_cocaption": None}
    )
    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps.get_model("sampling", "SamplingBatch")
    migrated = new.objects.get(pk=batch.pk)
    assert (migrated.cocaption_pairs, migrated.upload_repeats) == ("all", "refuse")
    fresh = new.objects.create(dataset_id=dataset.pk, split_id=split.pk, methods={})
    assert (fresh.cocaption_pairs, fresh.upload_repeats) == ("cycle", "merge")
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
