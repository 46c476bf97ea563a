"""Pure helpers of the CxC field check (benchmarks/field_cxc_val.py): read the release's
validation files, build a Karpathy-shaped JSON from the ids they name, compare exported
files with the uploaded ones, and CxC's own way of merging the SITS file. No Django.
"""

from __future__ import annotations

import csv
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

# The release's three files, their task and item columns.
FILES = {
    "sts_val.csv": ("STS", ("caption1", "caption2")),
    "sis_val.csv": ("SIS", ("image1", "image2")),
    "sits_val.csv": ("SITS", ("caption", "image")),
}
KEY_PREFIX = "COCO_val2014"
ORIGINAL = "c2i_original"
# Where a caption without a c2i_original row would go (no COCO image has id 0).
PLACEHOLDER_COCOID = 0
EXAMPLES = 5


def header_line(path: Path) -> bytes:
    """The first line of a file, bytes as stored, line end included."""
    with path.open("rb") as handle:
        return handle.readline()


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def copy_head(source: Path, target: Path, rows: int) -> None:
    """Copy the header and the first ``rows`` data lines of ``source``, bytes unchanged."""
    with source.open("rb") as src, target.open("wb") as out:
        out.write(src.readline())
        for number, line in enumerate(src):
            if number >= rows:
                break
            out.write(line)


def is_caption(item_id: str) -> bool:
    return ":sentid:" in item_id


def sentid_of(caption_id: str) -> int:
    return int(caption_id.rsplit(":", 1)[1])


def cocoid_of(image_id: str) -> int:
    return int(image_id.rsplit("_", 1)[1].split(".", 1)[0])


@dataclass
class KarpathyBuild:
    """The JSON document and what went into it."""

    document: dict
    images: set[str] = field(default_factory=set)
    captions: set[str] = field(default_factory=set)
    captions_without_original: int = 0


def karpathy_from_cxc(folder: Path) -> KarpathyBuild:
    """A Karpathy-shaped document (split "val") holding every image and caption the three
    files of ``folder`` name; each caption under the image of its c2i_original row.
    Captions without one go under a placeholder image and are counted. Raises SystemExit
    naming an image that would have no caption (the importer refuses those)."""
    images: set[str] = set()
    captions: set[str] = set()
    owner: dict[str, str] = {}
    for name, (_kind, columns) in FILES.items():
        for row in read_rows(folder / name):
            for column in columns:
                (captions if is_caption(row[column]) else images).add(row[column])
            if name == "sits_val.csv" and row["sampling_method"] == ORIGINAL:
                owner.setdefault(row["caption"], row["image"])
    placeholder = f"{KEY_PREFIX}_{PLACEHOLDER_COCOID:012d}.jpg"
    orphans = sorted(captions - owner.keys(), key=sentid_of)
    sentences: dict[str, list[int]] = defaultdict(list)
    for caption in sorted(captions, key=sentid_of):
        sentences[owner.get(caption, placeholder)].append(sentid_of(caption))
    without = sorted(image for image in images if image not in sentences)
    if without:
        raise SystemExit(
            f"{len(without)} image(s) have no caption in the c2i_original rows (first: {without[0]}); "
            "the Karpathy importer refuses an image without sentences"
        )
    entries = []
    for image in sorted(sentences, key=cocoid_of):
        ids = sentences[image]
        entries.append(
            {
                "filename": image,
                "filepath": "val2014",
                "split": "val",
                "cocoid": cocoid_of(image),
                "sentids": ids,
                "sentences": [{"raw": f"placeholder caption {sentid}", "sentid": sentid} for sentid in ids],
            }
        )
    document = {"dataset": "coco", "images": entries}
    return KarpathyBuild(document, images, captions, captions_without_original=len(orphans))


def write_json(document: dict, path: Path) -> None:
    with path.open("w", encoding="utf-8") as handle:
        json.dump(document, handle)


# --- row order ----------------------------------------------------------------------------


def identity(kind: str, first: str, second: str) -> tuple[str, str]:
    """The unordered pair: SITS is always (caption, image); STS and SIS sort their ids."""
    return (first, second) if kind == "SITS" else tuple(sorted((first, second)))


