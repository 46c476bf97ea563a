"""Parse Karpathy-split JSON (``dataset_coco.json`` shape) into item records. No Django.
The file is read as a stream, one ``images`` entry at a time (``json_stream``): memory
holds the records (without the sentences' tokens), not the parsed document, and the
first bad entry is refused without reading the rest.

Keys are made exactly as the CxC release writes them:
- image key: the file name, e.g. ``COCO_val2014_000000032001.jpg``;
- caption key: ``<prefix>:sentid:<sentid>`` where the prefix is the file name's stem
  before its trailing ``_<digits>`` (``COCO_val2014``).

With an explicit ``key_prefix`` (for files whose names carry none, such as COCO 2017
names ``000000032001.jpg``), caption keys use that prefix and image keys become
``<prefix>_<cocoid as 12 digits><extension>``, the CxC spelling.

Every value is checked before anything is stored: text without NUL characters, ids
within 64 bits, file paths that stay below the images folder, lengths within the limits,
and no key, file name or folder that begins like a spreadsheet formula (= + - @, tab,
CR): keys reach the CxC export files, which are written byte for byte as the release
writes them, so they cannot be escaped there.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from annotation.catalog.json_stream import JsonArray, JsonStreamError, NotAnObject, TooDeep, TooLong
from annotation.core.inputs import bigint_problem, formula_problem, nul_problem

_PREFIXED_NAME = re.compile(r"^(?P<prefix>.+)_(?P<number>\d+)(?P<ext>\.[A-Za-z0-9]+)$")
# One image's entry (its file fields and a few sentences with their tokens) is a few KB.
MAX_ENTRY_CHARS = 4 * 2**20
_NOT_KARPATHY = "{path}: expected an object with an 'images' list (Karpathy split format)"


class KarpathyError(ValueError):
    """Bad Karpathy JSON. The message names the file and the entry."""


@dataclass(frozen=True)
class FieldLimits:
    """The longest values an import accepts, in characters. ``caption_chars`` and
    ``filename_chars`` are the settings UPLOAD_MAX_CAPTION_CHARS and
    UPLOAD_MAX_FILENAME_CHARS (the messages name them); ``key_chars`` and
    ``split_chars`` are what the database's key and split name columns hold."""

    caption_chars: int
    filename_chars: int
    key_chars: int
    split_chars: int


@dataclass(frozen=True, slots=True)
class CaptionRecord:
    key: str
    sentid: int
    text: str


@dataclass(frozen=True, slots=True)
class ImageRecord:
    key: str
    split: str
    file_path: str
    cocoid: int | None
    captions: tuple[CaptionRecord, ...] = field(default_factory=tuple)


def parse_karpathy(
    path: str | os.PathLike,
    *,
    splits: list[str] | None = None,
    key_prefix: str | None = None,
    limits: FieldLimits | None = None,
) -> list[ImageRecord]:
    """Read the file and return the images of the wanted splits (all when None).

    Raises KarpathyError for malformed JSON, missing or mistyped fields, text with a NUL
    character, ids beyond 64 bits, a file path that leaves the images folder, duplicate
    image keys or sentence ids, and wanted splits that the file does not have; with
    ``limits`` (callers that store the records pass them) also for values that are too long.
    """
    path = Path(path)
    if key_prefix and (problem := formula_problem(key_prefix)):
        raise KarpathyError(f"{path}: key prefix {key_prefix!r} {problem}")
    wanted = set(splits) if splits else None
    seen_splits: set[str] = set()
    records: list[ImageRecord] = []
    image_keys: dict[str, int] = {}
    sentids: dict[int, int] = {}
    for position, entry in enumerate(_images(path)):
        where = f"{path}: images[{position}]"
        if not isinstance(entry, dict):
            raise KarpathyError(f"{where} is not an object")
        filename = _text(entry, "filename", where, limits.filename_chars if limits else None)
        where = f"{path}: images[{position}] ({filename})"
        split = _text(entry, "split", where, limits.split_chars if limits else None)
        seen_splits.add(split)
        sentences = _field(entry, "sentences", list, where)
        if wanted is not None and split not in wanted:
            continue
        record = _image_record(entry, filename, split, where, key_prefix, limits)
        if record.key in image_keys:
            raise KarpathyError(f"{where}: image key {record.key!r} repeats images[{image_keys[record.key]}]")
        image_keys[record.key] = position
        if not sentences:
            raise KarpathyError(f"{where}: has no sentences")
        captions = []
        for s_pos, sentence in enumerate(sentences):
            caption = _caption(sentence, f"{where} sentences[{s_pos}]", record.caption_prefix, limits)
            if caption.sentid in sentids:
                raise KarpathyError(
                    f"{where} sentences[{s_pos}]: sentid {caption.sentid} repeats images[{sentids[caption.sentid]}]"
                )
            sentids[caption.sentid] = position
            captions.append(caption)
        records.append(
            ImageRecord(
                key=record.key,
                split=split,
                file_path=record.file_path,
                cocoid=record.cocoid,
                captions=tuple(captions),
            )
        )
    _check_splits_found(path, wanted, seen_splits)
    if not records:
        raise KarpathyError(f"{path}: no images to import")
    return records


