"""Gold pairs from a CSV (``gold_file``: the pair-list id columns plus ``gold_score`` and
an optional ``explanation``, read as a stream) and from agreed complete pairs. All or
nothing: the first bad row refuses the file, naming its line, column and problem."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
from django.db import IntegrityError, transaction
from django.db.models import F

from annotation.core.cxc import SCORE_MAX
from annotation.models import (
    DEFAULT_PROMOTE_MAX_SD,
    Dataset,
    GoldPair,
    GoldSource,
    Pair,
    Rating,
    RatingStatus,
)
from annotation.quality.gold.gold_file import (
    EXPLANATION,
    MAX_EXPLANATION,
    SCORE,
    GoldInputError,
    gold_file_chunks,
    identity,
)
from annotation.serving.gold_ids import ids_reserve

__all__ = [
    "EXPLANATION",
    "MAX_EXPLANATION",
    "SCORE",
    "GoldInputError",
    "PromoteCandidate",
    "gold_pairs_promote",
    "gold_pairs_upload",
    "gold_promote_candidates",
]


def gold_pairs_upload(
    *,
    dataset: Dataset,
    path: str | Path | None = None,
    stream: BinaryIO | None = None,
    name: str | None = None,
    created_by=None,
) -> int:
    """Add the file's gold pairs to ``dataset`` (a ``path``, or a binary ``stream`` such
    as an upload, and its ``name``); returns how many. Read as a stream: each chunk of
    rows is checked and written as it comes, in one transaction, and the first problem
    (a row's, or the file's) raises GoldInputError naming its line and column, with
    nothing written."""
    if stream is None:
        with open(path, "rb") as handle:
            name = name or Path(path).name
            return gold_pairs_upload(dataset=dataset, stream=handle, name=name, created_by=created_by)
    name = name or "gold.csv"
    created = 0
    with transaction.atomic():
        for _kind, rows in gold_file_chunks(dataset=dataset, stream=stream, name=name, created_by=created_by):
            if (bad := next((row for row in rows if row.problem is not None), None)) is not None:
                raise GoldInputError(f"{name}: {bad.problem}")
            gold = [row.gold for row in rows]
            # ids_reserve returns exactly len(gold) ids: zip's strict never decides (no mutants).
            for pair, pk in zip(gold, ids_reserve(Pair, len(gold)), strict=True):  # pragma: no mutate
                pair.pk = pk
            try:
                with transaction.atomic():
                    GoldPair.objects.bulk_create(gold)
            except IntegrityError:
                # Another upload added one of these pairs since the check.
                raise GoldInputError(f"{name}: a pair of the file is a gold pair of {dataset.name} already") from None
            created += len(gold)
    return created


@dataclass(frozen=True)
class PromoteCandidate:
    """A complete pair whose valid ratings agree: ``ratings`` of them, mean and sample sd."""

    pair_id: int
    ratings: int
    mean: float
    sd: float


def gold_promote_candidates(*, dataset: Dataset, kind: str, max_sd: float = DEFAULT_PROMOTE_MAX_SD) -> list:
    """The complete, unretired pairs of ``kind`` with at least two valid ratings whose
    sample sd is at most ``max_sd`` and that are not gold already, by pair id."""
    if not 0 <= max_sd <= SCORE_MAX:
        raise GoldInputError("max_sd must be between 0 and 5")
    complete = Pair.objects.filter(
        dataset=dataset, kind=kind, ratings_done=F("ratings_required"), retired_at__isnull=True
    )
    scores: dict[int, list[float]] = {}
    for pair_id, score in Rating.objects.filter(pair__in=complete, status=RatingStatus.VALID).values_list(
        "pair_id", "score"
    ):
        scores.setdefault(pair_id, []).append(score)
    agreed = {
        pair_id: values
        for pair_id, values in scores.items()
        if len(values) >= 2 and float(np.std(values, ddof=1)) <= max_sd
    }
    gold = _gold_identities(dataset, kind)
    pairs = Pair.objects.in_bulk(list(agreed))
    return [
        PromoteCandidate(pair_id, len(values), float(np.mean(values)), float(np.std(values, ddof=1)))
        for pair_id, values in sorted(agreed.items())
        if identity(pairs[pair_id]) not in gold
    ]


def _gold_identities(dataset: Dataset, kind: str) -> set[tuple]:
    rows = GoldPair.objects.filter(dataset=dataset, kind=kind)
    return set(rows.values_list("kind", "caption_a_id", "caption_b_id", "image_a_id", "image_b_id"))


def gold_pairs_promote(
    *,
    dataset: Dataset,
    kind: str,
    max_sd: float = DEFAULT_PROMOTE_MAX_SD,
    limit: int = 100,
    pair_ids: list[int] | None = None,
    created_by=None,
) -> int:
    """Make gold pairs of up to ``limit`` complete pairs of ``kind`` whose valid ratings
    agree (sample sd <= max_sd), their mean as the reference; pairs already gold are
    skipped. ``pair_ids``: only these of the candidates (an admin's choice). Returns how
    many were made."""
    if not 0 <= max_sd <= SCORE_MAX or limit < 1:
        raise GoldInputError("max_sd must be between 0 and 5 and limit at least 1")
    candidates = gold_promote_candidates(dataset=dataset, kind=kind, max_sd=max_sd)
    if pair_ids is not None:
        chosen = set(pair_ids)
        candidates = [candidate for candidate in candidates if candidate.pair_id in chosen]
    candidates = candidates[:limit]
    # Only the candidates' pairs: reading all (the same answer) would cost the whole table.
    pairs = Pair.objects.in_bulk([candidate.pair_id for candidate in candidates])  # pragma: no mutate
    gold = [
        GoldPair(
            dataset=dataset,
            split_id=pairs[candidate.pair_id].split_id,
            kind=kind,
            caption_a_id=pairs[candidate.pair_id].caption_a_id,
            caption_b_id=pairs[candidate.pair_id].caption_b_id,
            image_a_id=pairs[candidate.pair_id].image_a_id,
            image_b_id=pairs[candidate.pair_id].image_b_id,
            swapped=pairs[candidate.pair_id].swapped,
            gold_score=round(candidate.mean, 4),
            source=GoldSource.PROMOTED,
            source_pair=pairs[candidate.pair_id],
            created_by=created_by,
        )
        for candidate in candidates
    ]
    # ids_reserve returns exactly len(gold) ids: zip's strict never decides (no mutants).
    for pair, pk in zip(gold, ids_reserve(Pair, len(gold)), strict=True):  # pragma: no mutate
        pair.pk = pk
    GoldPair.objects.bulk_create(gold)
    return len(gold)
