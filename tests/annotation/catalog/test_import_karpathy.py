"""Karpathy import into the database: keys, counts, sizes, and all-or-nothing on bad input."""

import json
import tracemalloc

import pytest
from django.core.management import CommandError, call_command

from annotation.catalog.services import dataset_import_karpathy
from annotation.core.errors import DatasetImportError
from annotation.models import Caption, Dataset, Image, Job, JobStatus, Split
from tests.support.karpathy import image_entry

pytestmark = pytest.mark.django_db


def table_counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in (Dataset, Split, Image, Caption)}


def write_json(tmp_path, payload, name="dataset_coco.json"):
    path = tmp_path / name
    path.write_text(json.dumps(payload))
    return path


def make_image_files(root, entries):
    from PIL import Image as PILImage

    for entry in entries:
        target = root / entry["filepath"] / entry["filename"]
        target.parent.mkdir(parents=True, exist_ok=True)
        PILImage.new("RGB", (64, 48), (200, 100, 50)).save(target)


def test_import_coco_mini_with_cxc_keys(coco_mini):
    summary = dataset_import_karpathy(
        path=coco_mini / "dataset.json", name="mini", images_root=str(coco_mini), key_prefix="COCO_val2014"
    )
    assert summary.images == 170
    assert summary.captions == 850
    assert summary.splits == {"mini": 170}
    image = Image.objects.get(key="COCO_val2014_000000000790.jpg")
    assert image.file_path == "images/000000000790.jpg"
    assert (image.width, image.height) == (640, 422)  # from images.csv of coco_mini
    assert image.captions.count() == 5
    caption = Caption.objects.get(key="COCO_val2014:sentid:576009")
    assert caption.text == "a family is sitting down at a table to have cake"
    assert caption.image == image
    # Every CxC row of coco_mini names keys that now exist.
    cxc_rows = (coco_mini / "cxc_val" / "sts_val.csv").read_text().splitlines()[1:]
    keys = {key for row in cxc_rows for key in row.split(",")[:2]}
    assert Caption.objects.filter(key__in=keys).count() == len(keys)


def test_import_selected_splits_then_add_another(tmp_path):
    entries = [image_entry(1, "val", (11, 12)), image_entry(2, "test", (21,)), image_entry(3, "train", (31,))]
    path = write_json(tmp_path, {"images": entries})
    dataset_import_karpathy(path=path, name="coco", image_url_prefix="https://x/", splits=["val"])
    assert list(Split.objects.values_list("name", flat=True)) == ["val"]
    dataset_import_karpathy(path=path, name="coco", image_url_prefix="https://x/", splits=["test"])
    assert sorted(Split.objects.values_list("name", flat=True)) == ["test", "val"]
    assert Caption.objects.filter(image__split__name="test").count() == 1
    with pytest.raises(DatasetImportError, match="already has split\\(s\\) val"):
        dataset_import_karpathy(path=path, name="coco", image_url_prefix="https://x/", splits=["val"])


def test_import_checks_image_files_exist(tmp_path):
    entries = [image_entry(1, sentids=(1,)), image_entry(2, sentids=(2,))]
    make_image_files(tmp_path / "imgs", entries[:1])
    path = write_json(tmp_path, {"images": entries})
    before = table_counts()
    with pytest.raises(DatasetImportError, match="1 image file\\(s\\) missing below .*COCO_val2014_000000000002.jpg"):
        dataset_import_karpathy(path=path, name="coco", images_root=str(tmp_path / "imgs"))
    assert table_counts() == before


@pytest.mark.parametrize(("orientation", "shown"), [(None, (64, 48)), (3, (64, 48)), (6, (48, 64)), (8, (48, 64))])
def test_image_sizes_are_as_a_browser_shows_them_after_the_exif_orientation(tmp_path, orientation, shown):
    """A phone's photo stored sideways with an EXIF orientation is shown turned; its
    recorded size is the turned one, or the page would give it the wrong box."""
    from PIL import Image as PILImage

    entries = [image_entry(1, sentids=(1,))]
    target = tmp_path / "imgs" / entries[0]["filepath"] / entries[0]["filename"]
    target.parent.mkdir(parents=True)
    exif = PILImage.Exif()
    if orientation is not None:
        exif[0x0112] = orientation
    PILImage.new("RGB", (64, 48), (200, 100, 50)).save(target, exif=exif)
    dataset_import_karpathy(
        path=write_json(tmp_path, {"images": entries}), name="coco", images_root=str(tmp_path / "imgs")
    )
    assert Image.objects.values_list("width", "height").get() == shown


