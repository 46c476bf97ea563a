"""Pair writes: queue pairs with their rating slots in bulk, change their priority,
retire them.

A batch's pairs, slots and queue counters are written in the caller's transaction, so a
batch is queued whole or not at all. Uniqueness is the database's (unordered per kind).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from annotation.models import Flag, GoldPair, Pair, QueueCounter, RatingSlot, SlotState
from annotation.serving import queue_counters_add

# Rows per bulk statement.
BULK_BATCH = 5_000


@dataclass(frozen=True)
class PairSpec:
    """One pair to queue, by item ids, in the order it was sampled or uploaded. Stored
    canonical (lower id first, so uniqueness is unordered) with ``swapped`` recording
    that the given order was the other one; exports write it back as given."""

    kind: str
    sampling_method: str
    caption_a: int | None = None
    caption_b: int | None = None
    image_a: int | None = None
    image_b: int | None = None
    swapped: bool = False

    def canonical(self) -> PairSpec:
        if self.caption_a is not None and self.caption_b is not None and self.caption_a > self.caption_b:
            return PairSpec(self.kind, self.sampling_method, self.caption_b, self.caption_a, None, None, True)
        # Two images and no caption (SIS) are unordered; a review's (REV: a caption, the
        # truth image, the retrieved one) keep their order.
        if (
            self.caption_a is None
            and self.image_a is not None
            and self.image_b is not None
            and self.image_a > self.image_b
        ):
            return PairSpec(self.kind, self.sampling_method, None, None, self.image_b, self.image_a, True)
        return self

    def identity(self) -> tuple:
        return (self.kind, self.caption_a, self.caption_b, self.image_a, self.image_b)


def pairs_create_bulk(*, batch, specs: Iterable[PairSpec]) -> dict[str, int]:
    """Queue pairs for a sampling batch, each with ``batch.ratings_per_pair`` open slots
    (with adaptive N the minimum; ``batch.ratings_max`` is copied to the pair).

    Pairs already queued in the dataset (by any batch), pairs equal to one of its active
    gold pairs (a rater who rated the gold pair would meet it again, and could tell the
    two apart; see ``gold_pair_identities``) and repeats within ``specs`` (in either
    order) are left out; a repeat keeps the order of its first spec. Must run
    inside the caller's transaction so a batch is all or nothing.
    Returns the number of pairs created per sampling method.
    """
    specs = [spec.canonical() for spec in specs]
    seen: set[tuple] = set()
    unique: list[PairSpec] = []
    for spec in specs:
        ident = spec.identity()
        if ident not in seen:
            seen.add(ident)
            unique.append(spec)
    existing = _existing_pair_identities(batch.dataset_id, unique) | gold_pair_identities(batch.dataset_id)
    fresh = [spec for spec in unique if spec.identity() not in existing]
    if connection.vendor == "postgresql":
        _insert_pairs_postgres(batch=batch, specs=fresh)
    else:
        _insert_pairs_orm(batch=batch, specs=fresh)
    created: dict[str, int] = {}
    for spec in fresh:
        created[spec.sampling_method] = created.get(spec.sampling_method, 0) + 1
    per_kind: dict[str, int] = {}
    for spec in fresh:
        per_kind[spec.kind] = per_kind.get(spec.kind, 0) + 1
    queue_counters_add(dataset_id=batch.dataset_id, pairs_per_kind=per_kind)
    return created


def pairs_set_priority(*, pair_ids: Sequence[int], priority: int) -> None:
    """Give pairs and their slots (whose copy the claim orders by) a new priority, in the
    caller's transaction. Every pair is updated, and so locked, before any slot: a
    submission locks its pair before its slots, so the two never wait in a cycle."""
    Pair.objects.filter(id__in=pair_ids).update(priority=priority)
    RatingSlot.objects.filter(pair_id__in=pair_ids).update(priority=priority)


def pairs_retire(*, pair_ids: Sequence[int]) -> int:
    """Take pairs out of the queue for good: their unrated slots (open or leased) are
    deleted, so no claim serves them again and a held lease ends; ratings already given
    stay, and the pair stays incomplete, so exports leave it out. Their open flags are
    resolved. Returns how many pairs were retired (already retired ones are skipped)."""
    now = timezone.now()
    with transaction.atomic():
        # Pairs before slots, as a submission locks them, so the two never deadlock.
        pairs = list(
            Pair.objects.select_for_update(no_key=True)
            .filter(id__in=list(pair_ids), retired_at__isnull=True)
            .order_by("id")
            .values("id", "dataset_id", "kind", "ratings_done", "ratings_required")
        )
        ids = [pair["id"] for pair in pairs]
        RatingSlot.objects.filter(pair_id__in=ids).exclude(state=SlotState.DONE).delete()
        # The pair needs no more ratings: its raters' own counts of pairs left stop
        # holding it (the slot copy the per-rater progress reads).
        RatingSlot.objects.filter(pair_id__in=ids).update(pair_complete=True)
        Pair.objects.filter(id__in=ids).update(retired_at=now)
        Flag.objects.filter(pair_id__in=ids, resolved=False).update(resolved=True)
        still_open: dict[tuple[int, str], int] = {}
        for pair in pairs:
            if pair["ratings_done"] < pair["ratings_required"]:
                key = (pair["dataset_id"], pair["kind"])
                still_open[key] = still_open.get(key, 0) + 1
        for (dataset_id, kind), count in still_open.items():
            QueueCounter.objects.filter(dataset_id=dataset_id, kind=kind).update(pairs_open=F("pairs_open") - count)
    return len(ids)


def _insert_pairs_postgres(*, batch, specs: list[PairSpec]) -> None:
    """Pairs in one INSERT from arrays, their slots generated inside the database.

    At CxC scale (65k pairs, 325k slots) building model objects cost about 25x the FAISS
    search that chose the pairs. The arrays go over as array literals: a Python list
    becomes ``ARRAY[...]``, one parsed expression per element, which alone took a second.
    The slots are made from the new pairs in the same statement, so no ids travel back.
    """
    if not specs:
        return
    kinds, methods, caption_a, caption_b, image_a, image_b, swapped = zip(
        *((s.kind, s.sampling_method, s.caption_a, s.caption_b, s.image_a, s.image_b, int(s.swapped)) for s in specs),
        strict=True,
    )
    pair_table, slot_table = Pair._meta.db_table, RatingSlot._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH pairs AS (
                INSERT INTO {pair_table} (dataset_id, split_id, batch_id, kind, sampling_method, caption_a_id,
                    caption_b_id, image_a_id, image_b_id, swapped, ratings_required, ratings_max, priority,
                    ratings_done, created_at)
                SELECT %s, %s, %s, t.kind, t.method, t.ca, t.cb, t.ia, t.ib, t.sw = 1, %s, %s, %s, 0, %s
                FROM unnest(%s::varchar[], %s::varchar[], %s::bigint[], %s::bigint[], %s::bigint[], %s::bigint[],
                    %s::smallint[])
                    WITH ORDINALITY AS t(kind, method, ca, cb, ia, ib, sw, position)
                ORDER BY t.position
                RETURNING id, kind
            )
            INSERT INTO {slot_table} (pair_id, dataset_id, index, state, kind, priority, pair_done, pair_complete)
            SELECT p.id, %s, g.i, %s, p.kind, %s, 0, false
            FROM pairs p CROSS JOIN generate_series(0, %s - 1) AS g(i)
            """,
            [
                batch.dataset_id,
                batch.split_id,
                batch.id,
                batch.ratings_per_pair,
                batch.ratings_max,
                batch.priority,
                timezone.now(),
                *(
                    _array_literal(column)
                    for column in (kinds, methods, caption_a, caption_b, image_a, image_b, swapped)
                ),
                batch.dataset_id,
                SlotState.OPEN,
                batch.priority,
                batch.ratings_per_pair,
            ],
        )


