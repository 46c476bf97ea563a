"""The submit's SQL statements (see ``annotation.serving.submit``): the lock of a
slot's pair and slot, the write of a locked submission, and the common case in one
statement. Prepared once per connection like the claim's (``statements``)."""

from __future__ import annotations

from functools import cache

from django.db import connection

from annotation.core.sql import Statement
from annotation.models import DEFAULT_SPEED_FLOORS, GoldPurpose, Rating
from annotation.serving.sql_text import render_sql

# The pair row is locked inside the materialized CTE, before the outer query's row lock
# on the slot: the only lock order a submission uses. NO KEY UPDATE, because foreign-key
# checks of rows inserted meanwhile (skips, flags) take KEY SHARE on the pair: FOR UPDATE
# would make them wait on the submission while it waits on their slot row.
_LOCK_PAIR_AND_SLOT_SQL = """
WITH p AS MATERIALIZED (
    SELECT {pair.id}, {pair.ratings_done}, {pair.ratings_required} FROM {pair}
    WHERE {pair.id} = (SELECT {slot.pair} FROM {slot} WHERE {slot.id} = %(slot)s)
    FOR NO KEY UPDATE
)
SELECT s.{slot.state}, s.{slot.rater}, s.{slot.previous_rater}, s.{slot.pair}, s.{slot.dataset}, d.{dataset.name},
       s.{slot.kind}, p.{pair.ratings_done}, p.{pair.ratings_required}
FROM {slot} s
JOIN p ON p.{pair.id} = s.{slot.pair}
JOIN {dataset} d ON d.{dataset.id} = s.{slot.dataset}
WHERE s.{slot.id} = %(slot)s
FOR UPDATE OF s
"""


@cache
def lock_pair_and_slot() -> Statement:
    """Lock a slot's pair, then the slot; one row in the order of ``slots.SLOT_VIEW_FIELDS``."""
    return Statement("queue_lock_slot_v1", render_sql(_LOCK_PAIR_AND_SLOT_SQL), (("slot", "bigint"),))


# The rating row of a submission, from the updated slot ``s`` (both submit statements).
# below_speed_floor: faster than the dataset's floor for the kind, or the default floor.
_INSERT_RATING_SQL = """INSERT INTO {rating} (
        {rating.pair}, {rating.slot}, {rating.rater}, {rating.score}, {rating.time_on_item_ms},
        {rating.time_to_first_move_ms}, {rating.adjustments}, {rating.idempotency_key}, {rating.created_at},
        {rating.below_speed_floor}
    )
    SELECT s.{slot.pair}, s.{slot.id}, %(rater)s, %(score)s, %(time_on_item_ms)s, %(time_to_first_move_ms)s,
           %(adjustments)s, %(key)s, %(now)s,
           %(time_on_item_ms)s < 1000 * COALESCE(
               (SELECT f.{floor.seconds} FROM {floor} f
                WHERE f.{floor.dataset} = s.{slot.dataset} AND f.{floor.kind} = s.{slot.kind}),
               CASE s.{slot.kind} {default_floors} END
           )
    FROM s"""


def default_floors() -> str:
    return " ".join(f"WHEN '{kind}' THEN {float(seconds)!r}" for kind, seconds in DEFAULT_SPEED_FLOORS.items())


_RATING_PARAMS = (
    ("score", "double precision"),
    ("time_on_item_ms", "integer"),
    ("time_to_first_move_ms", "integer"),
    ("adjustments", "integer"),
    ("key", "varchar"),
    ("now", "timestamptz"),
)

