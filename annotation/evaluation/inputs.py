"""What an evaluation reads, checked: CxC ratings files, a model's vectors, the split's items.

Every check raises EvaluationError naming the file, the line, the row or the ids.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from annotation.core.cxc import (
    FILE_PREFIX,
    ITEM_COLUMNS,
    KINDS,
    METHOD_COLUMN,
    SCORE_COLUMN,
    SCORE_MAX,
    SCORE_MIN,
    SIS,
    SITS,
    STS,
)
from sampling.embeddings import EmbeddingError, check_rows_match_ids, load_vectors, read_ids

# Column names of each task's file, exactly as the CxC release writes them; the
# sampling_method column after them is optional.
COLUMNS = {kind: (*ITEM_COLUMNS[kind], SCORE_COLUMN) for kind in KINDS}
IMAGE, CAPTION = "image", "caption"
# Modality of (first, second) item of each kind's rows.
MODALITIES = {STS: (CAPTION, CAPTION), SIS: (IMAGE, IMAGE), SITS: (CAPTION, IMAGE)}

# Bytes of vectors gathered at a time (validating, pair cosines).
CHUNK_BYTES = 16 * 1024 * 1024


class EvaluationError(ValueError):
    """Input that cannot be evaluated. The message names the file, the ids or the rows."""


def chunk_rows(row_bytes: int) -> int:
    """Rows of ``row_bytes`` each that fit in one chunk of CHUNK_BYTES (at least 1)."""
    return max(1, CHUNK_BYTES // row_bytes)


def show_keys(keys: Sequence[str], limit: int = 5) -> str:
    """The first ``limit`` keys, quoted, and how many more there are."""
    shown = ", ".join(repr(k) for k in keys[:limit])
    return shown + (f" and {len(keys) - limit} more" if len(keys) > limit else "")


# --- ratings files -------------------------------------------------------------------


@dataclass(frozen=True)
class RatedPairs:
    """One task's rated rows, in file order.

    ``first``/``second``: item ids of each row (for SITS: caption, image);
    ``scores``: float64 (n,), the rows' ``agg_score`` in 0-5.
    """

    kind: str
    source: str
    first: list[str]
    second: list[str]
    scores: np.ndarray

    def __len__(self) -> int:
        return len(self.first)


def ratings_file(folder: str | os.PathLike, split: str, kind: str) -> Path:
    return Path(folder) / f"{FILE_PREFIX[kind]}_{split}.csv"


def read_cxc_ratings(path: str | os.PathLike, kind: str) -> RatedPairs:
    """Read one CxC-format ratings file of the given kind (STS, SIS or SITS).

    The header must begin with the kind's columns (``caption1,caption2,agg_score`` ...).
    Raises EvaluationError naming the file and line for a wrong header, a short row, an
    empty id, a score that is not a number in 0-5, or an item paired with itself.
    """
    path = Path(path)
    if kind not in COLUMNS:
        raise EvaluationError(f"unknown rating kind {kind!r}; expected one of {', '.join(KINDS)}")
    first: list[str] = []
    second: list[str] = []
    scores: list[float] = []
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            reader = csv.reader(handle)
            _check_header(path, kind, next(reader, None))
            for row in reader:
                parsed = _parse_row(path, reader.line_num, row)
                if parsed is not None:
                    first.append(parsed[0])
                    second.append(parsed[1])
                    scores.append(parsed[2])
    except FileNotFoundError:
        raise EvaluationError(f"{path}: ratings file not found") from None
    except UnicodeDecodeError as exc:
        raise EvaluationError(f"{path}: not UTF-8 text ({exc})") from None
    return RatedPairs(kind=kind, source=str(path), first=first, second=second, scores=np.asarray(scores, np.float64))


def _check_header(path: Path, kind: str, header: list[str] | None) -> None:
    expected = COLUMNS[kind]
    if header is None:
        raise EvaluationError(f"{path}: empty file; expected a header {','.join(expected)},{METHOD_COLUMN}")
    header = [name.strip().lstrip("\ufeff") for name in header]
    if tuple(header[:3]) != expected:
        raise EvaluationError(f"{path}: header is {','.join(header)!r}; a {kind} file starts with {','.join(expected)}")


def _parse_row(path: Path, line: int, row: list[str]) -> tuple[str, str, float] | None:
    """(first id, second id, score) of one data row; None for a blank line."""
    if not row or (len(row) == 1 and not row[0].strip()):
        return None
    if len(row) < 3:
        raise EvaluationError(f"{path}: line {line} has {len(row)} field(s); expected at least 3")
    a, b, raw = row[0].strip(), row[1].strip(), row[2].strip()
    if not a or not b:
        raise EvaluationError(f"{path}: line {line} has an empty item id")
    if a == b:
        raise EvaluationError(f"{path}: line {line} pairs {a!r} with itself")
    try:
        score = float(raw)
    except ValueError:
        raise EvaluationError(f"{path}: line {line}: agg_score {raw!r} is not a number") from None
    if not (SCORE_MIN <= score <= SCORE_MAX):
        raise EvaluationError(f"{path}: line {line}: agg_score {raw} is outside {SCORE_MIN:g}-{SCORE_MAX:g}")
    return a, b, score


def read_ratings_folder(folder: str | os.PathLike, split: str) -> dict[str, RatedPairs]:
    """Read the split's ratings files that exist in ``folder``; a missing kind is left out.

    Raises EvaluationError naming the folder and the expected file names when the split
    has no rated row at all.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise EvaluationError(f"ratings folder {folder} not found")
    found = {
        kind: read_cxc_ratings(ratings_file(folder, split, kind), kind)
        for kind in KINDS
        if ratings_file(folder, split, kind).is_file()
    }
    if not any(len(pairs) for pairs in found.values()):
        names = ", ".join(ratings_file(folder, split, kind).name for kind in KINDS)
        what = "has only empty ratings files" if found else "has no ratings files"
        raise EvaluationError(f"split {split!r} {what} in {folder}: expected rated rows in {names}")
    return found


