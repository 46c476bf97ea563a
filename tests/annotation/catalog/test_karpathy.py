"""Pure tests of the Karpathy JSON parser: keys as CxC writes them, and every bad input."""

import json

import pytest

from annotation.catalog.karpathy import FieldLimits, KarpathyError, parse_karpathy
from tests.support.karpathy import image_entry


def write(tmp_path, payload, name="dataset_coco.json"):
    path = tmp_path / name
    path.write_text(json.dumps(payload) if not isinstance(payload, str) else payload)
    return path


def test_keys_match_the_cxc_release(tmp_path):
    path = write(tmp_path, {"images": [image_entry()]})
    [record] = parse_karpathy(path)
    assert record.key == "COCO_val2014_000000032001.jpg"
    assert record.file_path == "val2014/COCO_val2014_000000032001.jpg"
    assert [c.key for c in record.captions] == ["COCO_val2014:sentid:190268", "COCO_val2014:sentid:315773"]
    assert record.captions[0].text == "caption 190268"


def test_key_prefix_spells_cxc_keys_for_2017_names(tmp_path):
    entry = image_entry(cocoid=790, filename="000000000790.jpg", filepath="images")
    [record] = parse_karpathy(write(tmp_path, {"images": [entry]}), key_prefix="COCO_val2014")
    assert record.key == "COCO_val2014_000000000790.jpg"
    assert record.file_path == "images/000000000790.jpg"
    assert record.captions[0].key == "COCO_val2014:sentid:190268"


def test_split_filter(tmp_path):
    payload = {"images": [image_entry(1, "val", (1,)), image_entry(2, "test", (2,)), image_entry(3, "train", (3,))]}
    records = parse_karpathy(write(tmp_path, payload), splits=["val", "test"])
    assert sorted(r.split for r in records) == ["test", "val"]


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ("{not json", "not valid JSON"),
        ({"imgs": []}, "expected an object with an 'images' list"),
        ({"images": [{"split": "val", "sentences": []}]}, r"images\[0\]: missing field 'filename'"),
        ({"images": [{**image_entry(), "split": 3}]}, "field 'split' must be str"),
        (
            {"images": [{k: v for k, v in image_entry().items() if k != "sentences"}]},
            r"images\[0\] \(COCO_val2014_000000032001.jpg\): missing field 'sentences'",
        ),
        ({"images": [{**image_entry(), "sentences": []}]}, "has no sentences"),
        (
            {"images": [{**image_entry(), "sentences": [{"raw": "x"}]}]},
            r"sentences\[0\]: missing field 'sentid'",
        ),
        ({"images": [{**image_entry(), "sentences": [{"raw": " ", "sentid": 5}]}]}, "caption text is empty"),
        ({"images": [image_entry(1, sentids=(7,)), image_entry(2, sentids=(7,))]}, r"sentid 7 repeats images\[0\]"),
        ({"images": [image_entry(1, sentids=(7,)), image_entry(1, sentids=(8,))]}, "image key .* repeats"),
        ({"images": [image_entry(filename="plain.jpg")]}, "give a key prefix"),
        ({"images": [{**image_entry(), "cocoid": "x"}]}, "'cocoid' must be an integer"),
    ],
)
def test_bad_input_names_the_problem(tmp_path, payload, message):
    path = write(tmp_path, payload)
    with pytest.raises(KarpathyError, match=message) as info:
        parse_karpathy(path)
    assert str(path) in str(info.value)


def test_missing_split_is_named(tmp_path):
    path = write(tmp_path, {"images": [image_entry()]})
    with pytest.raises(KarpathyError, match="split\\(s\\) test not in the file; it has: val"):
        parse_karpathy(path, splits=["val", "test"])


def test_missing_file(tmp_path):
    with pytest.raises(KarpathyError, match="file not found"):
        parse_karpathy(tmp_path / "absent.json")


def deep_json(levels: int) -> str:
    return '{"images": ' + "[" * levels + "]" * levels + "}"


