"""Read a COCO instances file (``instances_val2014.json`` shape: ``categories``,
``images`` and ``annotations`` arrays) as a stream, in two passes, each one entry at a
time (``json_stream``): the arrays may come in any order (COCO's own files put the
categories last), and memory holds the categories and the file's image ids, never the
annotations. No Django.

``coco_index`` (the first pass) reads the categories and the images, handing each image
to the caller to match; ``coco_objects`` (the second) yields the annotations, each
checked against the first pass's index. Every problem raises CocoError naming the file,
the entry and the field: bad JSON by line and column, a duplicate id, an annotation of
an image or category the file does not have, a box or area that is not a finite number
at least zero. Segmentations are not read.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from annotation.catalog.json_stream import JsonArrays, JsonStreamError, NotAnObject, TooDeep, TooLong
from annotation.core.inputs import bigint_problem, nul_problem

# An annotation's entry is under a KB with a polygon; a crowd region's run-length mask
# can take a few hundred KB.
MAX_ENTRY_CHARS = 8 * 2**20
REQUIRED = ("categories", "images", "annotations")


class CocoError(ValueError):
    """Bad COCO instances JSON. The message names the file and the entry."""


@dataclass(frozen=True, slots=True)
class CocoImage:
    id: int
    file_name: str


@dataclass(frozen=True, slots=True)
class CocoObject:
    annotation_id: int | None
    image_id: int
    category_id: int
    bbox: tuple[float, float, float, float]  # x, y, width, height
    area: float
    iscrowd: bool


@dataclass
class CocoIndex:
    """The first pass: category id -> name, and each of the file's image ids -> what the
    caller's match returned for it (a stored image's id, or None)."""

    categories: dict[int, str] = field(default_factory=dict)
    images: dict[int, int | None] = field(default_factory=dict)


def coco_index(path: str | Path, *, match: Callable[[CocoImage], int | None], category_chars: int) -> CocoIndex:
    """Read the file's categories and images (every other member is skipped, the
    annotations entry by entry) and match each image. Category names are stripped; they
    must be unique, at most ``category_chars`` long."""
    path, index, names = Path(path), CocoIndex(), {}
    for member, position, entry in _entries(path, ("categories", "images")):
        where = f"{path}: {member}[{position}]"
        if member == "categories":
            category_id, name = _category(entry, where, category_chars)
            if category_id in index.categories:
                raise CocoError(f"{where}: category id {category_id} repeats")
            if name in names:
                raise CocoError(f"{where}: category name {name!r} repeats (id {names[name]})")
            index.categories[category_id], names[name] = name, category_id
        else:
            image = _image(entry, where)
            if image.id in index.images:
                raise CocoError(f"{where}: image id {image.id} repeats")
            index.images[image.id] = match(image)
    if not index.categories:
        raise CocoError(f"{path}: the file has no categories")
    return index


def coco_objects(path: str | Path, index: CocoIndex, *, max_measure: float) -> Iterator[tuple[int, CocoObject]]:
    """The file's annotations in order, as (position, object), each checked against the
    first pass's ``index``; a box's corner within +-``max_measure``, its width, height
    and the area from 0 to ``max_measure``."""
    path = Path(path)
    for _member, position, entry in _entries(path, ("annotations",)):
        where = f"{path}: annotations[{position}]"
        if not isinstance(entry, dict):
            raise CocoError(f"{where} is not an object")
        annotation_id = _whole(entry, "id", where, required=False)
        if annotation_id is not None:
            where = f"{where} (id {annotation_id})"
        image_id = _whole(entry, "image_id", where)
        if image_id not in index.images:
            raise CocoError(f"{where}: image_id {image_id} is not among the file's images")
        category_id = _whole(entry, "category_id", where)
        if category_id not in index.categories:
            raise CocoError(f"{where}: category_id {category_id} is not among the file's categories")
        iscrowd = entry.get("iscrowd", 0)
        if iscrowd not in (0, 1) or isinstance(iscrowd, bool | float):
            raise CocoError(f"{where}: field 'iscrowd' must be 0 or 1, got {iscrowd!r}")
        yield (
            position,
            CocoObject(
                annotation_id=annotation_id,
                image_id=image_id,
                category_id=category_id,
                bbox=_bbox(entry, where, max_measure),
                area=_size(entry, "area", where, max_measure),
                iscrowd=bool(iscrowd),
            ),
        )


def _entries(path: Path, members: tuple[str, ...]) -> Iterator[tuple[str, int, object]]:
    """(member, position, entry) for each entry of the wanted arrays; CocoError for a file
    that is not JSON, not an object, lacks one of the three arrays, or has an entry over
    MAX_ENTRY_CHARS."""
    try:
        handle = path.open(encoding="utf-8-sig")
    except FileNotFoundError as exc:
        raise CocoError(f"{path}: file not found") from exc
    positions = dict.fromkeys(members, 0)
    with handle:
        # Every pass asks for all three arrays, so each finds a missing one; it hands on
        # only the wanted ones' entries.
        arrays = JsonArrays(handle, members=REQUIRED, max_entry_chars=MAX_ENTRY_CHARS)
        try:
            for member, entry in arrays:
                if member in positions:
                    yield member, positions[member], entry
                    positions[member] += 1
        except NotAnObject:
            raise CocoError(f"{path}: expected an object with {_arrays()} (COCO instances format)") from None
        except TooLong as exc:
            raise CocoError(f"{path}: {exc}; at most {MAX_ENTRY_CHARS:,} characters are read for one entry") from None
        except TooDeep:
            raise CocoError(f"{path}: JSON nested too deeply to read (more than about 1,000 levels)") from None
        except (JsonStreamError, UnicodeDecodeError) as exc:
            raise CocoError(f"{path}: not valid JSON ({exc})") from exc
    missing = [name for name in REQUIRED if name not in arrays.found]
    if missing:
        raise CocoError(f"{path}: no {' or '.join(map(repr, missing))} array; expected {_arrays()}")


def _arrays() -> str:
    return ", ".join(f"'{name}'" for name in REQUIRED) + " arrays"


def _category(entry: object, where: str, category_chars: int) -> tuple[int, str]:
    if not isinstance(entry, dict):
        raise CocoError(f"{where} is not an object")
    category_id = _whole(entry, "id", where)
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        raise CocoError(f"{where} (id {category_id}): field 'name' must be a non-empty string")
    name = name.strip()
    if problem := nul_problem(name):
        raise CocoError(f"{where} (id {category_id}): field 'name' {problem}")
    if len(name) > category_chars:
        raise CocoError(f"{where} (id {category_id}): field 'name' is over {category_chars} characters")
    return category_id, name


def _image(entry: object, where: str) -> CocoImage:
    if not isinstance(entry, dict):
        raise CocoError(f"{where} is not an object")
    image_id = _whole(entry, "id", where)
    file_name = entry.get("file_name", "")
    if not isinstance(file_name, str):
        raise CocoError(f"{where} (id {image_id}): field 'file_name' must be a string")
    return CocoImage(image_id, file_name)


def _whole(entry: dict, name: str, where: str, *, required: bool = True) -> int | None:
    value = entry.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise CocoError(f"{where}: field {name!r} must be a whole number, got {value!r}")
    if problem := bigint_problem(value):
        raise CocoError(f"{where}: field {name!r} {problem}")
    return value


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _size(entry: dict, name: str, where: str, most: float) -> float:
    value = entry.get(name)
    if not _number(value) or not 0 <= value <= most:
        raise CocoError(f"{where}: field {name!r} must be a number from 0 to {most:g}, got {value!r}")
    return float(value)


def _bbox(entry: dict, where: str, most: float) -> tuple[float, float, float, float]:
    box = entry.get("bbox")
    if not isinstance(box, list) or len(box) != 4 or not all(_number(value) for value in box):
        raise CocoError(f"{where}: field 'bbox' must be four finite numbers [x, y, width, height], got {box!r}")
    x, y, width, height = (float(value) for value in box)
    if width < 0 or height < 0:
        raise CocoError(f"{where}: field 'bbox' has a negative width or height: {box!r}")
    if max(abs(x), abs(y), width, height) > most:
        raise CocoError(f"{where}: field 'bbox' has a number beyond {most:g}: {box!r}")
    return x, y, width, height
