"""Picture sizes read again from a dataset's files (``manage.py image_sizes``): the ones
that changed are stored, a sideways photo's EXIF orientation turns its size, and a
dataset without files, an unknown one or a missing file is refused with nothing written."""

import io
import json

import pytest
from django.core.management import CommandError, call_command
from PIL import Image as PILImage

from annotation.catalog.services import dataset_import_karpathy
from annotation.models import Image
from tests.support.karpathy import image_entry

pytestmark = pytest.mark.django_db

ORIENTATION = 0x0112


def save_picture(path, size=(64, 48), orientation=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    exif = PILImage.Exif()
    if orientation is not None:
        exif[ORIENTATION] = orientation
    PILImage.new("RGB", size, (200, 100, 50)).save(path, exif=exif)


@pytest.fixture
def pictures(tmp_path):
    """A dataset of three pictures imported from files; returns its images folder and entries."""
    entries = [image_entry(n, sentids=(n,)) for n in (1, 2, 3)]
    root = tmp_path / "imgs"
    for entry in entries:
        save_picture(root / entry["filepath"] / entry["filename"])
    path = tmp_path / "dataset.json"
    path.write_text(json.dumps({"images": entries}))
    dataset_import_karpathy(path=path, name="coco", images_root=str(root))
    return root, entries


def sizes() -> list[tuple[int, int]]:
    return list(Image.objects.order_by("key").values_list("width", "height"))


def run(dataset="coco") -> str:
    out = io.StringIO()
    call_command("image_sizes", dataset=dataset, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_changed_files_and_a_sideways_photo_get_their_sizes_and_the_rest_is_left(pictures):
    root, entries = pictures
    assert sizes() == [(64, 48)] * 3
    save_picture(root / entries[0]["filepath"] / entries[0]["filename"], size=(80, 60))
    save_picture(root / entries[1]["filepath"] / entries[1]["filename"], orientation=6)
    assert "read 3 pictures, 2 sizes changed" in run()
    assert sizes() == [(80, 60), (48, 64), (64, 48)]
    assert "read 3 pictures, 0 sizes changed" in run()


def test_a_missing_file_stops_it_before_any_size_is_written(pictures):
    root, entries = pictures
    save_picture(root / entries[0]["filepath"] / entries[0]["filename"], size=(80, 60))
    (root / entries[2]["filepath"] / entries[2]["filename"]).unlink()
    with pytest.raises(CommandError, match=f"1 image file\\(s\\) missing below {root}: .*{entries[2]['filename']}"):
        run()
    assert sizes() == [(64, 48)] * 3


def test_an_unreadable_file_is_named(pictures):
    root, entries = pictures
    (root / entries[1]["filepath"] / entries[1]["filename"]).write_bytes(b"not a picture")
    with pytest.raises(CommandError, match=f"{entries[1]['filename']}: not a readable image"):
        run()


def test_a_dataset_served_from_a_url_prefix_or_unknown_is_refused(tmp_path):
    path = tmp_path / "dataset.json"
    path.write_text(json.dumps({"images": [image_entry(1, sentids=(1,))]}))
    dataset_import_karpathy(path=path, name="remote", image_url_prefix="https://pictures.example/")
    with pytest.raises(CommandError, match="'remote' serves its pictures from 'https://pictures.example/': no image"):
        run("remote")
    with pytest.raises(CommandError, match="no dataset named 'nowhere'"):
        run("nowhere")
