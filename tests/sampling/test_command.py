"""python manage.py sample: create and run a batch, print its id and pairs per method."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from sampling.models import SamplingBatch
from sampling.services import sampling_batch_create

pytestmark = pytest.mark.django_db


def sample(*args):
    out, err = StringIO(), StringIO()
    call_command("sample", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_sample_runs_a_batch_and_prints_its_id_and_pairs_per_method(small, capsys):
    out, _ = sample(
        "--dataset", small.dataset.name, "--split", "val", "--method", "i2i_csim", "--method", "c2c_cocaption=3",
        "--k", "1", "--seed", "2", "--space", "txt",
    )  # fmt: skip
    batch = SamplingBatch.objects.get()
    assert out.splitlines() == [
        f"batch {batch.pk}: succeeded",
        "i2i_csim: 2",
        "c2c_cocaption: 3",
        "total: 5 pairs, 25 rating slots",
    ]
    # Progress lines go to the terminal's stderr as the batch runs.
    assert "writing up to 5 pairs and 25 rating slots" in capsys.readouterr().err
    assert (batch.k, batch.seed, batch.spaces) == (1, 2, ["txt"])
    status, _ = sample("--status", str(batch.pk))
    assert status.splitlines()[0] == f"batch {batch.pk}: succeeded"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--method", "x2y"], "unknown method 'x2y'"),
        (["--method", "i2i_csim=lots"], "the budget must be a whole number or 'all'"),
        (["--method", "i2i_csim", "--method", "i2i_csim=3"], "--method i2i_csim is given twice"),
        (["--method", "i2i_csim", "--k", "0"], "k must be a whole number of neighbours, at least 1"),
        (["--method", "i2i_csim", "--k", "1", "--space", "img"], "space 'img' holds image embeddings"),
        (["--method", "c2c_cocaption=10"], "c2c_cocaption: budget 10 is more than the 4 fresh pairs"),
        ([], "give at least one --method"),
    ],
)
def test_bad_arguments_stop_with_the_reason_and_create_nothing(small, args, message):
    with pytest.raises(CommandError, match=message):
        sample("--dataset", small.dataset.name, "--split", "val", *args)
    assert SamplingBatch.objects.count() == 0


def test_a_batch_that_fails_names_its_error_and_fails_the_same_way_again(small):
    with pytest.raises(CommandError, match=r"batch \d+ failed: i2i_csim: budget 3 is more than the 2 fresh"):
        sample("--dataset", small.dataset.name, "--split", "val", "--method", "i2i_csim=3", "--k", "1")
    batch = SamplingBatch.objects.get()
    out, _ = sample("--status", str(batch.pk))
    assert "error: i2i_csim: budget 3" in out
    with pytest.raises(CommandError, match="budget 3 is more than the 2 fresh"):
        sample("--start", str(batch.pk))


def test_start_runs_a_batch_created_elsewhere(small):
    batch = sampling_batch_create(
        dataset_name=small.dataset.name, split_name="val", methods={"c2c_cocaption": None}, k=1
    )
    out, _ = sample("--start", str(batch.pk))
    assert out.splitlines()[:2] == [f"batch {batch.pk}: succeeded", "c2c_cocaption: 4"]
    with pytest.raises(CommandError, match="already succeeded with 4 pairs"):
        sample("--start", str(batch.pk))


def test_background_queues_the_batch_for_a_worker(small, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as queued:
        out, _ = sample("--dataset", small.dataset.name, "--split", "val", "--method", "c2c_cocaption", "--background")
    batch = SamplingBatch.objects.get()
    assert out.strip() == f"batch {batch.pk} queued; follow it with: manage.py sample --status {batch.pk}"
    assert batch.status == "pending"
    assert len(queued) == 1
    out, _ = sample("--status", str(batch.pk))
    assert out.splitlines() == [f"batch {batch.pk}: pending", "progress: 0/0 queued"]


def test_upload_queues_a_pair_list(small, tmp_path):
    path = tmp_path / "sis.csv"
    path.write_text(f"image1,image2,sampling_method\n{small.image_key(1)},{small.image_key(3)},\n", encoding="utf-8")
    out, _ = sample("--dataset", small.dataset.name, "--split", "val", "--upload", str(path))
    assert out.splitlines()[1:] == ["uploaded: 1", "total: 1 pairs, 5 rating slots"]