# One statement after the pair and slot rows are locked: the slot becomes done, the
# rating is stored, the pair and its other open slots learn the new count (every slot
# learns a completion; RatingSlot.pair_done), and a pair that just completed leaves the
# open-pairs counter.
_SUBMIT_SQL = """
WITH s AS (
    UPDATE {slot} SET
        {slot.state} = {state_done}, {slot.rater} = %(rater)s, {slot.lease_expires_at} = NULL,
        {slot.pair_done} = %(done)s, {slot.pair_complete} = %(complete)s
    WHERE {slot.id} = %(slot)s
    RETURNING {slot.id}, {slot.pair}, {slot.dataset}, {slot.kind}
),
r AS (
    {insert_rating}
    RETURNING {rating.id}
),
p AS (
    UPDATE {pair} SET {pair.ratings_done} = %(done)s WHERE {pair.id} = %(pair)s AND EXISTS (SELECT 1 FROM r)
),
siblings AS (
    UPDATE {slot} SET {slot.pair_done} = %(done)s, {slot.pair_complete} = %(complete)s
    WHERE {slot.pair} = %(pair)s AND {slot.id} <> %(slot)s AND ({slot.state} = {state_open} OR %(complete)s)
      AND EXISTS (SELECT 1 FROM r)
),
counter AS (
    UPDATE {counter} SET {counter.pairs_open} = {counter.pairs_open} - 1
    WHERE %(complete)s AND {counter.dataset} = %(dataset)s AND {counter.kind} = %(kind)s
      AND EXISTS (SELECT 1 FROM r)
)
SELECT {rating.id} FROM r
"""


@cache
def submit() -> Statement:
    """The write of a submission whose rows are locked; returns the rating id."""
    sql = render_sql(_SUBMIT_SQL, insert_rating=render_sql(_INSERT_RATING_SQL, default_floors=default_floors()))
    params = (
        ("rater", "bigint"),
        ("slot", "bigint"),
        ("pair", "bigint"),
        ("dataset", "bigint"),
        ("kind", "varchar"),
        ("done", "integer"),
        ("complete", "boolean"),
        *_RATING_PARAMS,
    )
    return Statement("queue_submit_v2", sql, params)