def test_import_rejects_unreadable_image(tmp_path):
    entries = [image_entry(1, sentids=(1,))]
    target = tmp_path / "imgs" / "val2014" / entries[0]["filename"]
    target.parent.mkdir(parents=True)
    target.write_bytes(b"not an image")
    before = table_counts()
    with pytest.raises(DatasetImportError, match="not a readable image"):
        dataset_import_karpathy(
            path=write_json(tmp_path, {"images": entries}), name="coco", images_root=str(tmp_path / "imgs")
        )
    assert table_counts() == before


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ("{broken", "not valid JSON"),
        ({"images": [{"filename": "COCO_val2014_000000000001.jpg", "split": "val"}]}, "missing field 'sentences'"),
        ({"images": [{**image_entry(), "sentences": [{"raw": "x"}]}]}, "missing field 'sentid'"),
        ({"images": [image_entry(1, sentids=(5,)), image_entry(2, sentids=(5,))]}, "sentid 5 repeats"),
    ],
)
def test_bad_json_writes_nothing(tmp_path, payload, message):
    path = tmp_path / "bad.json"
    path.write_text(payload if isinstance(payload, str) else json.dumps(payload))
    before = table_counts()
    with pytest.raises(DatasetImportError, match=message) as info:
        dataset_import_karpathy(path=path, name="coco", image_url_prefix="https://x/")
    assert "bad.json" in str(info.value)
    assert table_counts() == before


def test_failure_while_writing_rolls_back_everything(tmp_path):
    """A caption key clash found by the database mid-write leaves no partial dataset."""
    first = write_json(tmp_path, {"images": [image_entry(1, "val", (1,))]}, "a.json")
    dataset_import_karpathy(path=first, name="coco", image_url_prefix="https://x/")
    before = table_counts()
    clash = write_json(tmp_path, {"images": [image_entry(2, "test", (3,)), image_entry(4, "test", (1,))]}, "b.json")
    with pytest.raises(DatasetImportError, match="already has caption 'COCO_val2014:sentid:1'"):
        dataset_import_karpathy(path=clash, name="coco", image_url_prefix="https://x/")
    assert table_counts() == before


def test_needs_exactly_one_image_source(tmp_path):
    path = write_json(tmp_path, {"images": [image_entry()]})
    with pytest.raises(DatasetImportError, match="images root folder or an image URL prefix"):
        dataset_import_karpathy(path=path, name="coco")
    with pytest.raises(DatasetImportError, match="not both"):
        dataset_import_karpathy(path=path, name="coco", images_root=str(tmp_path), image_url_prefix="https://x/")


def test_command_reports_counts_and_records_job(tmp_path, capsys):
    entries = [image_entry(1, sentids=(1, 2)), image_entry(2, sentids=(3, 4))]
    make_image_files(tmp_path / "imgs", entries)
    path = write_json(tmp_path, {"images": entries})
    call_command("import_karpathy", str(path), "--name", "coco", "--images-root", str(tmp_path / "imgs"))
    assert "imported 2 images and 4 captions (val: 2 images)" in capsys.readouterr().out
    job = Job.objects.get()
    assert job.status == JobStatus.SUCCEEDED
    assert job.progress_done == job.progress_total == 6