def _array_literal(values: Sequence[int | str | None]) -> str:
    """A PostgreSQL array literal of ids and choice values (``{1,NULL,3}``)."""
    return "{" + ",".join("NULL" if value is None else _array_element(value) for value in values) + "}"


def _array_element(value: int | str) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, bool):
        raise TypeError(f"an id must be an integer, not {value!r}")
    return str(operator.index(value))  # Python or numpy integers; anything else is refused


def _insert_pairs_orm(*, batch, specs: list[PairSpec]) -> None:
    """The portable path (SQLite): model objects in chunks."""
    for start in range(0, len(specs), BULK_BATCH):
        chunk = specs[start : start + BULK_BATCH]
        pairs = Pair.objects.bulk_create(
            [
                Pair(
                    dataset_id=batch.dataset_id,
                    split_id=batch.split_id,
                    batch=batch,
                    kind=spec.kind,
                    sampling_method=spec.sampling_method,
                    caption_a_id=spec.caption_a,
                    caption_b_id=spec.caption_b,
                    image_a_id=spec.image_a,
                    image_b_id=spec.image_b,
                    swapped=spec.swapped,
                    ratings_required=batch.ratings_per_pair,
                    ratings_max=batch.ratings_max,
                    priority=batch.priority,
                )
                for spec in chunk
            ]
        )
        RatingSlot.objects.bulk_create(
            [
                RatingSlot(
                    pair_id=pair.id, dataset_id=pair.dataset_id, index=index, kind=pair.kind, priority=pair.priority
                )
                for pair in pairs
                for index in range(batch.ratings_per_pair)
            ],
            batch_size=BULK_BATCH,
        )


