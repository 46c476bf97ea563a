"""The exclusion chunk as one PostgreSQL statement (the ORM path does the same in eight):
at 10,000 ratings the round trips and query building of the ORM path were a third of
the time, and under load they compete with the raters for the same cores."""

from __future__ import annotations

from functools import cache

from annotation.core.sql import Statement
from annotation.models import Pair, QueueCounter, Rating, RatingSlot, SlotState
from annotation.serving.sql_text import SqlTable

# ``locked`` takes the pair rows in id order before anything else reads or writes them
# (every other CTE reads it), the lock order of submissions. Locked rows come back in
# their latest committed version, so the counts below are the current ones.
_EXCLUDE_CHUNK_SQL = """
WITH locked AS MATERIALIZED (
    SELECT {pair.id}, {pair.dataset}, {pair.kind}, {pair.priority}, {pair.ratings_done}, {pair.ratings_required},
           {pair.retired_at}
    FROM {pair} WHERE {pair.id} = ANY(%(pairs)s::bigint[])
    ORDER BY {pair.id}
    FOR NO KEY UPDATE
),
hit AS (
    UPDATE {rating} r SET {rating.status} = 'excluded', {rating.exclusion} = %(exclusion)s
    FROM locked l
    WHERE r.{rating.pair} = l.{pair.id} AND r.{rating.rater} = %(rater)s AND r.{rating.status} = 'valid'
      AND r.{rating.created_at} < %(window_end)s
      AND (%(window_start)s::timestamptz IS NULL OR r.{rating.created_at} >= %(window_start)s::timestamptz)
      AND (%(ratings_through)s::bigint IS NULL OR r.{rating.id} <= %(ratings_through)s::bigint)
    RETURNING r.{rating.pair}
),
done_down AS (
    UPDATE {pair} p SET {pair.ratings_done} = p.{pair.ratings_done} - 1
    FROM hit WHERE p.{pair.id} = hit.{rating.pair}
),
live AS (
    SELECT l.* FROM locked l JOIN hit ON hit.{rating.pair} = l.{pair.id} WHERE l.{pair.retired_at} IS NULL
),
copies AS (
    UPDATE {slot} s SET {slot.pair_done} = live.{pair.ratings_done} - 1, {slot.pair_complete} = false
    FROM live WHERE s.{slot.pair} = live.{pair.id}
),
top_up AS (
    INSERT INTO {slot} ({slot.pair}, {slot.dataset}, {slot.index}, {slot.state}, {slot.kind}, {slot.priority},
                        {slot.pair_done}, {slot.pair_complete})
    SELECT live.{pair.id}, live.{pair.dataset}, highest.top + 1, {state_open}, live.{pair.kind},
           live.{pair.priority}, live.{pair.ratings_done} - 1, false
    FROM live JOIN (
        SELECT s.{slot.pair}, max(s.{slot.index}) AS top FROM {slot} s
        WHERE s.{slot.pair} IN (SELECT {pair.id} FROM live) GROUP BY s.{slot.pair}
    ) highest ON highest.{slot.pair} = live.{pair.id}
),
reopened AS (
    UPDATE {counter} c SET {counter.pairs_open} = c.{counter.pairs_open} + n.pairs
    FROM (
        SELECT {pair.kind} AS kind, count(*) AS pairs FROM live
        WHERE {pair.ratings_done} >= {pair.ratings_required} GROUP BY {pair.kind}
    ) n
    WHERE c.{counter.dataset} = %(dataset)s AND c.{counter.kind} = n.kind
)
SELECT (SELECT count(*) FROM hit), (SELECT count(*) FROM live)
"""


@cache
def exclude_chunk() -> Statement:
    """Exclude one chunk's in-scope ratings and open their top-up slots; returns
    (ratings excluded, slots opened)."""
    tables = {
        name: SqlTable(model)
        for name, model in {"pair": Pair, "rating": Rating, "slot": RatingSlot, "counter": QueueCounter}.items()
    }
    sql = _EXCLUDE_CHUNK_SQL.format(**tables, state_open=f"'{SlotState.OPEN.value}'")
    params = (
        ("pairs", "bigint[]"),
        ("exclusion", "bigint"),
        ("rater", "bigint"),
        ("window_start", "timestamptz"),
        ("window_end", "timestamptz"),
        ("ratings_through", "bigint"),
        ("dataset", "bigint"),
    )
    return Statement("exclusion_chunk_v2", sql, params)