def _images(path: Path) -> Iterator[object]:
    """The file's ``images`` entries, read one at a time (``json_stream``); raises
    KarpathyError for a file that is not JSON, not an object with an ``images`` list, or
    has an entry longer than MAX_ENTRY_CHARS."""
    try:
        handle = path.open(encoding="utf-8-sig")
    except FileNotFoundError as exc:
        raise KarpathyError(f"{path}: file not found") from exc
    with handle:
        images = JsonArray(handle, member="images", max_entry_chars=MAX_ENTRY_CHARS)
        try:
            yield from images
        except NotAnObject:
            raise KarpathyError(_NOT_KARPATHY.format(path=path)) from None
        except TooLong as exc:
            raise KarpathyError(
                f"{path}: {exc}; an image's entry (its file, split and sentences) is a few KB, "
                f"at most {MAX_ENTRY_CHARS:,} characters are read"
            ) from None
        except TooDeep:
            # The decoder stops at Python's recursion limit (about 1,000 levels) at once;
            # the Karpathy format is four levels deep.
            raise KarpathyError(
                f"{path}: JSON nested too deeply to read (more than about 1,000 levels; the Karpathy format has 4)"
            ) from None
        except (JsonStreamError, UnicodeDecodeError) as exc:
            raise KarpathyError(f"{path}: not valid JSON ({exc})") from exc
    if not images.found:
        raise KarpathyError(_NOT_KARPATHY.format(path=path))


def _check_splits_found(path: Path, wanted: set[str] | None, seen_splits: set[str]) -> None:
    if wanted is None:
        return
    missing = sorted(wanted - seen_splits)
    if missing:
        raise KarpathyError(
            f"{path}: split(s) {', '.join(missing)} not in the file; it has: {', '.join(sorted(seen_splits))}"
        )


@dataclass(frozen=True)
class _ImageFields:
    key: str
    caption_prefix: str
    file_path: str
    cocoid: int | None


def _image_record(
    entry: dict, filename: str, split: str, where: str, key_prefix: str | None, limits: FieldLimits | None
) -> _ImageFields:
    if not filename or "/" in filename or "\\" in filename or filename in (".", ".."):
        raise KarpathyError(
            f"{where}: field 'filename' must name one file (its folder goes in 'filepath'), got {filename!r}"
        )
    _check_formula(filename, "field 'filename'", where)
    filepath = entry.get("filepath", "")
    if not isinstance(filepath, str):
        raise KarpathyError(f"{where}: field 'filepath' must be a string")
    _check_text(filepath, "filepath", where, limits.filename_chars if limits else None)
    _check_formula(filepath, "field 'filepath'", where)
    folder = PurePosixPath(filepath)
    if folder.is_absolute() or ".." in folder.parts or "\\" in filepath:
        raise KarpathyError(
            f"{where}: field 'filepath' {filepath!r} leaves the images folder; "
            "it must be a relative folder below the images root, without '..' or '\\'"
        )
    cocoid = entry.get("cocoid")
    if cocoid is not None:
        if not isinstance(cocoid, int) or isinstance(cocoid, bool):
            raise KarpathyError(f"{where}: field 'cocoid' must be an integer")
        _check_bigint(cocoid, "cocoid", where)
    image_key, caption_prefix = _keys_for(filename, cocoid, key_prefix, where)
    # The caption keys begin with the same prefix as the image key.
    _check_formula(image_key, f"image key {image_key[:60]!r}", where)
    if limits is not None and len(image_key) > limits.key_chars:
        raise KarpathyError(
            f"{where}: image key {image_key[:60]!r}... is {len(image_key):,} characters, "
            f"more than the {limits.key_chars} a key can hold"
        )
    file_path = f"{filepath}/{filename}" if filepath else filename
    return _ImageFields(key=image_key, caption_prefix=caption_prefix, file_path=file_path, cocoid=cocoid)