# --- vectors and items ---------------------------------------------------------------


@dataclass(frozen=True)
class Space:
    """A model's vectors for one modality: ``vectors`` float (n, d), any float dtype,
    possibly a read-only mmap; ``ids[i]`` is the item key of row i."""

    vectors: np.ndarray
    ids: list[str]
    source: str

    @property
    def dimension(self) -> int:
        return int(self.vectors.shape[1])


def load_space(vectors_path: str | os.PathLike, ids_path: str | os.PathLike) -> Space:
    """Open a ``.npy`` (mmap) with its ids file (one key per line, in row order)."""
    try:
        vectors = load_vectors(vectors_path)
        ids = read_ids(ids_path)
        check_rows_match_ids(vectors, ids, str(vectors_path), str(ids_path))
    except EmbeddingError as exc:
        raise EvaluationError(str(exc)) from None
    return Space(vectors=vectors, ids=ids, source=str(vectors_path))


@dataclass(frozen=True)
class SplitItems:
    """The split's items in a fixed order: ``caption_image`` int64 (n_captions,) gives
    each caption's original image as an index into ``image_keys``."""

    name: str
    image_keys: list[str]
    caption_keys: list[str]
    caption_image: np.ndarray
    image_index: dict[str, int] = field(init=False, repr=False)
    caption_index: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "image_index", {key: i for i, key in enumerate(self.image_keys)})
        object.__setattr__(self, "caption_index", {key: i for i, key in enumerate(self.caption_keys)})

    @classmethod
    def from_pairs(cls, name: str, image_keys: Sequence[str], caption_pairs: Sequence[tuple[str, str]]) -> SplitItems:
        """``caption_pairs``: (caption key, image key) of every caption of the split."""
        index = {key: i for i, key in enumerate(image_keys)}
        try:
            caption_image = np.fromiter((index[image] for _, image in caption_pairs), np.int64, len(caption_pairs))
        except KeyError as exc:
            raise EvaluationError(f"caption of image {exc.args[0]!r}, which is not in split {name!r}") from None
        return cls(name, list(image_keys), [caption for caption, _ in caption_pairs], caption_image)


def embed_items(space: Space, keys: Sequence[str], what: str) -> np.ndarray:
    """Rows of ``space`` for ``keys``, in that order, as float32 (len(keys), d), L2-normalized.

    Raises EvaluationError when keys lack a vector (count and the first ids), or when a
    used row holds NaN/infinity or is all zeros (row number and id).
    """
    row_of = {key: row for row, key in enumerate(space.ids)}
    missing = [key for key in keys if key not in row_of]
    if missing:
        raise EvaluationError(
            f"{space.source}: no vector for {len(missing)} {what}(s) of the split: {show_keys(missing)}"
        )
    rows = np.fromiter((row_of[key] for key in keys), np.int64, len(keys))
    out = np.empty((len(keys), space.dimension), np.float32)
    step = chunk_rows(8 * space.dimension)
    for start in range(0, len(rows), step):
        part = rows[start : start + step]
        chunk = np.asarray(space.vectors[part], dtype=np.float64)
        finite = np.isfinite(chunk).all(axis=1)
        if not finite.all():
            row = int(part[np.argmin(finite)])
            raise EvaluationError(f"{space.source}: row {row} (id {space.ids[row]!r}) has a NaN or infinite value")
        norms = np.linalg.norm(chunk, axis=1)
        if not (norms > 0).all():
            row = int(part[np.argmin(norms > 0)])
            raise EvaluationError(f"{space.source}: row {row} (id {space.ids[row]!r}) is all zeros")
        out[start : start + len(part)] = chunk / norms[:, None]
    return out