def test_command_fails_with_the_message(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("[]")
    with pytest.raises(CommandError, match="expected an object with an 'images' list"):
        call_command("import_karpathy", str(path), "--name", "coco", "--image-url-prefix", "https://x/")
    assert Job.objects.get().status == JobStatus.FAILED
    assert Dataset.objects.count() == 0


def test_a_filepath_leaving_the_images_root_is_refused_and_the_file_outside_never_opened(tmp_path):
    root = tmp_path / "data" / "coco" / "imgs"
    root.mkdir(parents=True)
    outside = image_entry(1, sentids=(1,), filepath="secret")
    make_image_files(tmp_path, [outside])  # tmp_path/secret/COCO_val2014_000000000001.jpg exists, outside root
    entries = [image_entry(2, sentids=(2,), filepath=""), {**outside, "filepath": "../../../secret"}]
    make_image_files(root, entries[:1])
    path = write_json(tmp_path, {"images": entries})
    before = table_counts()
    with pytest.raises(
        DatasetImportError,
        match=r"images\[1\] \(COCO_val2014_000000000001.jpg\): field 'filepath' '../../../secret' leaves the images",
    ):
        dataset_import_karpathy(path=path, name="coco", images_root=str(root))
    assert table_counts() == before


def karpathy_with_one_long_caption(tmp_path, chars: int):
    """A Karpathy file whose images[1].sentences[1].raw has ``chars`` characters, written
    without building the string in memory twice."""
    entries = [image_entry(1, sentids=(1, 2)), image_entry(2, sentids=(3, 4))]
    entries[1]["sentences"][1]["raw"] = "@LONG@"
    before, after = json.dumps({"images": entries}).split('"@LONG@"')
    path = tmp_path / "dataset_coco.json"
    with path.open("w") as handle:
        handle.write(before + '"')
        block = "a" * 1_000_000
        for _ in range(chars // len(block)):
            handle.write(block)
        handle.write("a" * (chars % len(block)) + '"' + after)
    return path


def test_a_150_mb_caption_is_refused_naming_the_entry_without_reading_it_whole(tmp_path, settings):
    """The file is read one entry at a time: an entry longer than any image's is refused
    at the bound, not read to its end (150 MB)."""
    assert settings.UPLOAD_MAX_CAPTION_CHARS == 2000  # the documented default applies
    path = karpathy_with_one_long_caption(tmp_path, 150_000_000)
    before = table_counts()
    tracemalloc.start()
    try:
        with pytest.raises(DatasetImportError) as info:
            dataset_import_karpathy(path=path, name="coco", image_url_prefix="https://x/")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert str(info.value) == (
        f"{path}: images[1] (line 1 column 262: longer than 4,194,304 characters from here); an image's entry "
        "(its file, split and sentences) is a few KB, at most 4,194,304 characters are read"
    )
    assert peak < 64 * 2**20, f"peak {peak / 2**20:.0f} MiB"
    assert table_counts() == before


def test_a_caption_over_the_setting_is_refused_naming_the_entry_and_the_limit(tmp_path, settings):
    path = karpathy_with_one_long_caption(tmp_path, 150_000)
    with pytest.raises(DatasetImportError) as info:
        dataset_import_karpathy(path=path, name="coco", image_url_prefix="https://x/")
    assert str(info.value) == (
        f"{path}: images[1] (COCO_val2014_000000000002.jpg) sentences[1].raw: "
        "150,000 characters, more than UPLOAD_MAX_CAPTION_CHARS=2000"
    )


def test_the_caption_and_file_name_limits_are_settings(tmp_path, settings):
    settings.UPLOAD_MAX_CAPTION_CHARS = 12
    settings.UPLOAD_MAX_FILENAME_CHARS = 29
    entry = image_entry(1, sentids=(1,))
    entry["sentences"][0]["raw"] = "x" * 13
    with pytest.raises(DatasetImportError, match=r"sentences\[0\].raw: 13 characters, more than .*_CHARS=12"):
        dataset_import_karpathy(path=write_json(tmp_path, {"images": [entry]}), name="coco", image_url_prefix="x/")
    long_name = image_entry(1, sentids=(1,), filename="COCO_val2014_0000000000001.jpg")
    with pytest.raises(
        DatasetImportError, match=r"images\[0\].filename: 30 characters, more than UPLOAD_MAX_FILENAME_CHARS=29"
    ):
        dataset_import_karpathy(path=write_json(tmp_path, {"images": [long_name]}), name="coco", image_url_prefix="x/")
    entry["sentences"][0]["raw"] = "x" * 12
    summary = dataset_import_karpathy(
        path=write_json(tmp_path, {"images": [entry]}), name="coco", image_url_prefix="x/"
    )
    assert summary.captions == 1
    assert Caption.objects.get().text == "x" * 12


@pytest.mark.parametrize(
    ("change", "options", "message"),
    [
        ({"filename": "=HYPERLINK(1)_000000000001.jpg"}, [], "field 'filename' begins with '='"),
        ({"filename": "@SUM_000000000001.jpg"}, [], "field 'filename' begins with '@'"),
        ({"filename": "+x_000000000001.jpg"}, [], "field 'filename' begins with '+'"),
        ({"filename": "-2+3_000000000001.jpg"}, [], "images[1] (-2+3_000000000001.jpg): field 'filename' begins"),
        ({"filepath": "=folder"}, [], "images[1] (COCO_val2014_000000000002.jpg): field 'filepath' begins with '='"),
        ({}, ["--key-prefix=-COCO"], "key prefix '-COCO' begins with '-'"),
    ],
    ids=["equals", "at", "plus", "minus", "filepath", "key-prefix"],
)
def test_the_import_refuses_ids_and_file_names_a_spreadsheet_would_run(tmp_path, change, options, message):
    """CxC files stay byte-compatible, so keys that begin like a formula cannot be escaped
    when exported: the import refuses them, naming the entry, and writes nothing."""
    entries = [image_entry(1, sentids=(1,)), {**image_entry(2, sentids=(2,)), **change}]
    path = write_json(tmp_path, {"images": entries})
    with pytest.raises(CommandError) as refused:
        call_command("import_karpathy", str(path), "--name", "coco", "--image-url-prefix", "https://x/", *options)
    assert message in str(refused.value)
    assert "spreadsheets read as the start of a formula" in str(refused.value)
    assert table_counts() == {"Dataset": 0, "Split": 0, "Image": 0, "Caption": 0}
