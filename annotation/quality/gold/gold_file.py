"""A gold CSV read and checked as a stream: the pair-list id columns plus ``gold_score`` and
an optional ``explanation``. The file is read one bounded line at a time and checked in
chunks of CHUNK_ROWS rows (each chunk's keys looked up in one query per item table), so
memory holds a chunk, the rows a preview lists and the pairs seen so far (at most
MAX_ROWS), whatever the file's size.

A problem with the file as a whole (not UTF-8, not CSV, a line longer than MAX_LINE_BYTES,
a bad header, no rows, more than MAX_ROWS rows) raises GoldInputError at once, naming the
line (and column). A problem with a row is kept on the row, naming its line and column:
an upload (``annotation.quality.gold.upload``) refuses the file at the first, a preview
lists up to MAX_PROBLEMS and stops reading there."""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from django.db.models import Q

from annotation.core.cxc import ITEM_COLUMNS, METHOD_COLUMN, SCORE_COLUMN, SCORE_MAX, SCORE_MIN, SITS
from annotation.core.errors import DomainError
from annotation.core.inputs import nul_problem
from annotation.core.text_lines import bounded_lines
from annotation.models import Caption, Dataset, GoldPair, GoldSource, Image
from annotation.serving.pairs import PairSpec, pair_ids_by_identity

SCORE = "gold_score"
EXPLANATION = "explanation"
MAX_EXPLANATION = 2000
# Rows checked against the dataset together: one key lookup per item table per chunk.
CHUNK_ROWS = 2000
# A gold set is hundreds to a few thousand pairs; the bound keeps the pairs seen (for
# repeats) small and refuses a runaway file early.
MAX_ROWS = 50_000
# Two ids (a key has at most 255 characters), a score and an explanation of at most
# MAX_EXPLANATION characters, each up to 4 bytes in UTF-8, with room to spare.
MAX_LINE_BYTES = 16 * 1024
# Rows a preview keeps (with their pairs, to show as raters will see them).
LISTED_ROWS = 200
# Problems a preview lists; reading stops at the last.
MAX_PROBLEMS = 20


class GoldInputError(DomainError):
    code = "gold_invalid"


class _RowProblem(Exception):
    pass


@dataclass
class GoldRow:
    """One line of the file. ``gold``: the unsaved gold pair it makes (None while the row
    has a problem); ``problem``: the first thing wrong with it, naming the line."""

    line: int
    a: str = ""
    b: str = ""
    score: float | None = None
    explanation: str = ""
    problem: str | None = None
    gold: GoldPair | None = None


@dataclass
class GoldFile:
    """A checked file: ``rows`` the first LISTED_ROWS rows (every row of a smaller file),
    ``count`` the rows read, ``problems`` the rows with a problem (at most MAX_PROBLEMS:
    reading stopped at line ``stopped_at`` then)."""

    name: str
    kind: str = ""
    rows: list[GoldRow] = field(default_factory=list)
    count: int = 0
    problems: list[GoldRow] = field(default_factory=list)
    stopped_at: int | None = None


def gold_file_check(
    *,
    dataset: Dataset,
    path: str | Path | None = None,
    stream: BinaryIO | None = None,
    name: str | None = None,
) -> GoldFile:
    """Read and check a gold CSV for ``dataset`` (a ``path``, or a binary ``stream`` such
    as an upload, read where it lies, and its ``name``); every row kept gets its gold
    pair or its problem. Raises GoldInputError for a problem with the whole file."""
    with _opened(path, stream, name) as (source, name):
        checked = GoldFile(name=name)
        chunks = gold_file_chunks(dataset=dataset, stream=source, name=name)
        for kind, rows in chunks:
            checked.kind = kind
            for row in rows:
                checked.count += 1
                if len(checked.rows) < LISTED_ROWS:
                    checked.rows.append(row)
                if row.problem is not None:
                    checked.problems.append(row)
                    if len(checked.problems) == MAX_PROBLEMS:
                        checked.stopped_at = row.line
                        chunks.close()
                        return checked
    return checked


@contextmanager
def _opened(path, stream, name) -> Iterator[tuple[BinaryIO, str]]:
    if stream is not None:
        yield stream, name or "gold.csv"
        return
    with open(path, "rb") as handle:
        yield handle, name or Path(path).name


