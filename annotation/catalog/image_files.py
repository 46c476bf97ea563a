"""A dataset's picture files: that each exists and can be read, and its size as a browser
shows it, read from the file's header (no decode). The import records the sizes; the
pages give each picture its box from them before the file arrives.
``image_sizes_refresh`` reads them again for a dataset imported before (its files
replaced, or imported by a version that did not turn a sideways photo's size).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from django.db import transaction
from PIL import Image as PILImage
from PIL import UnidentifiedImageError

from annotation.core.errors import DatasetImportError, NotFound
from annotation.core.progress import Progress, no_progress
from annotation.models import Dataset, Image

# EXIF orientations that turn the picture a quarter: browsers show it turned
# (image-orientation: from-image), so its width and height swap.
_QUARTER_TURNS = frozenset({5, 6, 7, 8})
_EXIF_ORIENTATION = 0x0112
_BULK_BATCH = 5_000
_MISSING_SHOWN = 5


class PictureFile(Protocol):
    key: str
    file_path: str


@dataclass(frozen=True)
class SizeRefresh:
    """What ``image_sizes_refresh`` did: pictures read, sizes that changed."""

    images: int
    changed: int


def shown_size(img: PILImage.Image) -> tuple[int, int]:
    """The picture's width and height as a browser shows it, from the header alone."""
    width, height = img.size
    if img.getexif().get(_EXIF_ORIENTATION) in _QUARTER_TURNS:
        return height, width
    return width, height


def read_image_sizes(
    root: Path, records: Iterable[PictureFile], progress: Progress = no_progress
) -> dict[str, tuple[int, int]]:
    """Each record's (width, height) by its key. Checks every file exists first, then
    reads each header; DatasetImportError names the missing or unreadable files."""
    records = list(records)
    missing = [r.file_path for r in records if not (root / r.file_path).is_file()]
    if missing:
        shown = ", ".join(missing[:_MISSING_SHOWN])
        more = f" and {len(missing) - _MISSING_SHOWN} more" if len(missing) > _MISSING_SHOWN else ""
        raise DatasetImportError(f"{len(missing)} image file(s) missing below {root}: {shown}{more}")
    sizes = {}
    for position, record in enumerate(records):
        try:
            with PILImage.open(root / record.file_path) as img:
                sizes[record.key] = shown_size(img)
        except (UnidentifiedImageError, OSError) as exc:
            raise DatasetImportError(f"{root / record.file_path}: not a readable image ({exc})") from exc
        if position % 1000 == 0:
            progress(position, len(records), "checking image files")
    return sizes


def image_sizes_refresh(*, dataset_name: str, progress: Progress = no_progress) -> SizeRefresh:
    """Read every picture's size of ``dataset_name`` from its file again and store the ones
    that differ. All or nothing: a missing or unreadable file stops it before any write."""
    dataset = Dataset.objects.filter(name=dataset_name).first()
    if dataset is None:
        raise NotFound(f"no dataset named {dataset_name!r}")
    if not dataset.images_root:
        raise DatasetImportError(
            f"dataset {dataset_name!r} serves its pictures from {dataset.image_url_prefix!r}: "
            "no image files here to read sizes from"
        )
    root = Path(dataset.images_root)
    if not root.is_dir():
        raise DatasetImportError(f"images root {root} of dataset {dataset_name!r} is not a folder")
    images = list(dataset.images.only("pk", "key", "file_path", "width", "height"))
    sizes = read_image_sizes(root, images, progress)
    changed = [image for image in images if sizes[image.key] != (image.width, image.height)]
    for image in changed:
        image.width, image.height = sizes[image.key]
    with transaction.atomic():
        Image.objects.bulk_update(changed, ["width", "height"], batch_size=_BULK_BATCH)
    return SizeRefresh(images=len(images), changed=len(changed))
