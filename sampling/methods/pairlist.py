"""Read an uploaded pair list: a CSV shaped like the CxC release files. No Django.

The header decides the task kind:

- ``caption1,caption2`` -> STS, ``image1,image2`` -> SIS, ``caption,image`` -> SITS;
- plus ``sampling_method`` (a CxC method name of that kind, or empty for "uploaded");
- ``agg_score`` may be present (the CxC files have it) and is ignored.

Ids are the CxC item keys (``COCO_val2014:sentid:190268``, ``COCO_val2014_000000032001.jpg``).

The file is read as a stream (``PairListReader``): one bounded line at a time, its rows
handed over a chunk at a time, refused at the first problem naming the line (and column);
``sampling.runs.upload`` looks the chunks' ids up and finds repeats (``Repeats``).
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from annotation.core.cxc import ITEM_COLUMNS, METHOD_COLUMN, SCORE_COLUMN, SITS
from annotation.core.inputs import nul_problem
from annotation.core.text_lines import bounded_lines

IGNORED_COLUMNS = (SCORE_COLUMN,)
UPLOADED = "uploaded"
# What a list that names one pair twice (in either order for STS and SIS) gets.
MERGE_REPEATS = "merge"  # queued once, in the order of its first row; the rest counted
REFUSE_REPEATS = "refuse"
REPEATS = (MERGE_REPEATS, REFUSE_REPEATS)
# Two ids (a key has at most 255 characters, up to 4 bytes each), a method and a score.
MAX_LINE_BYTES = 4096
# Rows handed over at a time: the caller looks their ids up together.
CHUNK_ROWS = 5000


class PairListFormatError(ValueError):
    """The file is not a pair list. The message names the line or the column."""


@dataclass(frozen=True, slots=True)
class PairRow:
    line: int
    key_a: str
    key_b: str
    method: str


class PairListReader:
    """A pair list read as a stream: the header when it opens (``kind``: STS, SIS or
    SITS), then its rows in file order, each in the order the file gives its two ids
    (SITS rows are (caption key, image key)), CHUNK_ROWS at a time. Lines are bounded
    (MAX_LINE_BYTES), so memory holds one chunk whatever the file's size; the first
    problem raises PairListFormatError naming its line (and column). Repeats are the
    caller's to find (``Repeats``), by the ids it looks up."""

    def __init__(self, stream: BinaryIO, name: str):
        self.name = name
        self._reader = csv.reader(
            bounded_lines(
                stream,
                name=name,
                max_line_bytes=MAX_LINE_BYTES,
                error=PairListFormatError,
                line_hint="a pair list row is two ids, a sampling method and optionally a score",
            )
        )
        header = self._next()
        if header is None:
            raise PairListFormatError(f"{name}: the file is empty; expected a CSV header line")
        _check_no_nul(name, 1, [str(n + 1) for n in range(len(header))], header)
        self.kind, self._columns = _kind_of(name, [column.strip() for column in header])
        self.rows = 0

    def _next(self) -> list[str] | None:
        try:
            return next(self._reader, None)
        except csv.Error as exc:
            raise PairListFormatError(
                f"{self.name}: not a readable CSV file (line {self._reader.line_num}: {exc})"
            ) from exc

    def chunks(self, size: int = CHUNK_ROWS) -> Iterator[list[PairRow]]:
        """The rows, ``size`` at a time; raises PairListFormatError for a file without
        any once it is read."""
        chunk: list[PairRow] = []
        line = self._reader.line_num + 1
        while (values := self._next()) is not None:
            # A row starts on the line after the last one read (a quoted id may span lines).
            row_line, line = line, self._reader.line_num + 1
            if not any(value.strip() for value in values):
                continue
            chunk.append(_row(self.name, self.kind, self._columns, row_line, values))
            self.rows += 1
            if len(chunk) == size:
                yield chunk
                chunk = []
        if chunk:
            yield chunk
        if not self.rows:
            raise PairListFormatError(f"{self.name}: no pairs below the header")


@contextmanager
def pair_list_open(path: str | os.PathLike) -> Iterator[PairListReader]:
    """A reader of the file at ``path``; a missing or unreadable file raises
    PairListFormatError naming it."""
    path = Path(path)
    try:
        stream = path.open("rb")
    except FileNotFoundError:
        raise PairListFormatError(f"{path}: no such file") from None
    except OSError as exc:
        raise PairListFormatError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    with stream:
        yield PairListReader(stream, path.name)


# A pair's identity: its two item ids (the lower first for STS and SIS), compared as a pair.
_PAIR_KEY = np.dtype([("a", "<i8"), ("b", "<i8")])