def gold_pair_identities(dataset_id: int) -> set[tuple]:
    """Identities (``PairSpec.identity()``) of the dataset's active gold pairs, which are
    stored in canonical order as pairs are: pairs no batch may queue. A dataset holds a
    few hundred gold pairs at most, so they are read whole."""
    rows = GoldPair.objects.filter(dataset_id=dataset_id, active=True).values_list(
        "kind", "caption_a_id", "caption_b_id", "image_a_id", "image_b_id"
    )
    return {tuple(row) for row in rows}


def _existing_pair_identities(dataset_id: int, specs: list[PairSpec]) -> set[tuple]:
    """Identities of pairs among ``specs`` that the dataset already has."""
    return set(pair_ids_by_identity(dataset_id=dataset_id, identities=[spec.identity() for spec in specs]))


def pair_ids_by_identity(*, dataset_id: int, identities: Sequence[tuple]) -> dict[tuple, int]:
    """Pair id by identity (``PairSpec.identity()``) of the dataset's pairs that share a
    first caption or first image with ``identities``: every one of them the dataset has,
    and possibly others (look the wanted ones up)."""
    found: dict[tuple, int] = {}
    if not identities:
        return found
    # Pairs only ever join items of their own dataset, so narrowing by the smallest
    # item id involved keeps this one indexed query per item column.
    fields = ("kind", "caption_a_id", "caption_b_id", "image_a_id", "image_b_id", "id")
    caption_ids = {identity[1] for identity in identities if identity[1] is not None}
    image_ids = {identity[3] for identity in identities if identity[3] is not None}
    queryset = Pair.objects.filter(dataset_id=dataset_id)
    for column, ids in (("caption_a_id__in", caption_ids), ("image_a_id__in", image_ids)):
        id_list = sorted(ids)
        for start in range(0, len(id_list), BULK_BATCH):
            rows = queryset.filter(**{column: id_list[start : start + BULK_BATCH]}).values_list(*fields)
            found.update((tuple(identity), pair_id) for *identity, pair_id in rows)
    return found
