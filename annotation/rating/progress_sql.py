"""A rater's progress as one PostgreSQL statement (see ``annotation.rating.progress.rater_progress``).

The rating page asks for it with every claim and submit (``progress_tz``), so it is the
rating cycle's: read through the ORM it took a dozen statements whose building cost the
web process more CPU than the claim and the submit together (bench-queue's page phases:
16 ms per rated item against 4). The statement states the selector's rules (the ORM
path, kept off PostgreSQL and with ``SQL_PATHS=portable``) and answers one row, or none
for an unknown dataset; tests/annotation/rating/test_progress_sql.py holds both paths to the
same figures.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import cache

from django.db import connection

from annotation.core.sql import Statement, execute, hot_cursor
from annotation.models import GoldPurpose
from annotation.serving.shapes import ClaimRead
from annotation.serving.sql_text import render_sql

# The tally's quarters, as the triggers bin them (migration 0027).
QUARTER = timedelta(minutes=15)
QUARTER_ORIGIN = datetime(2000, 1, 1, tzinfo=UTC)

# Rated today: the rater's tally (``RaterTally``, kept by triggers) from the first whole
# quarter hour of the day on, and the ratings themselves before it (none when the day
# starts on a quarter hour, as every time zone's midnight does today).
# ``kinds``: the rater's grants in the dataset (its own and the global ones). Per kind:
# ``ordinary``, the open pairs (counters) less the rater's done slots of unfinished pairs
# and skips of pairs still open; the gold pairs the queue may still serve them (active,
# not in the quiz, never leased to them, never met in a quiz attempt of the dataset or
# answered there, not made from a pair they rated, held or skipped), counted only while
# ordinary pairs are left and the dataset serves gold (the CASE spares the counts
# otherwise), as the serveable gold pairs (their counter, ``GoldCounter``, kept by
# triggers: counting them read every one, 0.1 ms per item at 2,000 and growing with the
# pool) less those the rater has a lease of (``RaterGoldMet``, kept by triggers: testing
# each lease grew a probe per gold pair the rater ever met) and less the others in
# ``met`` that they have no lease of (read only when the counter has any: a dataset
# without gold skips it), each looked up by id: what the rater met so is a few rows, where testing
# every gold pair against it cost a probe per rule and pair (2,000 gold pairs: 1.2 ms of
# PostgreSQL per progress) and a hash join of it with every gold pair still read them all
# (0.5 ms); ``held_gold``, their leases of active gold pairs. ``oldest``: the
# rater's oldest held lease, ordinary or gold, one without a time first, a tie by id.
_PROGRESS_SQL = """
WITH ds AS (SELECT {dataset.id} FROM {dataset} WHERE {ds_where}),
kinds AS (
    SELECT DISTINCT q.{qualification.kind} AS kind FROM {qualification} q
    WHERE q.{qualification.rater} = %(rater)s
      AND (q.{qualification.dataset} IS NULL OR q.{qualification.dataset} = {ds_id})
),
gold_off AS (
    SELECT EXISTS (
        SELECT 1 FROM {settings} o
        WHERE o.{settings.dataset} = {ds_id} AND o.{settings.gold_one_in} = 0
    ) AS off
),
met AS (
    SELECT a.{gold_rating.gold_pair} AS id FROM {gold_rating} a
    WHERE a.{gold_rating.rater} = %(rater)s AND a.{gold_rating.purpose} = {quiz_purpose}
      AND a.{gold_rating.dataset} = {ds_id}
    UNION
    SELECT (asked.value #>> '{{}}')::bigint FROM {attempt} t, jsonb_array_elements(t.{attempt.order}) asked
    WHERE t.{attempt.rater} = %(rater)s AND t.{attempt.dataset} = {ds_id}
    UNION
    SELECT g.{gold.id} FROM {gold} g
    WHERE g.{gold.source_pair} IS NOT NULL AND g.{gold.dataset} = {ds_id}
      AND (
          EXISTS (SELECT 1 FROM {slot} m WHERE m.{slot.pair} = g.{gold.source_pair} AND m.{slot.rater} = %(rater)s)
          OR EXISTS (SELECT 1 FROM {skip} x WHERE x.{skip.pair} = g.{gold.source_pair} AND x.{skip.rater} = %(rater)s)
      )
),
per_kind AS (
    SELECT k.kind,
        COALESCE((
            SELECT sum(c.{counter.pairs_open})::bigint FROM {counter} c
            WHERE c.{counter.dataset} = {ds_id} AND c.{counter.kind} = k.kind
        ), 0)
        - (
            SELECT count(*) FROM {slot} s
            WHERE s.{slot.rater} = %(rater)s AND s.{slot.kind} = k.kind AND NOT s.{slot.pair_complete}
              AND s.{slot.state} = 'done' AND s.{slot.dataset} = {ds_id}
        )
        - (
            SELECT count(*) FROM {skip} x JOIN {pair} p ON p.{pair.id} = x.{skip.pair}
            WHERE x.{skip.rater} = %(rater)s AND p.{pair.kind} = k.kind
              AND p.{pair.ratings_done} < p.{pair.ratings_required} AND p.{pair.retired_at} IS NULL
              AND p.{pair.dataset} = {ds_id}
        ) AS ordinary,
        (
            SELECT count(*) FROM {gold_lease} l JOIN {gold} lp ON lp.{gold.id} = l.{gold_lease.gold_pair}
            WHERE l.{gold_lease.rater} = %(rater)s AND l.{gold_lease.kind} = k.kind AND l.{gold_lease.state} = 'leased'
              AND lp.{gold.active} AND l.{gold_lease.dataset} = {ds_id}
        ) AS held_gold
    FROM kinds k
)
SELECT
    (SELECT {dataset.id} FROM ds),
    COALESCE((
        SELECT sum(t.{tally.ratings})::bigint FROM {tally} t
        WHERE t.{tally.rater} = %(rater)s AND t.{tally.dataset} = {ds_id}
          AND t.{tally.quarter} >= %(first_quarter)s
    ), 0) + (
        SELECT count(*) FROM {rating} r JOIN {pair} p ON p.{pair.id} = r.{rating.pair}
        WHERE r.{rating.rater} = %(rater)s
          AND r.{rating.created_at} >= %(day_start)s AND r.{rating.created_at} < %(first_quarter)s
          AND p.{pair.dataset} = {ds_id}
    ) + (
        SELECT count(*) FROM {gold_rating} g
        WHERE g.{gold_rating.rater} = %(rater)s
          AND g.{gold_rating.created_at} >= %(day_start)s AND g.{gold_rating.created_at} < %(first_quarter)s
          AND g.{gold_rating.dataset} = {ds_id} AND g.{gold_rating.purpose} = {queue_purpose}
    ),
    ARRAY(SELECT kind FROM per_kind ORDER BY kind),
    ARRAY(
        SELECT pk.ordinary + pk.held_gold + CASE WHEN pk.ordinary > 0 AND NOT (SELECT off FROM gold_off) THEN COALESCE((
            SELECT gc.{gold_counter.pairs_serveable} - COALESCE((
                SELECT gm.{gold_met.leased_serveable} FROM {gold_met} gm
                WHERE gm.{gold_met.rater} = %(rater)s AND gm.{gold_met.dataset} = {ds_id}
                  AND gm.{gold_met.kind} = pk.kind
            ), 0) - (
                SELECT count(*) FROM met CROSS JOIN LATERAL (
                    SELECT 1 FROM {gold} gp
                    WHERE gp.{gold.id} = met.id AND gp.{gold.dataset} = {ds_id}
                      AND gp.{gold.kind} = pk.kind AND gp.{gold.active} AND NOT gp.{gold.in_quiz}
                      AND NOT EXISTS (
                          SELECT 1 FROM {gold_lease} l
                          WHERE l.{gold_lease.gold_pair} = gp.{gold.id} AND l.{gold_lease.rater} = %(rater)s
                      )
                    LIMIT 1  -- one row by id; the limit keeps it a probe per met row, not a join
                ) serveable
            )
            FROM {gold_counter} gc
            WHERE gc.{gold_counter.dataset} = {ds_id} AND gc.{gold_counter.kind} = pk.kind
              AND gc.{gold_counter.pairs_serveable} > 0
        ), 0) ELSE 0 END
        FROM per_kind pk ORDER BY pk.kind
    ),
    oldest.{slot.id}, oldest.{slot.lease_expires_at}{claim_columns}
FROM (SELECT 1) one
LEFT JOIN LATERAL (
    SELECT u.{slot.id}, u.{slot.lease_expires_at}, u.{slot.leased_at} FROM (
        SELECT s.{slot.id}, s.{slot.leased_at}, s.{slot.lease_expires_at} FROM {slot} s
        WHERE s.{slot.rater} = %(rater)s AND s.{slot.state} = 'leased'
          AND s.{slot.dataset} = {ds_id}
        UNION ALL
        SELECT l.{gold_lease.id}, l.{gold_lease.leased_at}, l.{gold_lease.lease_expires_at}
        FROM {gold_lease} l JOIN {gold} lp ON lp.{gold.id} = l.{gold_lease.gold_pair}
        WHERE l.{gold_lease.rater} = %(rater)s AND l.{gold_lease.state} = 'leased' AND lp.{gold.active}
          AND l.{gold_lease.dataset} = {ds_id}
    ) u
    ORDER BY u.{slot.leased_at} IS NOT NULL, u.{slot.leased_at}, u.{slot.id}
    LIMIT 1
) oldest ON true
WHERE EXISTS (SELECT 1 FROM ds)
"""


# The statement by the dataset's name, and by its id as well (``progress_row``): the
# dataset's id in every part that reads it, where the name's statement looks it up again
# in each (an InitPlan apiece: 18 plan nodes, 35-45 us of PostgreSQL per progress, every
# rated item). The id's statement answers only while the id still has that name.
_BY_NAME = {
    "ds_where": "{dataset.name} = %(dataset)s",
    "ds_id": "(SELECT {dataset.id} FROM ds)",
    "claim_columns": "",
}
_BY_ID = {
    "ds_where": "{dataset.id} = %(dataset_id)s AND {dataset.name} = %(dataset)s",
    "ds_id": "%(dataset_id)s",
    "claim_columns": "",
}
# The id's statement as a claim reads it (``queue.ClaimRead``): before the claim's lease,
# so the oldest held lease comes with its lease time, to be weighed against the claim's.
# Last, whether the claim leased a slot of a pair that a gold pair of the dataset was made
# from: the rater has then met that gold pair (``met``), which the read cannot see.
_WITH_CLAIM = {
    **_BY_ID,
    "claim_columns": ", oldest.{slot.leased_at}, EXISTS ("
    "SELECT 1 FROM claimed c JOIN {gold} cg ON cg.{gold.source_pair} = c.{slot.pair} "
    "WHERE cg.{gold.dataset} = %(dataset_id)s)",
}
_PARAMS = (("dataset", "text"), ("rater", "bigint"), ("day_start", "timestamptz"), ("first_quarter", "timestamptz"))


def _render(fragments: dict[str, str]) -> str:
    return render_sql(
        _PROGRESS_SQL,
        queue_purpose=f"'{GoldPurpose.QUEUE.value}'",
        quiz_purpose=f"'{GoldPurpose.QUIZ.value}'",
        **{name: render_sql(fragment) for name, fragment in fragments.items()},
    )


@cache
def progress_statement() -> Statement:
    """The progress of a dataset named ``dataset``."""
    return Statement("rater_progress_v10", _render(_BY_NAME), _PARAMS)


@cache
def progress_by_id_statement() -> Statement:
    """The progress of the dataset ``dataset_id`` while it is named ``dataset``."""
    return Statement("rater_progress_by_id_v1", _render(_BY_ID), (*_PARAMS, ("dataset_id", "bigint")))


@cache
def progress_with_claim_statement() -> Statement:
    """``progress_by_id_statement`` with the oldest lease's lease time last, for a claim to
    read (``progress_claim_read``)."""
    return Statement("progress_v2", _render(_WITH_CLAIM), (*_PARAMS, ("dataset_id", "bigint")))


def first_quarter(moment: datetime) -> datetime:
    """The first quarter hour (UTC) that starts at or after ``moment`` (tz-aware, any zone)."""
    moment = moment.astimezone(UTC)  # compared in UTC: a local time in a DST gap never equals it
    since = (moment - QUARTER_ORIGIN) // QUARTER
    start = QUARTER_ORIGIN + since * QUARTER
    return start if start == moment else start + QUARTER


# Dataset ids by name, per process, learnt from the name's statement. A renamed or
# deleted dataset's entry answers no row, and the name is looked up again.
_dataset_ids: dict[str, int] = {}


def _values(*, rater_id: int, dataset: str, day_start: datetime) -> dict:
    adapt = connection.ops.adapt_datetimefield_value
    return {
        "dataset": dataset,
        "rater": rater_id,
        "day_start": adapt(day_start),
        "first_quarter": adapt(first_quarter(day_start)),
    }


def progress_claim_read(*, rater_id: int, dataset: str, day_start: datetime) -> ClaimRead | None:
    """The progress as a claim of ``rater_id`` in ``dataset`` reads it in its own statement
    (``progress_after_claim`` makes its row the progress after the claim), or None while
    this process has not learnt the dataset's id."""
    known = _dataset_ids.get(dataset)
    if known is None:
        return None
    values = _values(rater_id=rater_id, dataset=dataset, day_start=day_start) | {"dataset_id": known}
    del values["dataset"], values["rater"]  # the claim's own
    return ClaimRead(statement=progress_with_claim_statement(), values=values, width=PROGRESS_WITH_CLAIM_WIDTH)


PROGRESS_WITH_CLAIM_WIDTH = 8


def progress_after_claim(read_row: tuple, *, slot_id: int, lease_expires_at, resumed: bool, leased_at) -> tuple | None:
    """``progress_row``'s row after a claim, from the row the claim read before its lease
    (``progress_claim_read``): the claim changes the rater's oldest held lease, and the
    gold pairs left when it leased a gold pair's source (see below). A
    resumed lease was held already, now until ``lease_expires_at``; a new one, leased at
    ``leased_at``, is the oldest when nothing held is older (by lease time, one without
    first, a tie by id, as the statement orders them). None when the read found no
    dataset (renamed meanwhile), or when the claim leased a slot of a gold pair's source
    pair (which changes the gold pairs left): then ask ``progress_row``."""
    dataset_id, today, kinds, left, held_id, held_until, held_at, gold_source_claimed = read_row
    if dataset_id is None or gold_source_claimed:
        return None
    if resumed:
        if held_id == slot_id:
            held_until = lease_expires_at
    elif held_id is None or (held_at is not None and (held_at, held_id) > (leased_at, slot_id)):
        held_id, held_until = slot_id, lease_expires_at
    return dataset_id, today, kinds, left, held_id, held_until


def progress_row(*, rater_id: int, dataset: str, day_start: datetime) -> tuple | None:
    """(dataset id, ratings today, kinds, pairs left per kind (in the kinds' order, may be
    zero or less), held lease id, held until), or None for an unknown dataset."""
    values = _values(rater_id=rater_id, dataset=dataset, day_start=day_start)
    with hot_cursor() as cursor:
        known = _dataset_ids.get(dataset)
        if known is not None:
            execute(cursor, progress_by_id_statement(), {**values, "dataset_id": known})
            row = cursor.fetchone()
            if row is not None:
                return row
            _dataset_ids.pop(dataset, None)
        execute(cursor, progress_statement(), values)
        row = cursor.fetchone()
    if row is not None:
        _dataset_ids[dataset] = row[0]
    return row