class Repeats:
    """Pairs a list names again, found by their item ids: merged into their first row
    (counted in ``merged``) or refused naming both lines (``repeats="refuse"``). Exact,
    and 24 bytes per pair seen: the pairs are kept as sorted arrays of ids and first
    lines in a few levels of doubling sizes (each chunk a new level, merged with the
    last while that is at most twice its size), so a chunk is looked up with a binary
    search per level and a million pairs hold 24 MB."""

    def __init__(self, name: str, *, repeats: str):
        if repeats not in REPEATS:
            raise ValueError(f"repeats must be one of {', '.join(REPEATS)}; got {repeats!r}")
        self.name, self.refuse, self.merged = name, repeats == REFUSE_REPEATS, 0
        self._levels: list[tuple[np.ndarray, np.ndarray]] = []

    def first_rows(self, first: np.ndarray, second: np.ndarray, lines: np.ndarray) -> np.ndarray:
        """Which rows of a chunk (``first``, ``second``: int64 (n,) item ids, ``lines``:
        int64 (n,) their lines, increasing) name their pair for the first time: bool
        (n,). Raises PairListFormatError at the first repeat when repeats are refused."""
        keys = np.empty(len(lines), dtype=_PAIR_KEY)
        keys["a"], keys["b"] = first, second
        earlier = np.full(len(lines), np.iinfo(np.int64).max)
        _, first_index, inverse = np.unique(keys, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        within = first_index[inverse] != np.arange(len(lines))
        earlier[within] = lines[first_index[inverse[within]]]
        for level_keys, level_lines in self._levels:
            at = np.minimum(np.searchsorted(level_keys, keys), len(level_keys) - 1)
            hit = level_keys[at] == keys
            earlier[hit] = np.minimum(earlier[hit], level_lines[at[hit]])
        repeated = earlier != np.iinfo(np.int64).max
        if repeated.any():
            if self.refuse:
                row = int(np.argmax(repeated))
                raise PairListFormatError(f"{self.name}: line {lines[row]} repeats the pair on line {earlier[row]}")
            self.merged += int(repeated.sum())
        self._add(keys[~repeated], lines[~repeated])
        return ~repeated

    def _add(self, keys: np.ndarray, lines: np.ndarray) -> None:
        if not len(keys):
            return
        order = np.argsort(keys)
        self._levels.append((keys[order], lines[order]))
        while len(self._levels) > 1 and len(self._levels[-2][0]) <= 2 * len(self._levels[-1][0]):
            (keys_a, lines_a), (keys_b, lines_b) = self._levels[-2:]
            keys, lines = np.concatenate([keys_a, keys_b]), np.concatenate([lines_a, lines_b])
            order = np.argsort(keys)
            self._levels[-2:] = [(keys[order], lines[order])]


def _check_no_nul(name: str, line: int, columns: list[str], values: list[str]) -> None:
    """Python's csv module reads NUL characters; PostgreSQL cannot compare text with one."""
    for column, value in zip(columns, values, strict=True):
        problem = nul_problem(value)
        if problem:
            raise PairListFormatError(f"{name}: line {line}, column {column}: {problem}")


def _kind_of(name: str, header: list[str]) -> tuple[str, dict[str, int]]:
    expected = " or ".join(",".join(cols) for cols in ITEM_COLUMNS.values())
    duplicates = sorted({column for column in header if header.count(column) > 1})
    if duplicates:
        raise PairListFormatError(f"{name}: column(s) {', '.join(duplicates)} appear more than once")
    matches = [kind for kind, cols in ITEM_COLUMNS.items() if set(cols) <= set(header)]
    if len(matches) != 1:
        raise PairListFormatError(
            f"{name}: the header must name one pair of id columns ({expected}) and {METHOD_COLUMN}; "
            f"it has: {', '.join(header) or '(nothing)'}"
        )
    kind = matches[0]
    if METHOD_COLUMN not in header:
        raise PairListFormatError(f"{name}: missing the {METHOD_COLUMN} column")
    allowed = {*ITEM_COLUMNS[kind], METHOD_COLUMN, *IGNORED_COLUMNS}
    unexpected = [column for column in header if column not in allowed]
    if unexpected:
        raise PairListFormatError(
            f"{name}: unexpected column(s) {', '.join(unexpected)}; a {kind} pair list has "
            f"{','.join(ITEM_COLUMNS[kind])},{METHOD_COLUMN} and optionally {','.join(IGNORED_COLUMNS)}"
        )
    return kind, {column: header.index(column) for column in header}


def _row(name: str, kind: str, columns: dict[str, int], line: int, values: list[str]) -> PairRow:
    first, second = ITEM_COLUMNS[kind]
    if len(values) != len(columns):
        raise PairListFormatError(f"{name}: line {line} has {len(values)} fields, the header {len(columns)}")
    _check_no_nul(name, line, list(columns), values)
    key_a = values[columns[first]].strip()
    key_b = values[columns[second]].strip()
    method = values[columns[METHOD_COLUMN]].strip() or UPLOADED
    if not key_a or not key_b:
        raise PairListFormatError(f"{name}: line {line} has an empty {first if not key_a else second}")
    if kind != SITS and key_a == key_b:
        raise PairListFormatError(f"{name}: line {line} pairs {key_a} with itself")
    return PairRow(line=line, key_a=key_a, key_b=key_b, method=method)
