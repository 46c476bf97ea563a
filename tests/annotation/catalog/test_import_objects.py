"""Importing object annotations (annotation/catalog/objects.py, ``manage.py import_objects``)
into PostgreSQL: matching by COCO id and file name, replacing, all or nothing, the
database's constraints, and memory that stays flat as the file grows."""

import math
import tracemalloc

import pytest
from django.core.management import CommandError, call_command
from django.db import IntegrityError, transaction

from annotation.catalog.objects import dataset_import_objects
from annotation.core.errors import DatasetImportError, NotFound
from annotation.models import ObjectAnnotation
from tests.factories import DatasetFactory, ImageFactory, SplitFactory
from tests.support.coco import coco_annotation, coco_image, write_coco, write_large_coco

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]
COLUMNS = (
    "category",
    "coco_category_id",
    "coco_annotation_id",
    "bbox_x",
    "bbox_y",
    "bbox_w",
    "bbox_h",
    "area",
    "iscrowd",
)


@pytest.fixture
def split():
    return SplitFactory(dataset=DatasetFactory(name="coco"))


def _stored(image):
    return sorted(image.annotated_objects.values_list("category", "coco_category_id", "area"))


def test_images_match_by_coco_id_else_by_file_name_and_the_rest_are_counted(tmp_path, split):
    by_id = ImageFactory(split=split, cocoid=1)
    by_name = ImageFactory(split=split, cocoid=None, key="COCO_val2014_000000000002.jpg")
    by_path = ImageFactory(split=split, cocoid=None, key="two", file_path="val2014/000000000003.jpg")
    path = write_coco(
        tmp_path / "instances.json",
        images=[coco_image(1, "renamed.jpg"), coco_image(2), coco_image(3, "000000000003.jpg"), coco_image(4)],
        annotations=[
            coco_annotation(1, 1, 18, area=5),
            coco_annotation(2, 1, 18, area=6),
            coco_annotation(3, 2, 34, area=7),
            coco_annotation(4, 3, 17, area=8),
            coco_annotation(5, 4, 17, area=9),
        ],
    )
    summary = dataset_import_objects(path=path, dataset_name="coco")
    assert (summary.matched_by_cocoid, summary.matched_by_file_name, summary.images_unmatched) == (1, 2, 1)
    assert (summary.objects_imported, summary.objects_of_unmatched_images, summary.categories) == (4, 1, 3)
    assert _stored(by_id) == [("dog", 18, 5.0), ("dog", 18, 6.0)]
    assert _stored(by_name) == [("frisbee", 34, 7.0)]
    assert _stored(by_path) == [("cat", 17, 8.0)]
    stored = ObjectAnnotation.objects.get(coco_annotation_id=3)
    assert (stored.bbox_x, stored.bbox_y, stored.bbox_w, stored.bbox_h, stored.iscrowd) == (10, 20, 30, 40, False)


def test_the_orm_path_of_other_databases_writes_the_same_rows(tmp_path, split, monkeypatch):
    image = ImageFactory(split=split, cocoid=1)
    path = write_coco(
        tmp_path / "i.json",
        images=[coco_image(1)],
        annotations=[coco_annotation(1, 1, 18, area=5), {**coco_annotation(2, 1, 34, area=0.25), "iscrowd": 1}],
        categories=[{"id": 18, "name": "dog\\ta\tb\n"}, {"id": 34, "name": "frisbee"}],
    )
    dataset_import_objects(path=path, dataset_name="coco")
    copied = list(image.annotated_objects.order_by("coco_annotation_id").values_list(*COLUMNS))
    monkeypatch.setattr("annotation.catalog.objects.default_vendor", lambda: "sqlite")
    dataset_import_objects(path=path, dataset_name="coco")
    assert list(image.annotated_objects.order_by("coco_annotation_id").values_list(*COLUMNS)) == copied
    assert copied == [
        ("dog\\ta\tb", 18, 1, 10.0, 20.0, 30.0, 40.0, 5.0, False),
        ("frisbee", 34, 2, 10.0, 20.0, 30.0, 40.0, 0.25, True),
    ]


def test_a_file_name_two_images_share_matches_neither(tmp_path, split):
    ImageFactory(split=split, cocoid=None, key="a", file_path="train2014/x.jpg")
    ImageFactory(split=split, cocoid=None, key="b", file_path="val2014/x.jpg")
    only = ImageFactory(split=split, cocoid=7)
    path = write_coco(
        tmp_path / "i.json",
        images=[coco_image(1, "x.jpg"), coco_image(7)],
        annotations=[coco_annotation(1, 1, 18), coco_annotation(2, 7, 18)],
    )
    summary = dataset_import_objects(path=path, dataset_name="coco")
    assert (summary.images_unmatched, summary.objects_imported) == (1, 1)
    assert ObjectAnnotation.objects.get().image == only


