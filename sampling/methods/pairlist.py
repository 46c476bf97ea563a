"""Read an uploaded pair list: a CSV shaped like the CxC release files. No Django.

The header decides the task kind:

- ``caption1,caption2`` -> STS, ``image1,image2`` -> SIS, ``caption,image`` -> SITS;
- plus ``sampling_method`` (a CxC method name of that kind, or empty for "uploaded");
- ``agg_score`` may be present (the CxC files have it) and is ignored.

Ids are the CxC item keys (``COCO_val2014:sentid:190268``, ``COCO_val2014_000000032001.jpg``).
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path

from annotation.core.cxc import ITEM_COLUMNS, METHOD_COLUMN, SCORE_COLUMN, SITS
from annotation.core.inputs import nul_problem

IGNORED_COLUMNS = (SCORE_COLUMN,)
UPLOADED = "uploaded"
# What a list that names one pair twice (in either order for STS and SIS) gets.
MERGE_REPEATS = "merge"  # queued once, in the order of its first row; the rest counted
REFUSE_REPEATS = "refuse"
REPEATS = (MERGE_REPEATS, REFUSE_REPEATS)


class PairListFormatError(ValueError):
    """The file is not a pair list. The message names the line or the column."""


@dataclass(frozen=True)
class PairRow:
    line: int
    key_a: str
    key_b: str
    method: str


@dataclass(frozen=True)
class PairList:
    """kind: STS, SIS or SITS; rows in file order, each in the order the file gives its
    two ids. SITS rows are (caption key, image key). ``merged``: rows left out because
    they repeat an earlier row's pair."""

    kind: str
    rows: tuple[PairRow, ...]
    merged: int = 0

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for row in self.rows:
            counts[row.method] = counts.get(row.method, 0) + 1
        return counts


def read_pair_list(path: str | os.PathLike, *, repeats: str = MERGE_REPEATS) -> PairList:
    """Parse and check the file: columns, no empty id, no self pair, at least one row. A
    pair named twice (in either order for STS and SIS) is merged into its first row, or
    refused with ``repeats="refuse"``. An empty method becomes "uploaded"; whether a
    method name is known and of the file's kind is the caller's check."""
    if repeats not in REPEATS:
        raise ValueError(f"repeats must be one of {', '.join(REPEATS)}; got {repeats!r}")
    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if header is None:
                raise PairListFormatError(f"{path.name}: the file is empty; expected a CSV header line")
            _check_no_nul(path.name, 1, [str(n + 1) for n in range(len(header))], header)
            kind, columns = _kind_of(path.name, [name.strip() for name in header])
            rows, merged = _rows(path.name, kind, columns, reader, refuse_repeats=repeats == REFUSE_REPEATS)
    except FileNotFoundError:
        raise PairListFormatError(f"{path}: no such file") from None
    except OSError as exc:
        raise PairListFormatError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    except UnicodeDecodeError as exc:
        raise PairListFormatError(f"{path.name}: not UTF-8 text ({exc})") from exc
    except csv.Error as exc:
        raise PairListFormatError(f"{path.name}: not a readable CSV file ({exc})") from exc
    if not rows:
        raise PairListFormatError(f"{path.name}: no pairs below the header")
    return PairList(kind=kind, rows=tuple(rows), merged=merged)


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


def _rows(name: str, kind: str, columns: dict[str, int], reader, *, refuse_repeats: bool) -> tuple[list[PairRow], int]:
    first, second = ITEM_COLUMNS[kind]
    rows: list[PairRow] = []
    merged = 0
    seen: dict[tuple[str, str], int] = {}
    for line, values in enumerate(reader, start=2):
        if not any(value.strip() for value in values):
            continue
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
        identity = (key_a, key_b) if kind == SITS else tuple(sorted((key_a, key_b)))
        if identity in seen:
            if refuse_repeats:
                raise PairListFormatError(f"{name}: line {line} repeats the pair on line {seen[identity]}")
            merged += 1
            continue
        seen[identity] = line
        rows.append(PairRow(line=line, key_a=key_a, key_b=key_b, method=method))
    return rows, merged