@dataclass
class Uploaded:
    """What one uploaded file asks for: per pair, the order and method of the first row
    that names it, and the pairs in the order of those first rows."""

    kind: str
    rows: int
    first: dict[tuple[str, str], tuple[str, str, str]]
    order: list[tuple[str, str]]


def uploaded_pairs(path: Path, kind: str, columns: tuple[str, str]) -> Uploaded:
    rows = read_rows(path)
    first: dict[tuple[str, str], tuple[str, str, str]] = {}
    order = []
    for row in rows:
        a, b = row[columns[0]], row[columns[1]]
        key = identity(kind, a, b)
        if key not in first:
            first[key] = (a, b, row["sampling_method"])
            order.append(key)
    return Uploaded(kind, len(rows), first, order)


def check_rows(uploaded: Uploaded, exported: Iterable[tuple[str, str, str]]) -> dict:
    """Compare exported (item1, item2, method) rows with the uploaded file: each row in the
    order of the first uploaded row naming its pair, with that row's method; every pair
    once; and whether the rows follow the upload's order."""
    rows = mismatches = methods = unknown = repeated = 0
    seen: set[tuple[str, str]] = set()
    sequence = []
    examples = []
    for a, b, method in exported:
        rows += 1
        key = identity(uploaded.kind, a, b)
        expected = uploaded.first.get(key)
        if expected is None:
            unknown += 1
            continue
        if (a, b) != expected[:2]:
            mismatches += 1
            if len(examples) < EXAMPLES:
                examples.append({"row": rows, "exported": [a, b], "uploaded": list(expected[:2])})
        methods += method != expected[2]
        repeated += key in seen
        seen.add(key)
        sequence.append(key)
    return {
        "rows": rows,
        "mismatches": mismatches,
        "method_mismatches": methods,
        "unknown_pairs": unknown,
        "repeated_pairs": repeated,
        "missing_pairs": len(uploaded.first) - len(seen),
        "in_upload_order": sequence == uploaded.order,
        "examples": examples,
    }


def csv_pairs(path: Path, columns: tuple[str, str]) -> Iterator[tuple[str, str, str]]:
    for row in read_rows(path):
        yield row[columns[0]], row[columns[1]], row["sampling_method"]


def jsonl_pairs(path: Path, columns: tuple[str, str]) -> Iterator[tuple[str, str, str]]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            yield record[columns[0]], record[columns[1]], record["sampling_method"]


def parquet_pairs(path: Path, columns: tuple[str, str]) -> Iterator[tuple[str, str, str]]:
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=[*columns, "sampling_method"]).to_pydict()
    yield from zip(table[columns[0]], table[columns[1]], table["sampling_method"], strict=True)


# --- CxC's merge of the SITS file ----------------------------------------------------------


def cxc_sits_merge(rows: Iterable[dict[str, str]]) -> dict[str, list[tuple[str, str, str]]]:
    """CxC's published logic, in our own words: each SITS row files (sentid, score, type)
    under its image id and, unless it is an original pair, (image id, score, type) under
    its sentid (the number after the caption id's last ':')."""
    merged: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for row in rows:
        caption, image = row["caption"], row["image"]
        score, rating_type = row["agg_score"], row["sampling_method"]
        sentid = caption.split(":")[-1]
        merged[image].append((sentid, score, rating_type))
        if rating_type != ORIGINAL:
            merged[sentid].append((image, score, rating_type))
    return merged


def compare_merges(uploaded: dict, exported: dict) -> dict:
    """Keys and entries of both merges, and the keys whose entries differ when the score
    is ignored (the same multiset of (other id, rating type) is expected)."""

    def without_score(entries):
        return Counter((other, rating_type) for other, _score, rating_type in entries)

    differing = sorted(
        key
        for key in uploaded.keys() | exported.keys()
        if without_score(uploaded.get(key, ())) != without_score(exported.get(key, ()))
    )
    return {
        "uploaded": {"keys": len(uploaded), "entries": sum(map(len, uploaded.values()))},
        "exported": {"keys": len(exported), "entries": sum(map(len, exported.values()))},
        "keys_only_uploaded": len(uploaded.keys() - exported.keys()),
        "keys_only_exported": len(exported.keys() - uploaded.keys()),
        "differences": len(differing),
        "examples": differing[:EXAMPLES],
    }