def _caption(sentence, where: str, caption_prefix: str, limits: FieldLimits | None) -> CaptionRecord:
    if not isinstance(sentence, dict):
        raise KarpathyError(f"{where} is not an object")
    sentid = _field(sentence, "sentid", int, where)
    _check_bigint(sentid, "sentid", where)
    raw = _field(sentence, "raw", str, where)
    if limits is not None and len(raw) > limits.caption_chars:
        raise KarpathyError(
            f"{where}.raw: {len(raw):,} characters, more than UPLOAD_MAX_CAPTION_CHARS={limits.caption_chars}"
        )
    problem = nul_problem(raw)
    if problem:
        raise KarpathyError(f"{where}.raw (sentid {sentid}) {problem}")
    text = raw.strip()
    if not text:
        raise KarpathyError(f"{where} (sentid {sentid}): caption text is empty")
    key = f"{caption_prefix}:sentid:{sentid}"
    if limits is not None and len(key) > limits.key_chars:
        raise KarpathyError(
            f"{where}: caption key {key[:60]!r}... is {len(key):,} characters, "
            f"more than the {limits.key_chars} a key can hold"
        )
    return CaptionRecord(key=key, sentid=sentid, text=text)


def _field(entry: dict, name: str, kind: type, where: str):
    if name not in entry:
        raise KarpathyError(f"{where}: missing field {name!r}")
    value = entry[name]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise KarpathyError(f"{where}: field {name!r} must be {kind.__name__}, got {type(value).__name__}")
    return value


def _text(entry: dict, name: str, where: str, max_chars: int | None) -> str:
    """A string field, checked before the messages quote it."""
    value = _field(entry, name, str, where)
    _check_text(value, name, where, max_chars)
    return value


def _check_text(value: str, name: str, where: str, max_chars: int | None) -> None:
    if max_chars is not None and len(value) > max_chars:
        setting = "UPLOAD_MAX_FILENAME_CHARS=" if name in ("filename", "filepath") else "the column's limit of "
        raise KarpathyError(f"{where}.{name}: {len(value):,} characters, more than {setting}{max_chars}")
    problem = nul_problem(value)
    if problem:
        raise KarpathyError(f"{where}: field {name!r} {problem}")


def _check_formula(value: str, what: str, where: str) -> None:
    problem = formula_problem(value)
    if problem:
        raise KarpathyError(f"{where}: {what} {problem}")


def _check_bigint(value: int, name: str, where: str) -> None:
    problem = bigint_problem(value)
    if problem:
        raise KarpathyError(f"{where}: field {name!r} {problem}")


def _keys_for(filename: str, cocoid: int | None, key_prefix: str | None, where: str) -> tuple[str, str]:
    """Return (image key, caption key prefix) for one image."""
    if key_prefix:
        if cocoid is None:
            raise KarpathyError(f"{where}: a key prefix needs 'cocoid' to spell the image key")
        ext = os.path.splitext(filename)[1] or ".jpg"
        return f"{key_prefix}_{cocoid:012d}{ext}", key_prefix
    match = _PREFIXED_NAME.match(filename)
    if not match:
        raise KarpathyError(
            f"{where}: file name {filename!r} has no '<prefix>_<number>' form to derive caption keys from; "
            "give a key prefix (--key-prefix, e.g. COCO_val2014)"
        )
    return filename, match.group("prefix")