def test_importing_again_replaces_the_matched_images_objects_and_keeps_the_others(tmp_path, split):
    first, second = ImageFactory(split=split, cocoid=1), ImageFactory(split=split, cocoid=2)
    both = write_coco(
        tmp_path / "a.json",
        images=[coco_image(1), coco_image(2)],
        annotations=[coco_annotation(1, 1, 18), coco_annotation(2, 2, 17)],
    )
    dataset_import_objects(path=both, dataset_name="coco")
    again = write_coco(
        tmp_path / "b.json", images=[coco_image(1)], annotations=[coco_annotation(9, 1, 34), coco_annotation(10, 1, 34)]
    )
    summary = dataset_import_objects(path=again, dataset_name="coco")
    assert (summary.objects_replaced, summary.objects_imported) == (1, 2)
    assert [c for c, _, _ in _stored(first)] == ["frisbee", "frisbee"]
    assert [c for c, _, _ in _stored(second)] == ["cat"]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (coco_annotation(99, 1, 5), "annotations[2] (id 99): category_id 5 is not among the file's categories"),
        (
            coco_annotation(99, 1, 18, area=-3),
            "annotations[2] (id 99): field 'area' must be a number from 0 to 1e+15, got -3",
        ),
    ],
)
def test_a_problem_in_the_last_annotation_leaves_the_database_as_it_was(tmp_path, split, bad, message):
    image = ImageFactory(split=split, cocoid=1)
    ObjectAnnotation.objects.create(image=image, category="cat", bbox_x=0, bbox_y=0, bbox_w=1, bbox_h=1, area=1)
    path = write_coco(
        tmp_path / "i.json",
        images=[coco_image(1)],
        annotations=[coco_annotation(1, 1, 18), coco_annotation(2, 1, 18), bad],
    )
    with pytest.raises(DatasetImportError) as refused:
        dataset_import_objects(path=path, dataset_name="coco")
    assert str(refused.value).startswith(f"{path}: {message}")
    assert _stored(image) == [("cat", None, 1.0)]


def test_a_file_matching_no_image_or_an_unknown_dataset_is_refused(tmp_path, split):
    ImageFactory(split=split, cocoid=1)
    path = write_coco(tmp_path / "i.json", images=[coco_image(5)], annotations=[coco_annotation(1, 5, 18)])
    with pytest.raises(DatasetImportError, match="none of the file's 1 images is an image of dataset 'coco'"):
        dataset_import_objects(path=path, dataset_name="coco")
    with pytest.raises(NotFound, match="no dataset 'other'"):
        dataset_import_objects(path=path, dataset_name="other")


def test_two_images_of_the_file_matching_one_image_are_refused(tmp_path, split):
    ImageFactory(split=split, cocoid=1, key="COCO_val2014_000000000001.jpg")
    path = write_coco(
        tmp_path / "i.json",
        images=[coco_image(1, "x.jpg"), coco_image(2, "COCO_val2014_000000000001.jpg")],
        annotations=[],
    )
    with pytest.raises(DatasetImportError, match="images with ids 1 and 2 both match one image of the dataset"):
        dataset_import_objects(path=path, dataset_name="coco")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("area", -1.0),
        ("area", math.nan),
        ("area", math.inf),
        ("area", 2e15),
        ("bbox_w", -0.5),
        ("bbox_h", math.nan),
        ("bbox_x", -math.inf),
        ("bbox_y", 2e15),
    ],
)
def test_the_database_refuses_an_object_whose_size_or_box_is_not_a_number_within_bounds(split, field, value):
    image = ImageFactory(split=split)
    values = {"bbox_x": 0, "bbox_y": 0, "bbox_w": 1, "bbox_h": 1, "area": 1, field: value}
    with pytest.raises(IntegrityError, match="object_"), transaction.atomic():
        ObjectAnnotation.objects.create(image=image, category="dog", **values)


def test_the_database_refuses_an_empty_category(split):
    with pytest.raises(IntegrityError, match="object_category_not_empty"), transaction.atomic():
        ObjectAnnotation.objects.create(
            image=ImageFactory(split=split), category="", bbox_x=0, bbox_y=0, bbox_w=1, bbox_h=1, area=1
        )


def test_the_command_reports_the_counts_and_names_a_problem(tmp_path, split, capsys):
    ImageFactory(split=split, cocoid=1)
    path = write_coco(
        tmp_path / "i.json", images=[coco_image(1), coco_image(2)], annotations=[coco_annotation(1, 1, 18)]
    )
    call_command("import_objects", "coco", str(path))
    assert (
        "dataset 'coco': imported 1 objects of 3 categories into 1 images (1 matched by COCO id, 0 by file name); "
        "1 of the file's images matched none (0 objects skipped); 0 earlier objects replaced"
    ) in capsys.readouterr().out
    (tmp_path / "bad.json").write_text('{"images": [')
    with pytest.raises(CommandError, match=r"bad.json: not valid JSON \(line 1 column 13"):
        call_command("import_objects", "coco", str(tmp_path / "bad.json"))


def _import_peak(path) -> int:
    tracemalloc.start()
    try:
        dataset_import_objects(path=path, dataset_name="coco")
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_memory_stays_flat_as_the_file_grows_to_200k_annotations(tmp_path, split):
    for cocoid in range(1, 201):
        ImageFactory(split=split, cocoid=cocoid)
    small = write_large_coco(tmp_path / "small.json", images=200, annotations=20_000)
    large = write_large_coco(tmp_path / "large.json", images=200, annotations=200_000)
    assert large.stat().st_size > 9 * small.stat().st_size
    small_peak = _import_peak(small)
    large_peak = _import_peak(large)
    assert ObjectAnnotation.objects.count() == 200_000
    # The peak is a window of the text and one batch of rows, whatever the file's length
    # (measured: 6.4 MiB for 20k annotations, 7.3 MiB for 200k in a 30 MB file).
    assert large_peak < 16 * 2**20, f"peak {large_peak / 2**20:.1f} MiB"
    assert large_peak < 1.5 * small_peak, f"{large_peak / 2**20:.1f} MiB against {small_peak / 2**20:.1f} MiB"
