"""Uploaded pair lists keep what the file says: each pair's order, repeated pairs merged
(or refused on request) with a count, no file left behind when a list is refused, and
the CLI's own copy of the file for a background worker."""

from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from annotation.models import Pair
from sampling.models import SamplingBatch
from sampling.runs.batch import sampling_batch_run
from sampling.services import sampling_batch_create_from_upload
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def items(make_split):
    return make_split(n_images=4, captions_per_image=2)


def write(folder: Path, text: str, name: str = "pairs.csv") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def stored_uploads() -> list[Path]:
    root = Path(settings.DATA_DIR) / "uploads"
    return sorted(root.rglob("*.csv")) if root.exists() else []


def given_order(pair: Pair) -> tuple[str, str]:
    """The pair's two keys in the order it was queued in."""
    sis = pair.kind == "SIS"
    keys = (pair.image_a.key, pair.image_b.key) if sis else (pair.caption_a.key, pair.caption_b.key)
    return keys[::-1] if pair.swapped else keys


def test_a_list_repeating_pairs_in_either_order_queues_each_once_in_its_first_order(tmp_path, items):
    img = items.image_key
    path = write(
        tmp_path,
        "image1,image2,agg_score,sampling_method\n"
        f"{img(2)},{img(0)},1.0,i2i_csim\n"  # given high id first
        f"{img(1)},{img(3)},2.0,i2i_csim\n"
        f"{img(0)},{img(2)},1.0,i2i_csim\n"  # the first pair again, other order
        f"{img(2)},{img(0)},1.0,i2i_csim\n",  # and in its own order
    )
    batch = sampling_batch_create_from_upload(dataset_name=items.dataset.name, split_name="val", path=path)
    assert batch.methods == {"i2i_csim": 2}
    batch = sampling_batch_run(batch_id=batch.pk)
    assert batch.status == "succeeded", batch.error
    assert batch.stats["rows_merged"] == 2 and batch.stats["pairs_in_file"] == 2
    pairs = Pair.objects.filter(batch=batch).select_related("image_a", "image_b").order_by("id")
    assert [given_order(pair) for pair in pairs] == [(img(2), img(0)), (img(1), img(3))]
    # Stored lower id first: uniqueness stays unordered.
    assert all(pair.image_a_id < pair.image_b_id for pair in pairs)
    assert [pair.swapped for pair in pairs] == [True, False]


def test_refusing_repeats_is_an_option_and_a_refused_list_leaves_no_file(tmp_path, items):
    cap = items.caption_key
    api = APIClient()
    api.force_authenticate(UserFactory(roles=["admin"]))
    text = f"caption1,caption2,sampling_method\n{cap(0)},{cap(3)},c2c_isim\n{cap(3)},{cap(0)},c2c_isim\n"
    with write(tmp_path, text).open("rb") as handle:
        response = api.post(
            "/api/sampling/batches/upload/",
            {"dataset": items.dataset.name, "split": "val", "file": handle, "repeats": "refuse"},
        )
    assert response.status_code == 400, response.json()
    assert "line 3 repeats the pair on line 2" in str(response.json())
    assert stored_uploads() == []
    assert SamplingBatch.objects.count() == 0

    with write(tmp_path, text).open("rb") as handle:
        response = api.post(
            "/api/sampling/batches/upload/", {"dataset": items.dataset.name, "split": "val", "file": handle}
        )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["upload_repeats"] == "merge"
    assert (body["k"], body["seed"], body["spaces"]) == (None, None, None)  # meaningless for a list
    assert len(stored_uploads()) == 1


def test_a_list_with_an_unknown_id_leaves_no_file_behind(tmp_path, items):
    text = "caption1,caption2,sampling_method\nCOCO_val2014:sentid:1,COCO_val2014:sentid:999999,c2c_isim\n"
    api = APIClient()
    api.force_authenticate(UserFactory(roles=["admin"]))
    with write(tmp_path, text).open("rb") as handle:
        response = api.post(
            "/api/sampling/batches/upload/", {"dataset": items.dataset.name, "split": "val", "file": handle}
        )
    assert response.status_code == 400
    assert "pairs.csv" in str(response.json())
    assert stored_uploads() == []


def sample(*args) -> str:
    out = StringIO()
    call_command("sample", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_the_cli_stores_its_own_copy_for_a_background_worker(tmp_path, items, monkeypatch):
    cap = items.caption_key
    folder = tmp_path / "work"
    folder.mkdir()
    write(folder, f"caption1,caption2,sampling_method\n{cap(1)},{cap(4)},c2c_isim\n", name="mine.csv")
    monkeypatch.chdir(folder)
    out = sample("--dataset", items.dataset.name, "--split", "val", "--upload", "mine.csv", "--background")
    batch = SamplingBatch.objects.get()
    assert f"batch {batch.pk} queued" in out
    stored = Path(batch.upload_path)
    assert stored.is_absolute() and stored.parent.parent == Path(settings.DATA_DIR) / "uploads"
    assert stored.name == "mine.csv" and stored.read_text() == (folder / "mine.csv").read_text()
    (folder / "mine.csv").unlink()  # the worker does not need the caller's file
    assert sampling_batch_run(batch_id=batch.pk).status == "succeeded"

    with pytest.raises(CommandError, match="gone.csv: no such file"):
        sample("--dataset", items.dataset.name, "--split", "val", "--upload", "gone.csv")


def test_the_cli_says_when_every_pair_of_a_list_was_queued_before(tmp_path, items):
    cap = items.caption_key
    path = write(tmp_path, f"caption1,caption2,sampling_method\n{cap(0)},{cap(5)},\n{cap(5)},{cap(0)},\n")
    first = sample("--dataset", items.dataset.name, "--split", "val", "--upload", str(path))
    assert "merged: 1 row(s) repeated a pair named earlier in the list (queued once)" in first
    again = sample("--dataset", items.dataset.name, "--split", "val", "--upload", str(path))
    assert "total: 0 pairs, 0 rating slots" in again
    assert "already queued: all 1 pairs of the list were queued before; nothing new to rate" in again


def test_an_uploaded_batch_page_shows_no_sampling_settings(tmp_path, items, admin_client):
    cap = items.caption_key
    path = write(tmp_path, f"caption1,caption2,sampling_method\n{cap(0)},{cap(5)},\n")
    batch = sampling_batch_create_from_upload(dataset_name=items.dataset.name, split_name="val", path=path)
    page = admin_client.get(f"/admin/sampling/samplingbatch/{batch.pk}/change/").content.decode()
    assert "Upload repeats" in page or "upload_repeats" in page
    for label in ("field-k", "field-seed", "field-spaces", "field-cocaption_pairs"):
        assert label not in page