def with_sentence(**changes) -> dict:
    entry = image_entry(sentids=(1, 2))
    entry["sentences"][1].update(changes)
    return entry


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (
            {"images": [with_sentence(raw="a cat\x00on a mat")]},
            r"images\[0\] \(COCO_val2014_000000032001.jpg\) sentences\[1\].raw \(sentid 2\) has a NUL character "
            r"\(U\+0000\) at character 6",
        ),
        ({"images": [{**image_entry(), "split": "v\x00al"}]}, r"images\[0\] .*field 'split' has a NUL character"),
        ({"images": [{**image_entry(), "filepath": "val\x002014"}]}, "field 'filepath' has a NUL character"),
        (
            {"images": [with_sentence(sentid=2**70)]},
            r"sentences\[1\]: field 'sentid' is 1180591620717411303424, outside the 64-bit range",
        ),
        (
            {"images": [image_entry(cocoid=2**70)]},
            r"images\[0\] \(COCO_val2014_1180591620717411303424.jpg\): field 'cocoid' is 1180591620717411303424, "
            "outside the 64-bit range",
        ),
        ({"images": [{**image_entry(), "filepath": "../../.."}]}, r"field 'filepath' '../../..' leaves the images"),
        ({"images": [{**image_entry(), "filepath": "/etc"}]}, r"field 'filepath' '/etc' leaves the images folder"),
        ({"images": [{**image_entry(), "filepath": "val2014/../.."}]}, "leaves the images folder"),
        (
            {"images": [image_entry(filename="../COCO_val2014_000000000001.jpg")]},
            r"field 'filename' must name one file \(its folder goes in 'filepath'\)",
        ),
        (deep_json(200_000), "JSON nested too deeply to read"),
    ],
)
def test_values_that_cannot_be_stored_or_leave_the_images_folder_are_named(tmp_path, payload, message):
    path = write(tmp_path, payload)
    with pytest.raises(KarpathyError, match=message) as info:
        parse_karpathy(path)
    assert str(path) in str(info.value)


LIMITS = FieldLimits(caption_chars=20, filename_chars=40, key_chars=50, split_chars=5)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (with_sentence(raw="x" * 21), r"sentences\[1\].raw: 21 characters, more than UPLOAD_MAX_CAPTION_CHARS=20"),
        (
            image_entry(filename=f"COCO_{'x' * 30}_000000000001.jpg"),
            r"images\[0\].filename: 52 characters, more than UPLOAD_MAX_FILENAME_CHARS=40",
        ),
        ({**image_entry(), "filepath": "f" * 41}, r"\.filepath: 41 characters, more than UPLOAD_MAX_FILENAME_CHARS=40"),
        ({**image_entry(), "split": "validation"}, r"\.split: 10 characters, more than the column's limit of 5"),
        (
            image_entry(filename=f"{'p' * 32}_1.jpg"),
            r"image key 'p+_1.jpg'... is 38 characters, more than the 30 a key can hold",
        ),
        (
            {**image_entry(filename=f"{'p' * 20}_1.jpg"), "sentences": [{"raw": "short", "sentid": 2**62}]},
            r"sentences\[0\]: caption key 'p+:sentid:4611686018427387904'... is 47 characters, more than the 30",
        ),
    ],
)
def test_limits_name_the_entry_the_field_and_the_limit(tmp_path, entry, message):
    limits = FieldLimits(caption_chars=20, filename_chars=40, key_chars=30, split_chars=5)
    with pytest.raises(KarpathyError, match=message):
        parse_karpathy(write(tmp_path, {"images": [entry]}), limits=limits)


def test_values_at_the_limits_are_read(tmp_path):
    entry = image_entry(cocoid=2**63 - 1, filename="COCO_val2014_000000000001.jpg", sentids=(2**63 - 1,))
    entry["sentences"][0]["raw"] = "x" * 20
    [record] = parse_karpathy(write(tmp_path, {"images": [entry]}), limits=LIMITS)
    assert record.cocoid == 2**63 - 1
    assert record.captions[0].sentid == 2**63 - 1
    assert record.captions[0].text == "x" * 20
