"""A gold CSV read and checked row by row: the pair-list id columns plus ``gold_score`` and
an optional ``explanation``. A problem with the file as a whole (not UTF-8, not CSV, a bad
header, no rows) raises GoldInputError; a problem with a row is kept on the row, naming its
line and column, so a preview can list every one and an upload can refuse the file."""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path

from django.db.models import Q

from annotation.core.cxc import ITEM_COLUMNS, METHOD_COLUMN, SCORE_COLUMN, SCORE_MAX, SCORE_MIN, SITS
from annotation.core.errors import DomainError
from annotation.core.inputs import nul_problem
from annotation.models import Caption, Dataset, GoldPair, GoldSource, Image
from annotation.serving.pairs import PairSpec, pair_ids_by_identity

SCORE = "gold_score"
EXPLANATION = "explanation"
MAX_EXPLANATION = 2000


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
    name: str
    kind: str
    rows: list[GoldRow] = field(default_factory=list)

    @property
    def problems(self) -> list[GoldRow]:
        return [row for row in self.rows if row.problem is not None]

    def refusal(self) -> GoldInputError | None:
        """The error naming the first bad row, or None when every row is good."""
        problems = self.problems
        return GoldInputError(f"{self.name}: {problems[0].problem}") if problems else None


def gold_file_check(*, dataset: Dataset, path: Path, created_by=None) -> GoldFile:
    """Read and check a gold CSV for ``dataset``; every row gets its gold pair or its
    problem. Raises GoldInputError for a problem with the whole file."""
    name = Path(path).name
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            lines = list(csv.reader(handle))
    except UnicodeDecodeError as exc:
        raise GoldInputError(f"{name}: not UTF-8 text ({exc})") from exc
    except csv.Error as exc:
        raise GoldInputError(f"{name}: not a readable CSV file ({exc})") from exc
    if not lines:
        raise GoldInputError(f"{name}: the file is empty; expected a CSV header line")
    kind, columns = _header(name, [column.strip() for column in lines[0]])
    checked = GoldFile(name=name, kind=kind, rows=_rows(kind, columns, lines[1:]))
    if not checked.rows:
        raise GoldInputError(f"{name}: no pairs below the header")
    items = _resolve(dataset, kind, _good(checked.rows))
    for row in _good(checked.rows):
        row.gold = _gold_pair(dataset, kind, row, items, created_by)
    _mark_taken(dataset, _good(checked.rows))
    return checked


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


def _rows(kind: str, columns: dict[str, int], lines: list[list[str]]) -> list[GoldRow]:
    rows, seen = [], {}
    for line, values in enumerate(lines, start=2):
        if not any(value.strip() for value in values):
            continue
        row = GoldRow(line=line)
        try:
            _parse(row, kind, columns, values)
            identity = (row.a, row.b) if kind == SITS else tuple(sorted((row.a, row.b)))
            if identity in seen:
                raise _RowProblem(f"line {line} repeats the pair on line {seen[identity]}")
            seen[identity] = line
        except _RowProblem as problem:
            row.problem = str(problem)
        rows.append(row)
    return rows


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
    captions = Caption.objects.in_bulk({pk for g in gold for pk in (g.caption_a_id, g.caption_b_id) if pk})
    images = Image.objects.in_bulk({pk for g in gold for pk in (g.image_a_id, g.image_b_id) if pk})
    for pair in gold:
        pair.caption_a, pair.caption_b = captions.get(pair.caption_a_id), captions.get(pair.caption_b_id)
        pair.image_a, pair.image_b = images.get(pair.image_a_id), images.get(pair.image_b_id)
