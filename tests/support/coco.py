"""COCO instances files for the object import's tests: small ones from lists, large ones
written entry by entry."""

from __future__ import annotations

import json
from pathlib import Path

CATEGORIES = [
    {"supercategory": "animal", "id": 17, "name": "cat"},
    {"supercategory": "animal", "id": 18, "name": "dog"},
]
CATEGORIES += [{"supercategory": "sports", "id": 34, "name": "frisbee"}]


def coco_image(image_id: int, file_name: str | None = None) -> dict:
    return {
        "license": 1,
        "file_name": file_name or f"COCO_val2014_{image_id:012d}.jpg",
        "height": 480,
        "width": 640,
        "id": image_id,
    }


def coco_annotation(annotation_id: int, image_id: int, category_id: int, bbox=(10, 20, 30, 40), area=None) -> dict:
    x, y, width, height = bbox
    return {
        "segmentation": [[x, y, x + width, y, x + width, y + height, x, y + height]],
        "area": width * height if area is None else area,
        "iscrowd": 0,
        "image_id": image_id,
        "bbox": list(bbox),
        "category_id": category_id,
        "id": annotation_id,
    }


def write_coco(
    path: Path,
    *,
    images: list[dict],
    annotations: list[dict],
    categories: list[dict] | None = None,
    order: tuple[str, ...] = ("images", "annotations", "categories"),
) -> Path:
    """A COCO instances file with its arrays in ``order`` (COCO's own files put the
    categories last), after an ``info`` member."""
    arrays = {
        "images": images,
        "annotations": annotations,
        "categories": CATEGORIES if categories is None else categories,
    }
    document = {"info": {"description": "test"}, **{name: arrays[name] for name in order}}
    path.write_text(json.dumps(document, indent=1))
    return path


def write_large_coco(path: Path, *, images: int, annotations: int) -> Path:
    """A file of ``annotations`` annotations spread over ``images`` images (ids 1..images),
    written one entry at a time, the categories last as COCO writes them."""
    with path.open("w") as out:
        out.write('{"info": {"description": "large"}, "images": [')
        out.write(", ".join(json.dumps(coco_image(i)) for i in range(1, images + 1)))
        out.write('], "annotations": [')
        for number in range(annotations):
            entry = coco_annotation(number + 1, number % images + 1, (17, 18, 34)[number % 3], area=100.0 + number)
            out.write(("" if number == 0 else ", ") + json.dumps(entry))
        out.write('], "categories": ' + json.dumps(CATEGORIES) + "}")
    return path
