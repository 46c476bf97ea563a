"""Importing a dataset's object annotations from a COCO instances file (``coco_objects``
reads it as a stream, in two passes).

Each image of the file is matched to an image of the dataset by its COCO id (the
dataset's ``cocoid``, from the Karpathy file), else by its file name (the dataset's image
key, or the last part of its file path). A name or COCO id that two of the dataset's
images share matches neither. The matched images' objects are replaced by the file's
(an image may be matched again by a later import, of the same or another file; images
the file does not match keep theirs); annotations of unmatched images are counted and
skipped. All or nothing: the objects are written in batches inside one transaction, so
a problem found in the file's last annotation leaves the database as it was.
"""

from __future__ import annotations

import io
import logging
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath

from django.db import connection, transaction

from annotation.catalog.coco_objects import CocoError, CocoImage, CocoIndex, coco_index, coco_objects
from annotation.core.errors import DatasetImportError, NotFound
from annotation.core.progress import Progress, no_progress
from annotation.core.sql import default_vendor
from annotation.models import Dataset, Image, ObjectAnnotation
from annotation.models.objects import CATEGORY_CHARS, MAX_MEASURE

logger = logging.getLogger(__name__)

BULK_BATCH = 5_000
PROGRESS_EVERY = 20_000
_AMBIGUOUS = -1


@dataclass(frozen=True)
class ObjectImportSummary:
    dataset_id: int
    categories: int
    images_in_file: int
    matched_by_cocoid: int
    matched_by_file_name: int
    images_unmatched: int
    objects_imported: int
    objects_of_unmatched_images: int
    objects_replaced: int

    def as_dict(self) -> dict:
        return asdict(self)


def dataset_import_objects(
    *, path: str | Path, dataset_name: str, progress: Progress | None = None
) -> ObjectImportSummary:
    """Import the object annotations of ``path`` into the dataset's matched images.
    Raises NotFound for an unknown dataset and DatasetImportError naming the problem (bad
    JSON by line and column, an annotation of an unknown category or image, a negative
    area, a file none of whose images match); nothing is written then."""
    progress = progress or no_progress
    dataset = Dataset.objects.filter(name=dataset_name).first()
    if dataset is None:
        raise NotFound(f"no dataset {dataset_name!r}")
    matcher = _Matcher(dataset, path)
    progress(0, 0, "reading categories and images")
    try:
        index = coco_index(path, match=matcher.match, category_chars=CATEGORY_CHARS)
    except CocoError as exc:
        raise DatasetImportError(str(exc)) from exc
    matched = {coco_id: image_id for coco_id, image_id in index.images.items() if image_id is not None}
    if not matched:
        raise DatasetImportError(
            f"{path}: none of the file's {len(index.images):,} images is an image of dataset {dataset_name!r} "
            "(matched by COCO id, else by file name)"
        )
    with transaction.atomic():
        replaced = _remove_objects(sorted(set(matched.values())))
        imported, skipped = _write_objects(path, index, matched, progress)
    summary = ObjectImportSummary(
        dataset_id=dataset.id,
        categories=len(index.categories),
        images_in_file=len(index.images),
        matched_by_cocoid=matcher.by["cocoid"],
        matched_by_file_name=matcher.by["file name"],
        images_unmatched=len(index.images) - len(matched),
        objects_imported=imported,
        objects_of_unmatched_images=skipped,
        objects_replaced=replaced,
    )
    logger.info("imported objects into %s: %s", dataset_name, summary)
    return summary


class _Matcher:
    """The dataset's images by COCO id and by file name (key and file path's last part),
    each name or id shared by two images marked ambiguous; ``match`` counts how each image
    of the file matched, and refuses a second image of the file matching the same one."""

    def __init__(self, dataset: Dataset, path: str | Path):
        self.path = path
        self.by_cocoid: dict[int, int] = {}
        self.by_name: dict[str, int] = {}
        rows = Image.objects.filter(dataset=dataset).values_list("id", "cocoid", "key", "file_path")
        for image_id, cocoid, key, file_path in rows.iterator(chunk_size=BULK_BATCH):
            if cocoid is not None:
                _add(self.by_cocoid, cocoid, image_id)
            for name in {key, PurePosixPath(file_path).name}:
                _add(self.by_name, name, image_id)
        self.taken: dict[int, int] = {}
        self.by: Counter[str] = Counter()

    def match(self, image: CocoImage) -> int | None:
        found, how = self.by_cocoid.get(image.id), "cocoid"
        if found is None or found == _AMBIGUOUS:
            found, how = self.by_name.get(PurePosixPath(image.file_name).name), "file name"
        if found is None or found == _AMBIGUOUS:
            return None
        if found in self.taken:
            raise CocoError(
                f"{self.path}: images with ids {self.taken[found]} and {image.id} both match one image of the dataset "
                f"(image {found}, by COCO id or file name)"
            )
        self.taken[found] = image.id
        self.by[how] += 1
        return found


def _add(table: dict, name, image_id: int) -> None:
    table[name] = image_id if table.get(name, image_id) == image_id else _AMBIGUOUS


def _remove_objects(image_ids: list[int]) -> int:
    removed = 0
    for start in range(0, len(image_ids), BULK_BATCH):
        removed += ObjectAnnotation.objects.filter(image_id__in=image_ids[start : start + BULK_BATCH]).delete()[0]
    return removed


def _write_objects(path, index: CocoIndex, matched: dict[int, int], progress: Progress) -> tuple[int, int]:
    """The file's annotations of matched images, in batches; (written, skipped)."""
    rows: list[tuple] = []
    written = skipped = 0
    try:
        for position, item in coco_objects(path, index, max_measure=MAX_MEASURE):
            image_id = matched.get(item.image_id)
            if image_id is None:
                skipped += 1
            else:
                category = index.categories[item.category_id]
                rows.append(
                    (image_id, category, item.category_id, item.annotation_id, *item.bbox, item.area, item.iscrowd)
                )
                if len(rows) == BULK_BATCH:
                    written += _insert(rows)
            if position % PROGRESS_EVERY == 0:
                progress(position, 0, "reading annotations")
    except CocoError as exc:
        raise DatasetImportError(str(exc)) from exc
    return written + _insert(rows), skipped


_COLUMNS = ("image_id", "category", "coco_category_id", "coco_annotation_id")
_COLUMNS += ("bbox_x", "bbox_y", "bbox_w", "bbox_h", "area", "iscrowd")


def _insert(rows: list[tuple]) -> int:
    """Write the rows (in _COLUMNS' order) and empty the list. On PostgreSQL one COPY:
    building ORM objects and a statement of 50,000 parameters per batch took four
    times as long as reading the file."""
    count = len(rows)
    if not rows:
        return 0
    if default_vendor() == "postgresql":
        text = io.StringIO("".join("\t".join(map(_copy_value, row)) + "\n" for row in rows))
        with connection.cursor() as cursor:
            table = ObjectAnnotation._meta.db_table
            cursor.copy_expert(f"COPY {table} ({', '.join(_COLUMNS)}) FROM STDIN", text)
    else:
        ObjectAnnotation.objects.bulk_create(
            [ObjectAnnotation(**dict(zip(_COLUMNS, row, strict=True))) for row in rows]
        )
    rows.clear()
    return count


def _copy_value(value) -> str:
    """A value in COPY's text format: NULL as \\N, booleans as t/f, text escaped."""
    if value is None:
        return "\\N"
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, str):
        return value.translate(_COPY_ESCAPES)
    return repr(value)


_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
