"""Gold pairs from a CSV (the pair-list id columns plus ``gold_score`` and an optional
``explanation``) and from agreed complete pairs. All or nothing: one bad row refuses the
file, naming its line, column and problem."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
from django.db import IntegrityError, transaction
from django.db.models import F

from annotation.cxc import ITEM_COLUMNS, METHOD_COLUMN, SCORE_COLUMN, SCORE_MAX, SCORE_MIN, SITS
from annotation.errors import DomainError
from annotation.inputs import nul_problem
from annotation.models import (
    DEFAULT_PROMOTE_MAX_SD,
    Caption,
    Dataset,
    GoldPair,
    GoldSource,
    Image,
    Pair,
    Rating,
    RatingStatus,
)
from annotation.quality.gold.ids import ids_reserve
from annotation.rating.pairs import PairSpec, pair_ids_by_identity

SCORE = "gold_score"
EXPLANATION = "explanation"
MAX_EXPLANATION = 2000


class GoldInputError(DomainError):
    code = "gold_invalid"


def gold_pairs_upload(*, dataset: Dataset, path: Path, created_by=None) -> int:
    """Add the file's gold pairs to ``dataset``; returns how many. Raises GoldInputError
    naming the line and column of the first problem, with nothing written."""
    name = Path(path).name
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            rows = list(csv.reader(handle))
    except UnicodeDecodeError as exc:
        raise GoldInputError(f"{name}: not UTF-8 text ({exc})") from exc
    except csv.Error as exc:
        raise GoldInputError(f"{name}: not a readable CSV file ({exc})") from exc
    if not rows:
        raise GoldInputError(f"{name}: the file is empty; expected a CSV header line")
    kind, columns = _header(name, [column.strip() for column in rows[0]])
    parsed = _rows(name, kind, columns, rows[1:])
    items = _resolve(name, dataset, kind, parsed)
    gold = [_gold_pair(dataset, kind, row, items, created_by) for row in parsed]
    _refuse_queued(name, dataset, parsed, gold)
    for pair, pk in zip(gold, ids_reserve(Pair, len(gold)), strict=True):
        pair.pk = pk
    try:
        with transaction.atomic():
            GoldPair.objects.bulk_create(gold)
    except IntegrityError:
        raise GoldInputError(f"{name}: a pair of the file is a gold pair of {dataset.name} already") from None
    return len(gold)


def _refuse_queued(name: str, dataset: Dataset, rows: list[dict], gold: list[GoldPair]) -> None:
    """GoldInputError for the first row whose pair (in either order) is queued in the
    dataset: a rater who rated it would meet it again as gold, and gold must look new."""

    def identity(pair: GoldPair) -> tuple:
        return (pair.kind, pair.caption_a_id, pair.caption_b_id, pair.image_a_id, pair.image_b_id)

    identities = [identity(pair) for pair in gold]
    queued = pair_ids_by_identity(dataset_id=dataset.pk, identities=identities)
    for row, wanted in zip(rows, identities, strict=True):
        if wanted in queued:
            raise GoldInputError(
                f"{name}: line {row['line']}: the pair {row['a']}, {row['b']} is queued in {dataset.name} already "
                f"(pair #{queued[wanted]}); its raters would meet it again as gold"
            )


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


def _rows(name: str, kind: str, columns: dict[str, int], rows: list[list[str]]) -> list[dict]:
    first, second = ITEM_COLUMNS[kind]
    parsed, seen = [], {}
    for line, values in enumerate(rows, start=2):
        if not any(value.strip() for value in values):
            continue
        if len(values) != len(columns):
            raise GoldInputError(f"{name}: line {line} has {len(values)} fields, the header {len(columns)}")
        for column, index in columns.items():
            if problem := nul_problem(values[index]):
                raise GoldInputError(f"{name}: line {line}, column {column}: {problem}")
        key_a, key_b = values[columns[first]].strip(), values[columns[second]].strip()
        if not key_a or not key_b:
            raise GoldInputError(f"{name}: line {line}, column {first if not key_a else second}: empty id")
        score = _score(name, line, values[columns[SCORE]])
        explanation = values[columns[EXPLANATION]].strip() if EXPLANATION in columns else ""
        if len(explanation) > MAX_EXPLANATION:
            raise GoldInputError(f"{name}: line {line}, column {EXPLANATION}: longer than {MAX_EXPLANATION} characters")
        identity = (key_a, key_b) if kind == SITS else tuple(sorted((key_a, key_b)))
        if kind != SITS and key_a == key_b:
            raise GoldInputError(f"{name}: line {line} pairs {key_a} with itself")
        if identity in seen:
            raise GoldInputError(f"{name}: line {line} repeats the pair on line {seen[identity]}")
        seen[identity] = line
        parsed.append({"line": line, "a": key_a, "b": key_b, "score": score, "explanation": explanation})
    if not parsed:
        raise GoldInputError(f"{name}: no pairs below the header")
    return parsed


def _score(name: str, line: int, text: str) -> float:
    try:
        score = float(text)
    except ValueError:
        raise GoldInputError(f"{name}: line {line}, column {SCORE}: {text.strip()!r} is not a number") from None
    if not math.isfinite(score) or not SCORE_MIN <= score <= SCORE_MAX:
        raise GoldInputError(f"{name}: line {line}, column {SCORE}: {text.strip()} is not between 0 and 5")
    return score


def _resolve(name: str, dataset: Dataset, kind: str, rows: list[dict]) -> dict[tuple[str, str], tuple[int, int]]:
    """(model, key) -> (id, split id) of every key the rows name; GoldInputError for one
    the dataset lacks."""
    first, second = ITEM_COLUMNS[kind]
    wanted = {"caption": set(), "image": set()}
    for row in rows:
        for side, column in (("a", first), ("b", second)):
            wanted["caption" if column.startswith("caption") else "image"].add(row[side])
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
        for side, column in (("a", first), ("b", second)):
            model = "caption" if column.startswith("caption") else "image"
            if (model, row[side]) not in found:
                raise GoldInputError(
                    f"{name}: line {row['line']}, column {column}: no {model} {row[side]!r} in {dataset.name}"
                )
        split_a = found[("caption" if first.startswith("caption") else "image", row["a"])][1]
        split_b = found[("caption" if second.startswith("caption") else "image", row["b"])][1]
        if split_a != split_b:
            raise GoldInputError(f"{name}: line {row['line']}: the two items are in different splits")
    return found


def _gold_pair(dataset: Dataset, kind: str, row: dict, items: dict, created_by) -> GoldPair:
    first, second = ITEM_COLUMNS[kind]
    a_model = "caption" if first.startswith("caption") else "image"
    b_model = "caption" if second.startswith("caption") else "image"
    a_id, split_id = items[(a_model, row["a"])]
    b_id = items[(b_model, row["b"])][0]
    if kind == SITS:
        spec = PairSpec(kind, "", caption_a=a_id, image_a=b_id)
    elif a_model == "caption":
        spec = PairSpec(kind, "", caption_a=a_id, caption_b=b_id).canonical()
    else:
        spec = PairSpec(kind, "", image_a=a_id, image_b=b_id).canonical()
    return GoldPair(
        dataset=dataset,
        split_id=split_id,
        kind=kind,
        caption_a_id=spec.caption_a,
        caption_b_id=spec.caption_b,
        image_a_id=spec.image_a,
        image_b_id=spec.image_b,
        swapped=spec.swapped,
        gold_score=row["score"],
        explanation=row["explanation"],
        source=GoldSource.UPLOAD,
        created_by=created_by,
    )


def gold_pairs_promote(
    *, dataset: Dataset, kind: str, max_sd: float = DEFAULT_PROMOTE_MAX_SD, limit: int = 100, created_by=None
) -> int:
    """Make gold pairs of up to ``limit`` complete pairs of ``kind`` whose valid ratings
    agree (sample sd <= max_sd), their mean as the reference; pairs already gold are
    skipped. Returns how many were made."""
    if not 0 <= max_sd <= SCORE_MAX or limit < 1:
        raise GoldInputError("max_sd must be between 0 and 5 and limit at least 1")
    complete = Pair.objects.filter(
        dataset=dataset, kind=kind, ratings_done=F("ratings_required"), retired_at__isnull=True
    )
    scores: dict[int, list[float]] = {}
    for pair_id, score in Rating.objects.filter(pair__in=complete, status=RatingStatus.VALID).values_list(
        "pair_id", "score"
    ):
        scores.setdefault(pair_id, []).append(score)
    chosen = []
    for pair_id, values in sorted(scores.items()):
        if len(values) >= 2 and float(np.std(values, ddof=1)) <= max_sd:
            chosen.append((pair_id, float(np.mean(values))))
    pairs = Pair.objects.in_bulk([pair_id for pair_id, _ in chosen])
    gold = []
    for pair_id, mean in chosen:
        pair = pairs[pair_id]
        if _is_gold(pair):
            continue
        gold.append(
            GoldPair(
                dataset=dataset,
                split_id=pair.split_id,
                kind=kind,
                caption_a_id=pair.caption_a_id,
                caption_b_id=pair.caption_b_id,
                image_a_id=pair.image_a_id,
                image_b_id=pair.image_b_id,
                swapped=pair.swapped,
                gold_score=round(mean, 4),
                source=GoldSource.PROMOTED,
                source_pair=pair,
                created_by=created_by,
            )
        )
        if len(gold) == limit:
            break
    for pair, pk in zip(gold, ids_reserve(Pair, len(gold)), strict=True):
        pair.pk = pk
    GoldPair.objects.bulk_create(gold)
    return len(gold)


def _is_gold(pair: Pair) -> bool:
    return GoldPair.objects.filter(
        kind=pair.kind,
        caption_a_id=pair.caption_a_id,
        caption_b_id=pair.caption_b_id,
        image_a_id=pair.image_a_id,
        image_b_id=pair.image_b_id,
    ).exists()