def gold_file_chunks(
    *, dataset: Dataset, stream: BinaryIO, name: str, created_by=None
) -> Iterator[tuple[str, list[GoldRow]]]:
    """The file's rows, CHUNK_ROWS at a time with the file's kind, each row checked on its
    own, against the rows before it and against the dataset: its gold pair or its problem.
    Raises GoldInputError for a problem with the file as a whole when reading reaches it."""
    reader = csv.reader(
        bounded_lines(
            stream,
            name=name,
            max_line_bytes=MAX_LINE_BYTES,
            error=GoldInputError,
            line_hint=f"a gold row is two ids, a score and an explanation of at most {MAX_EXPLANATION:,} characters",
        )
    )
    try:
        header = next(reader, None)
        if header is None:
            raise GoldInputError(f"{name}: the file is empty; expected a CSV header line")
        kind, columns = _header(name, [column.strip() for column in header])
        seen: dict[tuple[str, str], int] = {}
        chunk, count, line = [], 0, reader.line_num + 1
        for values in reader:
            # A row starts on the line after the last one read (a quoted value may span lines).
            row_line, line = line, reader.line_num + 1
            if not any(value.strip() for value in values):
                continue
            count += 1
            if count > MAX_ROWS:
                raise GoldInputError(f"{name}: line {row_line}: more than {MAX_ROWS:,} gold pairs in one file")
            chunk.append(_row(kind, columns, values, row_line, seen))
            if len(chunk) == CHUNK_ROWS:
                yield kind, _checked_against(dataset, kind, chunk, created_by)
                chunk = []
    except csv.Error as exc:
        raise GoldInputError(f"{name}: not a readable CSV file (line {reader.line_num}: {exc})") from exc
    if chunk:
        yield kind, _checked_against(dataset, kind, chunk, created_by)
    elif not count:
        raise GoldInputError(f"{name}: no pairs below the header")


def _row(kind: str, columns: dict[str, int], values: list[str], line: int, seen: dict) -> GoldRow:
    row = GoldRow(line=line)
    try:
        _parse(row, kind, columns, values)
        identity = (row.a, row.b) if kind == SITS else tuple(sorted((row.a, row.b)))
        if identity in seen:
            raise _RowProblem(f"line {line} repeats the pair on line {seen[identity]}")
        seen[identity] = line
    except _RowProblem as problem:
        row.problem = str(problem)
    return row


def _checked_against(dataset: Dataset, kind: str, rows: list[GoldRow], created_by) -> list[GoldRow]:
    """The rows with their items found in the dataset and their gold pairs made, or the
    problem of a key the dataset lacks, of a pair queued or gold already."""
    items = _resolve(dataset, kind, _good(rows))
    for row in _good(rows):
        row.gold = _gold_pair(dataset, kind, row, items, created_by)
    _mark_taken(dataset, _good(rows))
    return rows


def _good(rows: list[GoldRow]) -> list[GoldRow]:
    return [row for row in rows if row.problem is None]


def _header(name: str, header: list[str]) -> tuple[str, dict[str, int]]:
    for number, value in enumerate(header, start=1):
        if problem := nul_problem(value):
            raise GoldInputError(f"{name}: line 1, column {number}: {problem}")
    kinds = [kind for kind, cols in ITEM_COLUMNS.items() if set(cols) <= set(header)]
    expected = " or ".join(",".join(cols) for cols in ITEM_COLUMNS.values())
    if len(kinds) != 1 or SCORE not in header:
        raise GoldInputError(f"{name}: the header must name one pair of id columns ({expected}) and {SCORE}")
    # A CxC-shaped pair list with a gold_score column added is fine: its method and
    # agg_score columns are not the reference and are left unread.
    allowed = {*ITEM_COLUMNS[kinds[0]], SCORE, EXPLANATION, METHOD_COLUMN, SCORE_COLUMN}
    unexpected = [column for column in header if column not in allowed]
    if unexpected or len(set(header)) != len(header):
        raise GoldInputError(
            f"{name}: columns must be {','.join(ITEM_COLUMNS[kinds[0]])},{SCORE} and optionally {EXPLANATION} "
            f"(and a pair list's {METHOD_COLUMN},{SCORE_COLUMN}, not read); "
            f"got {','.join(header)}"
        )
    return kinds[0], {column: header.index(column) for column in header}


def _parse(row: GoldRow, kind: str, columns: dict[str, int], values: list[str]) -> None:
    first, second = ITEM_COLUMNS[kind]
    line = row.line
    if len(values) != len(columns):
        raise _RowProblem(f"line {line} has {len(values)} fields, the header {len(columns)}")
    for column, index in columns.items():
        if problem := nul_problem(values[index]):
            raise _RowProblem(f"line {line}, column {column}: {problem}")
    row.a, row.b = values[columns[first]].strip(), values[columns[second]].strip()
    if not row.a or not row.b:
        raise _RowProblem(f"line {line}, column {first if not row.a else second}: empty id")
    row.score = _score(line, values[columns[SCORE]])
    row.explanation = values[columns[EXPLANATION]].strip() if EXPLANATION in columns else ""
    if len(row.explanation) > MAX_EXPLANATION:
        raise _RowProblem(f"line {line}, column {EXPLANATION}: longer than {MAX_EXPLANATION} characters")
    if kind != SITS and row.a == row.b:
        raise _RowProblem(f"line {line} pairs {row.a} with itself")


def _score(line: int, text: str) -> float:
    try:
        score = float(text)
    except ValueError:
        raise _RowProblem(f"line {line}, column {SCORE}: {text.strip()!r} is not a number") from None
    if not math.isfinite(score) or not SCORE_MIN <= score <= SCORE_MAX:
        raise _RowProblem(f"line {line}, column {SCORE}: {text.strip()} is not between 0 and 5")
    return score


def _models(kind: str) -> tuple[str, str]:
    return tuple("caption" if column.startswith("caption") else "image" for column in ITEM_COLUMNS[kind])


