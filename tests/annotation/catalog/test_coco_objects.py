"""Reading a COCO instances file (annotation/catalog/coco_objects.py) in two streamed
passes, and the several arrays of ``json_stream.JsonArrays``. Pure: no database."""

import io
import json

import pytest

from annotation.catalog.coco_objects import CocoError, CocoImage, coco_index, coco_objects
from annotation.catalog.json_stream import JsonArrays, TooLong
from tests.support.coco import coco_annotation, coco_image, write_coco


def _match_all(image: CocoImage) -> int:
    return image.id * 10


def _read(path):
    index = coco_index(path, match=_match_all, category_chars=100)
    return index, [item for _, item in coco_objects(path, index, max_measure=1e6)]


@pytest.mark.parametrize(
    "order",
    [
        ("images", "annotations", "categories"),
        ("annotations", "categories", "images"),
        ("categories", "images", "annotations"),
    ],
)
def test_the_arrays_may_come_in_any_order(tmp_path, order):
    path = write_coco(
        tmp_path / "instances.json",
        images=[coco_image(1), coco_image(2)],
        annotations=[coco_annotation(7, 1, 18), coco_annotation(8, 2, 17, bbox=(1.5, 2, 3, 4), area=9.25)],
        order=order,
    )
    index, objects = _read(path)
    assert index.categories == {17: "cat", 18: "dog", 34: "frisbee"}
    assert index.images == {1: 10, 2: 20}
    assert [(o.annotation_id, o.image_id, o.category_id, o.bbox, o.area) for o in objects] == [
        (7, 1, 18, (10.0, 20.0, 30.0, 40.0), 1200.0),
        (8, 2, 17, (1.5, 2.0, 3.0, 4.0), 9.25),
    ]


def _refusal(tmp_path, *, images=None, annotations=(), categories=None, text=None):
    path = tmp_path / "instances.json"
    if text is not None:
        path.write_text(text)
    else:
        write_coco(path, images=images or [coco_image(1)], annotations=list(annotations), categories=categories)
    with pytest.raises(CocoError) as refused:
        _read(path)
    return str(refused.value).removeprefix(f"{path}: ")


@pytest.mark.parametrize(
    ("annotation", "message"),
    [
        (coco_annotation(5, 1, 99), "annotations[1] (id 5): category_id 99 is not among the file's categories"),
        (coco_annotation(5, 2, 18), "annotations[1] (id 5): image_id 2 is not among the file's images"),
        (
            coco_annotation(5, 1, 18, area=-1),
            "annotations[1] (id 5): field 'area' must be a number from 0 to 1e+06, got -1",
        ),
        (coco_annotation(5, 1, 18, bbox=(0, 0, -2, 3)), "annotations[1] (id 5): field 'bbox' has a negative width"),
        (
            coco_annotation(5, 1, 18, area=2e6),
            "annotations[1] (id 5): field 'area' must be a number from 0 to 1e+06, got 2000000.0",
        ),
        (
            coco_annotation(5, 1, 18, bbox=(-2e6, 0, 1, 1)),
            "annotations[1] (id 5): field 'bbox' has a number beyond 1e+06",
        ),
        (
            {**coco_annotation(5, 1, 18), "bbox": [1, 2, 3]},
            "annotations[1] (id 5): field 'bbox' must be four finite numbers",
        ),
        (
            {**coco_annotation(5, 1, 18), "image_id": "1"},
            "annotations[1] (id 5): field 'image_id' must be a whole number, got '1'",
        ),
        (
            {**coco_annotation(5, 1, 18), "category_id": True},
            "annotations[1] (id 5): field 'category_id' must be a whole number, got True",
        ),
        ({**coco_annotation(5, 1, 18), "iscrowd": 2}, "annotations[1] (id 5): field 'iscrowd' must be 0 or 1, got 2"),
        (
            {**coco_annotation(5, 1, 18), "image_id": 2**63},
            "annotations[1] (id 5): field 'image_id' is 9223372036854775808, outside",
        ),
    ],
)
def test_a_bad_annotation_is_named_by_its_position_and_id(tmp_path, annotation, message):
    assert _refusal(tmp_path, annotations=[coco_annotation(4, 1, 18), annotation]).startswith(message)


def test_an_area_that_json_reads_as_infinite_is_refused(tmp_path):
    text = json.dumps({"images": [coco_image(1)], "categories": [{"id": 1, "name": "dog"}], "annotations": []})
    text = text.replace(
        '"annotations": []', '"annotations": [{"image_id": 1, "category_id": 1, "bbox": [0,0,1,1], "area": 1e999}]'
    )
    assert _refusal(tmp_path, text=text).startswith(
        "annotations[0]: field 'area' must be a number from 0 to 1e+06, got inf"
    )


@pytest.mark.parametrize(
    ("categories", "images", "message"),
    [
        ([{"id": 1, "name": "dog"}, {"id": 1, "name": "cat"}], None, "categories[1]: category id 1 repeats"),
        (
            [{"id": 1, "name": "dog"}, {"id": 2, "name": " dog"}],
            None,
            "categories[1]: category name 'dog' repeats (id 1)",
        ),
        ([{"id": 1, "name": ""}], None, "categories[0] (id 1): field 'name' must be a non-empty string"),
        ([{"id": 1, "name": "d" * 101}], None, "categories[0] (id 1): field 'name' is over 100 characters"),
        ([], None, "the file has no categories"),
        (None, [coco_image(1), coco_image(1)], "images[1]: image id 1 repeats"),
        (None, [{"file_name": "a.jpg"}], "images[0]: field 'id' must be a whole number, got None"),
    ],
)
def test_bad_categories_and_images_are_named(tmp_path, categories, images, message):
    assert _refusal(tmp_path, categories=categories, images=images) == message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"images": [], "categories": [], "annotations": [1 2]}', "not valid JSON (line 1 column 52: expected ','"),
        ("[1, 2]", "expected an object with 'categories', 'images', 'annotations' arrays"),
        ('{"images": [], "categories": [{"id": 1, "name": "dog"}]}', "no 'annotations' array; expected"),
        ('{"images": {}, "annotations": []}', "no 'categories' or 'images' array; expected"),
    ],
)
def test_bad_json_and_missing_arrays_are_named(tmp_path, text, message):
    assert _refusal(tmp_path, text=text).startswith(message)


def test_arrays_not_asked_for_are_skipped_entry_by_entry_whatever_their_length(monkeypatch):
    monkeypatch.setattr("annotation.catalog.json_stream.WINDOW_CHARS", 16)
    text = '{"big": [' + ", ".join(['"' + "x" * 50 + '"'] * 100) + '], "images": [1, 2], "z": {"k": 1}}'
    arrays = JsonArrays(io.StringIO(text), members={"images", "absent"}, max_entry_chars=80)
    assert list(arrays) == [("images", 1), ("images", 2)]
    assert arrays.found == {"images"}
    with pytest.raises(TooLong):  # an entry over the bound is refused all the same
        list(JsonArrays(io.StringIO('{"big": ["' + "x" * 100 + '"]}'), members=(), max_entry_chars=80))
