"""Parse Karpathy-split JSON (``dataset_coco.json`` shape) into item records. No Django.

Keys are made exactly as the CxC release writes them:
- image key: the file name, e.g. ``COCO_val2014_000000032001.jpg``;
- caption key: ``<prefix>:sentid:<sentid>`` where the prefix is the file name's stem
  before its trailing ``_<digits>`` (``COCO_val2014``).

With an explicit ``key_prefix`` (for files whose names carry none, such as COCO 2017
names ``000000032001.jpg``), caption keys use that prefix and image keys become
``<prefix>_<cocoid as 12 digits><extension>``, the CxC spelling.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

_PREFIXED_NAME = re.compile(r"^(?P<prefix>.+)_(?P<number>\d+)(?P<ext>\.[A-Za-z0-9]+)$")


class KarpathyError(ValueError):
    """Bad Karpathy JSON. The message names the file and the entry."""


@dataclass(frozen=True)
class CaptionRecord:
    key: str
    sentid: int
    text: str


@dataclass(frozen=True)
class ImageRecord:
    key: str
    split: str
    file_path: str
    cocoid: int | None
    captions: tuple[CaptionRecord, ...] = field(default_factory=tuple)


def parse_karpathy(
    path: str | os.PathLike, *, splits: list[str] | None = None, key_prefix: str | None = None
) -> list[ImageRecord]:
    """Read the file and return the images of the wanted splits (all when None).

    Raises KarpathyError for malformed JSON, missing or mistyped fields, duplicate
    image keys or sentence ids, and wanted splits that the file does not have.
    """
    path = Path(path)
    try:
        with path.open("rb") as handle:
            data = json.load(handle)
    except FileNotFoundError as exc:
        raise KarpathyError(f"{path}: file not found") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise KarpathyError(f"{path}: not valid JSON ({exc})") from exc
    if not isinstance(data, dict) or not isinstance(data.get("images"), list):
        raise KarpathyError(f"{path}: expected an object with an 'images' list (Karpathy split format)")

    wanted = set(splits) if splits else None
    seen_splits: set[str] = set()
    records: list[ImageRecord] = []
    image_keys: dict[str, int] = {}
    sentids: dict[int, int] = {}
    for position, entry in enumerate(data["images"]):
        where = f"{path}: images[{position}]"
        if not isinstance(entry, dict):
            raise KarpathyError(f"{where} is not an object")
        filename = _field(entry, "filename", str, where)
        where = f"{path}: images[{position}] ({filename})"
        split = _field(entry, "split", str, where)
        seen_splits.add(split)
        sentences = _field(entry, "sentences", list, where)
        if wanted is not None and split not in wanted:
            continue
        filepath = entry.get("filepath", "")
        if not isinstance(filepath, str):
            raise KarpathyError(f"{where}: field 'filepath' must be a string")
        cocoid = entry.get("cocoid")
        if cocoid is not None and (not isinstance(cocoid, int) or isinstance(cocoid, bool)):
            raise KarpathyError(f"{where}: field 'cocoid' must be an integer")
        image_key, caption_prefix = _keys_for(filename, cocoid, key_prefix, where)
        if image_key in image_keys:
            raise KarpathyError(f"{where}: image key {image_key!r} repeats images[{image_keys[image_key]}]")
        image_keys[image_key] = position
        if not sentences:
            raise KarpathyError(f"{where}: has no sentences")
        captions = []
        for s_pos, sentence in enumerate(sentences):
            s_where = f"{where} sentences[{s_pos}]"
            if not isinstance(sentence, dict):
                raise KarpathyError(f"{s_where} is not an object")
            sentid = _field(sentence, "sentid", int, s_where)
            raw = _field(sentence, "raw", str, s_where).strip()
            if not raw:
                raise KarpathyError(f"{s_where} (sentid {sentid}): caption text is empty")
            if sentid in sentids:
                raise KarpathyError(f"{s_where}: sentid {sentid} repeats images[{sentids[sentid]}]")
            sentids[sentid] = position
            captions.append(CaptionRecord(key=f"{caption_prefix}:sentid:{sentid}", sentid=sentid, text=raw))
        records.append(
            ImageRecord(
                key=image_key,
                split=split,
                file_path=f"{filepath}/{filename}" if filepath else filename,
                cocoid=cocoid,
                captions=tuple(captions),
            )
        )
    if wanted is not None:
        missing = sorted(wanted - seen_splits)
        if missing:
            raise KarpathyError(
                f"{path}: split(s) {', '.join(missing)} not in the file; it has: {', '.join(sorted(seen_splits))}"
            )
    if not records:
        raise KarpathyError(f"{path}: no images to import")
    return records


def _field(entry: dict, name: str, kind: type, where: str):
    if name not in entry:
        raise KarpathyError(f"{where}: missing field {name!r}")
    value = entry[name]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise KarpathyError(f"{where}: field {name!r} must be {kind.__name__}, got {type(value).__name__}")
    return value


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