def _resolve(dataset: Dataset, kind: str, rows: list[GoldRow]) -> dict[tuple[str, str], tuple[int, int]]:
    """(model, key) -> (id, split id) of every key the rows name; a row naming a key the
    dataset lacks, or items of two splits, gets its problem."""
    models = _models(kind)
    wanted = {"caption": set(), "image": set()}
    for row in rows:
        wanted[models[0]].add(row.a)
        wanted[models[1]].add(row.b)
    found = {
        ("caption", key): (pk, split)
        for key, pk, split in Caption.objects.filter(dataset=dataset, key__in=wanted["caption"]).values_list(
            "key", "pk", "image__split_id"
        )
    }
    found |= {
        ("image", key): (pk, split)
        for key, pk, split in Image.objects.filter(dataset=dataset, key__in=wanted["image"]).values_list(
            "key", "pk", "split_id"
        )
    }
    for row in rows:
        for key, model, column in (
            (row.a, models[0], ITEM_COLUMNS[kind][0]),
            (row.b, models[1], ITEM_COLUMNS[kind][1]),
        ):
            if (model, key) not in found:
                row.problem = f"line {row.line}, column {column}: no {model} {key!r} in {dataset.name}"
                break
        else:
            if found[(models[0], row.a)][1] != found[(models[1], row.b)][1]:
                row.problem = f"line {row.line}: the two items are in different splits"
    return found


def _gold_pair(dataset: Dataset, kind: str, row: GoldRow, items: dict, created_by) -> GoldPair:
    a_model, b_model = _models(kind)
    a_id, split_id = items[(a_model, row.a)]
    b_id = items[(b_model, row.b)][0]
    # Only the spec's item ids and ``swapped`` are read: the kind and method it is given
    # never matter, so these lines have no mutants.
    if kind == SITS:
        spec = PairSpec(kind, "", caption_a=a_id, image_a=b_id)  # pragma: no mutate
    elif a_model == "caption":
        spec = PairSpec(kind, "", caption_a=a_id, caption_b=b_id).canonical()  # pragma: no mutate
    else:
        spec = PairSpec(kind, "", image_a=a_id, image_b=b_id).canonical()  # pragma: no mutate
    return GoldPair(
        dataset=dataset,
        split_id=split_id,
        kind=kind,
        caption_a_id=spec.caption_a,
        caption_b_id=spec.caption_b,
        image_a_id=spec.image_a,
        image_b_id=spec.image_b,
        swapped=spec.swapped,
        gold_score=row.score,
        explanation=row.explanation,
        source=GoldSource.UPLOAD,
        created_by=created_by,
    )


def identity(pair) -> tuple:
    """A pair's or gold pair's identity as ``PairSpec.identity()`` gives it."""
    return (pair.kind, pair.caption_a_id, pair.caption_b_id, pair.image_a_id, pair.image_b_id)


def _mark_taken(dataset: Dataset, rows: list[GoldRow]) -> None:
    """A problem for each row whose pair (in either order) is queued in the dataset (a
    rater who rated it would meet it again as gold, and gold must look new) or is a gold
    pair of it already."""
    wanted = [identity(row.gold) for row in rows]
    queued = pair_ids_by_identity(dataset_id=dataset.pk, identities=wanted)
    first_ids = {pair.caption_a_id or pair.image_a_id for pair in (row.gold for row in rows)}
    gold = {
        tuple(found[:-1]): found[-1]
        for found in GoldPair.objects.filter(dataset=dataset)
        .filter(Q(caption_a_id__in=first_ids) | Q(image_a_id__in=first_ids))
        .values_list("kind", "caption_a_id", "caption_b_id", "image_a_id", "image_b_id", "pk")
    }
    for row, key in zip(rows, wanted, strict=True):  # pragma: no mutate (one key per row, built above)
        if key in queued:
            row.problem = (
                f"line {row.line}: the pair {row.a}, {row.b} is queued in {dataset.name} already "
                f"(pair #{queued[key]}); its raters would meet it again as gold"
            )
        elif key in gold:
            row.problem = (
                f"line {row.line}: the pair {row.a}, {row.b} is gold pair #{gold[key]} of {dataset.name} already"
            )


def gold_rows_items(rows: list[GoldRow]) -> None:
    """Attach the captions and images (with the dataset) to the rows' gold pairs, for a
    page that shows them as a rater would see them."""
    gold = [row.gold for row in rows if row.gold is not None]
    # Only the gold pairs' captions: reading all (the same answer) would cost the whole table.
    wanted = {pk for g in gold for pk in (g.caption_a_id, g.caption_b_id) if pk}
    captions = Caption.objects.in_bulk(wanted)  # pragma: no mutate
    images = Image.objects.in_bulk({pk for g in gold for pk in (g.image_a_id, g.image_b_id) if pk})
    for pair in gold:
        pair.caption_a, pair.caption_b = captions.get(pair.caption_a_id), captions.get(pair.caption_b_id)
        pair.image_a, pair.image_b = images.get(pair.image_a_id), images.get(pair.image_b_id)