# The common case in one statement and one round trip, for an ordinary slot and for a gold
# lease alike (ids of both come from one sequence, so one id is at most one of them: the
# statement tries it as both, and the routing, ``annotation.serving.routing``, never has
# to try twice). For a slot: the pair row is locked first (in the materialized CTE, the
# lock order of every submission), the slot update carries the holder check, and the rest
# follows only if it matched. For a gold lease (``gl``): the lease row is locked, the
# gold rating stored (its id from the ratings' sequence, marked against the kind's speed
# floor; a gold rating never touches a pair, a slot or a counter) and the lease is done.
# No row back means "not the common case", nothing written (not held, a repeat, another
# dataset, a rater paused since the claim, a key the rater used on the other kind of
# rating: one key space across both tables, so a reused key is refused alike whichever
# kind of pair it was used on): the caller then takes the step-by-step path that says why.
_SUBMIT_FAST_SQL = """
WITH p AS MATERIALIZED (
    SELECT pr.{pair.id}, pr.{pair.ratings_done} + 1 AS done,
           pr.{pair.ratings_done} + 1 >= pr.{pair.ratings_required} AS complete, pr.{pair.dataset}, pr.{pair.kind},
           pr.{pair.ratings_required} < pr.{pair.ratings_max} AS adaptive
    FROM {pair} pr
    WHERE pr.{pair.id} = (SELECT {slot.pair} FROM {slot} WHERE {slot.id} = %(slot)s)
      AND pr.{pair.dataset} = (SELECT {dataset.id} FROM {dataset} WHERE {dataset.name} = %(dataset_name)s)
      AND NOT EXISTS (
          SELECT 1 FROM {pause} rp
          WHERE rp.{pause.rater} = %(rater)s AND rp.{pause.dataset} = pr.{pair.dataset} AND rp.{pause.lifted_at} IS NULL
      )
      AND NOT EXISTS (
          SELECT 1 FROM {gold_rating} gr
          WHERE gr.{gold_rating.rater} = %(rater)s AND gr.{gold_rating.idempotency_key} = %(key)s
      )
    FOR NO KEY UPDATE OF pr
),
s AS (
    UPDATE {slot} sl SET
        {slot.state} = {state_done}, {slot.rater} = %(rater)s, {slot.lease_expires_at} = NULL,
        {slot.pair_done} = p.done, {slot.pair_complete} = p.complete
    FROM p
    WHERE sl.{slot.id} = %(slot)s AND sl.{slot.pair} = p.{pair.id}
      AND ((sl.{slot.state} = {state_leased} AND sl.{slot.rater} = %(rater)s)
           OR (sl.{slot.state} = {state_open} AND sl.{slot.previous_rater} = %(rater)s))
    RETURNING sl.{slot.id}, sl.{slot.pair}, sl.{slot.dataset}, sl.{slot.kind}
),
r AS (
    {insert_rating}
    RETURNING {rating.id}, {rating.pair}
),
pu AS (
    UPDATE {pair} pr SET {pair.ratings_done} = p.done FROM p
    WHERE pr.{pair.id} = p.{pair.id} AND EXISTS (SELECT 1 FROM r)
),
siblings AS (
    UPDATE {slot} sl SET {slot.pair_done} = p.done, {slot.pair_complete} = p.complete
    FROM p
    WHERE sl.{slot.pair} = p.{pair.id} AND sl.{slot.id} <> %(slot)s AND (sl.{slot.state} = {state_open} OR p.complete)
      AND EXISTS (SELECT 1 FROM r)
),
counter AS (
    UPDATE {counter} qc SET {counter.pairs_open} = qc.{counter.pairs_open} - 1
    FROM p
    WHERE p.complete AND qc.{counter.dataset} = p.{pair.dataset} AND qc.{counter.kind} = p.{pair.kind}
      AND EXISTS (SELECT 1 FROM r)
),
gl AS MATERIALIZED (
    SELECT g.{gold_lease.id}, g.{gold_lease.gold_pair}, g.{gold_lease.dataset}, gp.{gold.kind}, gp.{gold.gold_score}
    FROM {gold_lease} g JOIN {gold} gp ON gp.{gold.id} = g.{gold_lease.gold_pair}
    WHERE g.{gold_lease.id} = %(slot)s AND g.{gold_lease.rater} = %(rater)s AND g.{gold_lease.state} = 'leased'
      AND g.{gold_lease.dataset} = (SELECT {dataset.id} FROM {dataset} WHERE {dataset.name} = %(dataset_name)s)
      AND NOT EXISTS (
          SELECT 1 FROM {pause} rp
          WHERE rp.{pause.rater} = %(rater)s AND rp.{pause.dataset} = g.{gold_lease.dataset}
            AND rp.{pause.lifted_at} IS NULL
      )
      AND NOT EXISTS (
          SELECT 1 FROM {rating} ur WHERE ur.{rating.rater} = %(rater)s AND ur.{rating.idempotency_key} = %(key)s
      )
    FOR UPDATE OF g
),
gr AS (
    INSERT INTO {gold_rating} (
        {gold_rating.id}, {gold_rating.gold_pair}, {gold_rating.lease}, {gold_rating.rater}, {gold_rating.dataset},
        {gold_rating.purpose}, {gold_rating.attempt}, {gold_rating.score}, {gold_rating.gold_score},
        {gold_rating.time_on_item_ms}, {gold_rating.time_to_first_move_ms}, {gold_rating.adjustments},
        {gold_rating.idempotency_key}, {gold_rating.below_speed_floor}, {gold_rating.created_at}
    )
    SELECT nextval(pg_get_serial_sequence(%(rating_table)s, %(rating_pk)s)),
           gl.{gold_lease.gold_pair}, gl.{gold_lease.id}, %(rater)s, gl.{gold_lease.dataset}, {queue_purpose}, 1,
           %(score)s, gl.{gold.gold_score},
           %(time_on_item_ms)s, %(time_to_first_move_ms)s, %(adjustments)s, %(key)s,
           %(time_on_item_ms)s < 1000 * COALESCE(
               (SELECT f.{floor.seconds} FROM {floor} f
                WHERE f.{floor.dataset} = gl.{gold_lease.dataset} AND f.{floor.kind} = gl.{gold.kind}),
               CASE gl.{gold.kind} {default_floors} END
           ),
           %(now)s
    FROM gl
    ON CONFLICT DO NOTHING
    RETURNING {gold_rating.id}, {gold_rating.gold_pair}, {gold_rating.dataset}
),
gold_done AS (
    UPDATE {gold_lease} g SET {gold_lease.state} = 'done' FROM gr WHERE g.{gold_lease.id} = %(slot)s
)
{answer}
"""
# The row of what the statement stored: for a slot, rating id, pair id, whether it filled
# an adaptive pair below its maximum, the pair's kind; for a gold lease, GOLD_STORED,
# gold rating id, gold pair id, dataset id, whether the dataset pauses raters on gold
# error. Answered, or left in a setting by ``submit_fast_stashed``.
GOLD_STORED = "gold"
_SLOT_ROW = "r.{rating.id}, r.{rating.pair}, p.complete AND p.adaptive IS TRUE, p.{pair.kind}"
_GOLD_ROW = (
    "'" + GOLD_STORED + "', gr.{gold_rating.id}, gr.{gold_rating.gold_pair}, gr.{gold_rating.dataset}, "
    "COALESCE((SELECT q.{settings.auto_pause} FROM {settings} q "
    "WHERE q.{settings.dataset} = gr.{gold_rating.dataset}), false)"
)
_SUBMIT_FAST_ANSWER = (
    f"SELECT concat_ws(' ', {_SLOT_ROW}) FROM r, p\nUNION ALL\nSELECT concat_ws(' ', {_GOLD_ROW}) FROM gr"
)


