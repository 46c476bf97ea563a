"""Batches made before a setting existed keep what they were made with."""

import pytest

from tests.support.migration_support import migrate_to, migrate_to_latest

BEFORE = [("sampling", "0003_batch_runner_help")]
AFTER = [("sampling", "0004_batch_upload_repeats_and_cocaption_pairs")]


@pytest.mark.django_db(transaction=True)
def test_existing_batches_keep_all_cocaption_pairs_and_refused_repeats():
    old = migrate_to(BEFORE)
    dataset = old.get_model("annotation", "Dataset").objects.create(name="old", image_url_prefix="https://x/")
    split = old.get_model("annotation", "Split").objects.create(dataset=dataset, name="val")
    batch = old.get_model("sampling", "SamplingBatch").objects.create(
        dataset=dataset, split=split, methods={"c2c_cocaption": None}
    )
    new = migrate_to(AFTER).get_model("sampling", "SamplingBatch")
    migrated = new.objects.get(pk=batch.pk)
    assert (migrated.cocaption_pairs, migrated.upload_repeats) == ("all", "refuse")
    fresh = new.objects.create(dataset_id=dataset.pk, split_id=split.pk, methods={})
    assert (fresh.cocaption_pairs, fresh.upload_repeats) == ("cycle", "merge")
    migrate_to_latest()


@pytest.mark.django_db(transaction=True)
def test_jobs_and_batches_made_before_upload_states_count_their_stored_uploads(tmp_path):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from annotation.catalog.uploads import KARPATHY, PAIR_LIST, upload_store

    before = [
        ("annotation", "0007_pair_order_and_retirement"),
        ("sampling", "0004_batch_upload_repeats_and_cocaption_pairs"),
    ]
    after = [("annotation", "0008_run_upload_state"), ("sampling", "0005_run_upload_state")]
    old = migrate_to(before)
    Job = old.get_model("annotation", "Job")
    stored = upload_store(SimpleUploadedFile("d.json", b"{}"), kind=KARPATHY)
    jobs = [
        Job.objects.create(kind="import_karpathy", params={"path": stored}),
        Job.objects.create(kind="import_karpathy", params={"path": str(tmp_path / "mine.json")}),
        Job.objects.create(kind="export_dataset", params={"out": str(tmp_path)}),
    ]
    dataset = old.get_model("annotation", "Dataset").objects.create(name="old", image_url_prefix="https://x/")
    split = old.get_model("annotation", "Split").objects.create(dataset=dataset, name="val")
    Batch = old.get_model("sampling", "SamplingBatch")
    listed = upload_store(SimpleUploadedFile("sis.csv", b"image1,image2\n"), kind=PAIR_LIST)
    batches = [
        Batch.objects.create(dataset=dataset, split=split, methods={}, source="uploaded", upload_path=listed),
        Batch.objects.create(dataset=dataset, split=split, methods={}, source="uploaded", upload_path="/elsewhere.csv"),
        Batch.objects.create(dataset=dataset, split=split, methods={}),
    ]
    new = migrate_to(after)
    states = new.get_model("annotation", "Job").objects.in_bulk([job.pk for job in jobs])
    assert [states[job.pk].upload_state for job in jobs] == ["stored", "none", "none"]
    states = new.get_model("sampling", "SamplingBatch").objects.in_bulk([batch.pk for batch in batches])
    assert [states[batch.pk].upload_state for batch in batches] == ["stored", "none", "none"]
    migrate_to_latest()


@pytest.mark.django_db(transaction=True)
def test_finished_intrasim_batches_get_the_rule_they_were_made_by():
    """Migration 0007 records the earlier c2i_intrasim rule in finished batches made by it."""
    before = [("sampling", "0006_model_topk")]
    old_apps = migrate_to(before)
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

    new_apps = migrate_to([("sampling", "0007_intrasim_rule_of_earlier_batches")])
    stats = dict(new_apps.get_model("sampling", "SamplingBatch").objects.values_list("pk", "stats"))
    assert stats[made]["load_s"] == 0.1
    assert stats[made]["c2i_intrasim"]["rule"] == "both_directions"
    assert stats[pending] == stats[other] == stats[uploaded] == {}
    migrate_to_latest()
