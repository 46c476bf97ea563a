"""The writes of one chunk of pairs of an exclusion or its undo, in one transaction.

Every chunk locks its pair rows first, in id order, FOR NO KEY UPDATE: the lock a
submission takes before any slot row of its pair (annotation.serving). A submission racing
on one of these pairs therefore lands wholly before the chunk (its rating counted, then
excluded if in scope) or wholly after it (filling a slot the chunk left open), and the
invariant of a non-retired pair holds at every commit:

    valid ratings + open slots + leased slots == ratings_required

Claims lock slot rows only, and skip locked ones; the chunk's slot writes wait at most
for a claim's single statement, which waits on nothing the chunk holds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import connection, transaction
from django.db.models import F, Max, Q

from annotation.core.sql import execute, use_postgres_sql
from annotation.models import (
    Pair,
    QueueCounter,
    Rating,
    RatingExclusion,
    RatingSlot,
    RatingStatus,
    SlotState,
)
from annotation.quality.exclusion import statements
from annotation.serving.sql_text import render_sql


@dataclass(frozen=True)
class ChunkResult:
    excluded: int = 0
    reopened: int = 0
    restored: int = 0
    superseded: int = 0


def _lock_pairs(pair_ids: Sequence[int]) -> dict[int, dict]:
    rows = (
        Pair.objects.select_for_update(no_key=True)
        .filter(id__in=list(pair_ids))
        .order_by("id")
        .values("id", "dataset_id", "kind", "priority", "ratings_done", "ratings_required", "retired_at")
    )
    return {row["id"]: row for row in rows}


def rating_scope(exclusion: RatingExclusion) -> Q:
    """The ratings an exclusion covers: the rater's in its dataset, created in its window
    (no end: before the exclusion was made, so later ratings stay valid) and stored before
    it was made (an id up to ``ratings_through``)."""
    scope = Q(rater_id=exclusion.rater_id, pair__dataset_id=exclusion.dataset_id)
    scope &= Q(created_at__lt=exclusion.window_end or exclusion.created_at)
    if exclusion.window_start is not None:
        scope &= Q(created_at__gte=exclusion.window_start)
    if exclusion.ratings_through is not None:
        scope &= Q(id__lte=exclusion.ratings_through)
    return scope


def last_rating_id() -> int:
    """The last rating id drawn so far, committed or not (0: none yet). On PostgreSQL the
    sequence's value, which every session's draws move at once (Django's sequences cache
    one value, so no session holds ids drawn ahead); elsewhere the writer holds the
    database's one write lock, so the highest stored id is the last drawn."""
    if connection.vendor != "postgresql":
        return Rating.objects.aggregate(top=Max("id"))["top"] or 0
    table = connection.ops.quote_name(Rating._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_get_serial_sequence(%s, 'id')", [table])
        (sequence,) = cursor.fetchone()
        if sequence is None:
            raise RuntimeError(f"{table}.id draws from no sequence: an exclusion cannot bound its ratings")
        # pg_get_serial_sequence quotes the name as needed. Not yet called, last_value is
        # the first id still to be drawn.
        cursor.execute(f"SELECT last_value - (NOT is_called)::int FROM {sequence}")
        return cursor.fetchone()[0]


def wait_for_submissions_in_flight(exclusion: RatingExclusion) -> None:
    """Wait until every submission of the rater in the dataset that is still writing has
    committed or rolled back. A submission draws its rating's id once it holds its pair,
    then may still wait (for a sibling slot a claim holds, the open-pairs counter, its
    tally row): its rating is then inside the exclusion (an id up to ``ratings_through``)
    but not yet visible, and its pair, having no committed rating of the rater, is in no
    chunk. Its slot has updated its row: the committed row is still the rater's lease (or
    their expired lease, open), and a share lock on it waits for that submission. After
    this a pass over the pairs sees every rating the exclusion covers."""
    if connection.vendor != "postgresql":
        return  # SQLite: one writer at a time; a finished submission is committed
    sql = render_sql(
        "SELECT 1 FROM {slot} WHERE {slot.dataset} = %(dataset)s AND (({slot.state} = {state_leased} "
        "AND {slot.rater} = %(rater)s) OR ({slot.state} = {state_open} AND {slot.previous_rater} = %(rater)s)) "
        "FOR SHARE"
    )
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, {"dataset": exclusion.dataset_id, "rater": exclusion.rater_id})


def _counter_add(dataset_id: int, per_kind: Counter) -> None:
    for kind, count in per_kind.items():
        if count:
            QueueCounter.objects.filter(dataset_id=dataset_id, kind=kind).update(pairs_open=F("pairs_open") + count)


def _copy_progress(pair_ids: Sequence[int], pairs: dict[int, dict], done_change: int) -> None:
    """Give the pairs' slots their pair's new count (the claim orders by the copy)."""
    by_done: dict[tuple[int, bool], list[int]] = {}
    for pair_id in pair_ids:
        pair = pairs[pair_id]
        done = pair["ratings_done"] + done_change
        by_done.setdefault((done, done >= pair["ratings_required"]), []).append(pair_id)
    for (done, complete), ids in by_done.items():
        RatingSlot.objects.filter(pair_id__in=ids).update(pair_done=done, pair_complete=complete)