@cache
def submit_fast() -> Statement:
    """Lock, check and write a submission of a slot or a gold lease at once; one row, its
    fields separated by spaces (``stored_row`` reads it), or no row when the rater does not
    simply hold the item (then nothing was written)."""
    return Statement("serving_submit_fast_v1", _submit_fast_sql(_SUBMIT_FAST_ANSWER), _SUBMIT_FAST_PARAMS)


_SUBMIT_FAST_PARAMS = (
    ("slot", "bigint"),
    ("dataset_name", "text"),
    ("rater", "bigint"),
    *_RATING_PARAMS,
    ("rating_table", "text"),
    ("rating_pk", "text"),
)


def submit_fast_values(*, slot_id: int, dataset: str, rating: dict) -> dict:
    """``submit_fast``'s values: the item, the dataset, the checked rating
    (``submit.submission_values``) and the ratings' table and id column, whose sequence
    gold ratings take their ids from (``annotation.serving.gold_ids``)."""
    return {
        **rating,
        "slot": slot_id,
        "dataset_name": dataset,
        "rating_table": connection.ops.quote_name(Rating._meta.db_table),
        "rating_pk": Rating._meta.pk.column,
    }


def _submit_fast_sql(answer: str) -> str:
    insert_rating = render_sql(_INSERT_RATING_SQL, default_floors=default_floors())
    return render_sql(
        _SUBMIT_FAST_SQL,
        insert_rating=insert_rating,
        answer=render_sql(answer),
        default_floors=default_floors(),
        queue_purpose=f"'{GoldPurpose.QUEUE.value}'",
    )


def stored_row(text: str) -> tuple:
    """What the submit stored, from its row's text: (rating id, pair id, adaptive pair
    filled, kind) for a slot; (GOLD_STORED, gold rating id, gold pair id, dataset id, auto
    pause) for a gold lease."""
    fields = text.split(" ")
    if fields[0] == GOLD_STORED:
        return GOLD_STORED, int(fields[1]), int(fields[2]), int(fields[3]), fields[4] == "t"
    rating_id, pair_id, filled, kind = fields
    return int(rating_id), int(pair_id), filled == "t", kind


# Where ``submit_fast_stashed`` leaves its row for the statement after it in its
# transaction (a setting local to the transaction: the driver answers only a round
# trip's last statement).
SUBMITTED_SETTING = "cxc.submitted"


@cache
def submit_fast_stashed() -> Statement:
    """``submit_fast`` that leaves its row in the transaction's setting SUBMITTED_SETTING
    (empty when it stored nothing) instead of answering it: the claim after it in the same
    round trip (``statements.claim_ordinary_after_submit``) claims only after a slot's
    rating, and answers the setting."""
    # Set whatever happened ('' when nothing was stored): no earlier value can stand in.
    answer = (
        f"SELECT set_config('{SUBMITTED_SETTING}', COALESCE("
        f"(SELECT concat_ws(' ', {_SLOT_ROW}) FROM r, p), (SELECT concat_ws(' ', {_GOLD_ROW}) FROM gr), ''), true)"
    )
    return Statement("serving_submit_fast_stashed_v1", _submit_fast_sql(answer), _SUBMIT_FAST_PARAMS)
