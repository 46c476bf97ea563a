"""Pure tests of the Karpathy JSON parser: keys as CxC writes them, and every bad input."""

import json

import pytest

from annotation.karpathy import KarpathyError, parse_karpathy


def image_entry(cocoid=32001, split="val", sentids=(190268, 315773), filename=None, filepath="val2014"):
    filename = filename or f"COCO_val2014_{cocoid:012d}.jpg"
    return {
        "filepath": filepath,
        "filename": filename,
        "split": split,
        "cocoid": cocoid,
        "sentids": list(sentids),
        "sentences": [{"raw": f"caption {s}", "tokens": ["caption"], "sentid": s} for s in sentids],
    }


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