def exclude_chunk(*, exclusion: RatingExclusion, pair_ids: Sequence[int]) -> ChunkResult:
    """Exclude the in-scope valid ratings of ``pair_ids`` and open one top-up slot for
    each on a pair still in the queue. Ratings already excluded are left alone, so a
    chunk run twice (a resumed exclusion) changes nothing the second time."""
    if use_postgres_sql():
        with transaction.atomic(), connection.cursor() as cursor:
            # The pairs are locked by a statement of their own first: the chunk statement's
            # snapshot is taken when it starts, and one that waited for a pair lock would
            # not see a slot the holder added (adaptive N) and would number its top-up slot
            # the same. Started after the locks are held, it sees every committed slot.
            _lock_pairs(pair_ids)
            values = {
                "pairs": list(pair_ids),
                "exclusion": exclusion.id,
                "rater": exclusion.rater_id,
                "window_start": exclusion.window_start,
                "window_end": exclusion.window_end or exclusion.created_at,
                "ratings_through": exclusion.ratings_through,
                "dataset": exclusion.dataset_id,
            }
            execute(cursor, statements.exclude_chunk(), values)
            excluded, reopened = cursor.fetchone()
        return ChunkResult(excluded=excluded, reopened=reopened)
    with transaction.atomic():
        pairs = _lock_pairs(pair_ids)
        ratings = list(
            Rating.objects.filter(rating_scope(exclusion), pair_id__in=list(pairs), status=RatingStatus.VALID)
            .order_by("pair_id")
            .values_list("id", "pair_id")
        )
        if not ratings:
            return ChunkResult()
        Rating.objects.filter(id__in=[rating_id for rating_id, _ in ratings]).update(
            status=RatingStatus.EXCLUDED, exclusion=exclusion
        )
        hit = [pair_id for _, pair_id in ratings]  # one rating per pair and rater
        Pair.objects.filter(id__in=hit).update(ratings_done=F("ratings_done") - 1)
        live = [pair_id for pair_id in hit if pairs[pair_id]["retired_at"] is None]
        highest = dict(
            RatingSlot.objects.filter(pair_id__in=live)
            .order_by()
            .values("pair_id")
            .annotate(top=Max("index"))
            .values_list("pair_id", "top")
        )
        RatingSlot.objects.bulk_create(
            [
                RatingSlot(
                    pair_id=pair_id,
                    dataset_id=pairs[pair_id]["dataset_id"],
                    index=highest.get(pair_id, -1) + 1,
                    state=SlotState.OPEN,
                    kind=pairs[pair_id]["kind"],
                    priority=pairs[pair_id]["priority"],
                )
                for pair_id in live
            ]
        )
        _copy_progress(live, pairs, done_change=-1)
        reopened = Counter(
            pairs[pair_id]["kind"]
            for pair_id in live
            if pairs[pair_id]["ratings_done"] >= pairs[pair_id]["ratings_required"]
        )
        _counter_add(exclusion.dataset_id, reopened)
    return ChunkResult(excluded=len(ratings), reopened=len(live))


def restore_chunk(*, exclusion: RatingExclusion, pair_ids: Sequence[int]) -> ChunkResult:
    """Undo ``exclusion`` on ``pair_ids``: a pair with an open slot loses one (its top-up)
    and gets the rating back as valid; a pair without one (its top-up slots are rated, or
    leased by a rater at work on them) already holds or will hold N valid ratings, so the
    rating becomes superseded. A retired pair takes the rating back while it has room."""
    with transaction.atomic():
        pairs = _lock_pairs(pair_ids)
        ratings = dict(
            Rating.objects.filter(exclusion=exclusion, status=RatingStatus.EXCLUDED, pair_id__in=list(pairs))
            .order_by()
            .values_list("pair_id", "id")
        )
        if not ratings:
            return ChunkResult()
        live = [pair_id for pair_id in ratings if pairs[pair_id]["retired_at"] is None]
        # Open slots a claim is taking right now are skipped: that claim's rater is at work.
        open_slots = (
            RatingSlot.objects.select_for_update(skip_locked=True)
            .filter(pair_id__in=live, state=SlotState.OPEN)
            .order_by("pair_id", "-index")
            .values_list("id", "pair_id")
        )
        closing: dict[int, int] = {}
        for slot_id, pair_id in open_slots:
            closing.setdefault(pair_id, slot_id)
        RatingSlot.objects.filter(id__in=list(closing.values()), state=SlotState.OPEN).delete()
        retired_with_room = [
            pair_id
            for pair_id in ratings
            if pairs[pair_id]["retired_at"] is not None
            and pairs[pair_id]["ratings_done"] < pairs[pair_id]["ratings_required"]
        ]
        restored = sorted([*closing, *retired_with_room])
        superseded = [pair_id for pair_id in ratings if pair_id not in set(restored)]
        Rating.objects.filter(id__in=[ratings[p] for p in restored]).update(status=RatingStatus.VALID, exclusion=None)
        Rating.objects.filter(id__in=[ratings[p] for p in superseded]).update(status=RatingStatus.SUPERSEDED)
        Pair.objects.filter(id__in=restored).update(ratings_done=F("ratings_done") + 1)
        _copy_progress(list(closing), pairs, done_change=+1)
        completed = Counter(
            pairs[pair_id]["kind"]
            for pair_id in closing
            if pairs[pair_id]["ratings_done"] + 1 >= pairs[pair_id]["ratings_required"]
        )
        _counter_add(exclusion.dataset_id, Counter({kind: -count for kind, count in completed.items()}))
    return ChunkResult(restored=len(restored), superseded=len(superseded))
