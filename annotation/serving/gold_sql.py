"""The gold claim as one PostgreSQL statement (see ``annotation.serving.gold``); a gold
lease's submit shares the slots' statement (``submit_statements.submit_fast``)."""

from __future__ import annotations

from functools import cache

from annotation.core.sql import Statement
from annotation.models import (
    DEFAULT_GOLD_ONE_IN,
    Caption,
    Dataset,
    GoldCounter,
    GoldLease,
    GoldPair,
    GoldPurpose,
    GoldRating,
    Image,
    PairSkip,
    Qualification,
    QualitySettings,
    QuizAttempt,
    RaterPause,
    RatingSlot,
)
from annotation.serving.sql_text import SqlTable, named_only_literals
from annotation.serving.statements import NOT_TOUCHED_SQL, assignment_rows

# ``held``: the rater's gold lease of an active gold pair (resumed, renewed). Otherwise,
# when the rater holds no ordinary slot of these kinds either (``busy``: that one is
# resumed first), with probability 1 / gold_one_in (``due``), and only while the ordinary
# claim could serve them a slot of these kinds now (``work``: gold follows the ordinary
# pace, so an empty queue never answers with gold; asked as the claim walks the open
# queue, from the head of ``slot_claim_idx`` per kind: an unordered EXISTS was planned as
# a scan of the slots table, which passed every rated slot stored before the first open
# one, 1,767 rows 30,000 slots into a run), a random active gold pair of a kind
# they may rate is leased to them: one they never met in the queue or in any quiz attempt
# (its questions, answered or not, also after the pair left the quiz), not one of the
# quiz's, and not the source of a promoted gold pair they rated or skipped. No row: serve
# an ordinary pair. ``work`` is a subquery of ``due`` after the cheap random() test, so
# the claims that serve no gold do not pay for it (PostgreSQL evaluates subplans last).
# ``pick`` tries first the serveable pair at a random rank among them (their number is
# ``GoldCounter``'s, kept by triggers: the scan stops at that rank, half the pool on
# average, where the shuffle read and sorted all of it, 1.2 of a gold claim's 1.5 ms at
# 2,000 gold pairs). Should the rater have met it, the candidate pairs are shuffled and
# tested row by row until one passes, so a due claim costs one shuffle at most, not those
# tests for every gold pair. Each pair the rater has not met is served with the same
# chance either way: 1/n at the first try, and the same share of the shuffle's. That
# needs the counter at no less than the pool (a pair past its count would come from the
# shuffle alone); the triggers keep it exact, and a lost row sends every pick to the
# shuffle. The tests
# are one NOT (EXISTS ... OR ...) on purpose: PostgreSQL turns separate NOT EXISTS into anti
# joins, and a merge or hash anti join may lose the shuffled order (always the lowest id);
# an OR of sublinks stays a filter over the shuffled rows.
_GOLD_CLAIM_SQL = """
WITH ds AS (
    SELECT d.{dataset.id}, COALESCE(q.{settings.gold_one_in}, {default_one_in}) AS one_in
    FROM {dataset} d LEFT JOIN {settings} q ON q.{settings.dataset} = d.{dataset.id}
    WHERE d.{dataset.name} = %(dataset)s
      AND NOT EXISTS (
          SELECT 1 FROM {pause} rp
          WHERE rp.{pause.rater} = %(rater)s AND rp.{pause.dataset} = d.{dataset.id} AND rp.{pause.lifted_at} IS NULL
      )
),
kinds AS (
    SELECT DISTINCT q.{qualification.kind} FROM {qualification} q
    WHERE q.{qualification.rater} = %(rater)s
      AND (q.{qualification.dataset} IS NULL OR q.{qualification.dataset} IN (SELECT {dataset.id} FROM ds))
      AND (q.{qualification.kind} = %(kind)s::varchar
           OR %(kind)s::varchar IS NULL AND q.{qualification.kind} NOT IN ({named_only}))
),
held AS (
    SELECT g.{lease.id} FROM {lease} g JOIN ds ON g.{lease.dataset} = ds.{dataset.id}
    JOIN {gold} hp ON hp.{gold.id} = g.{lease.gold_pair} AND hp.{gold.active}
    WHERE g.{lease.rater} = %(rater)s AND g.{lease.state} = 'leased'
      AND g.{lease.kind} IN (SELECT {qualification.kind} FROM kinds)
    ORDER BY g.{lease.leased_at} LIMIT 1
    FOR UPDATE OF g
),
busy AS (
    SELECT 1 FROM {slot} s JOIN ds ON s.{slot.dataset} = ds.{dataset.id}
    WHERE s.{slot.rater} = %(rater)s AND s.{slot.state} = 'leased'
      AND s.{slot.kind} IN (SELECT {qualification.kind} FROM kinds)
    LIMIT 1
),
due AS (
    SELECT ds.{dataset.id} FROM ds
    WHERE ds.one_in > 0 AND (%(drawn)s OR random() * ds.one_in < 1)
      AND NOT EXISTS (SELECT 1 FROM held) AND NOT EXISTS (SELECT 1 FROM busy)
      AND (
          EXISTS (
              SELECT 1 FROM kinds k CROSS JOIN LATERAL (
                  SELECT 1 FROM {slot} s
                  WHERE s.{slot.dataset} = ds.{dataset.id} AND s.{slot.kind} = k.{qualification.kind}
                    AND s.{slot.state} = 'open' AND {not_touched}
                  ORDER BY s.{slot.priority} DESC, s.{slot.pair_done} DESC, s.{slot.pair}, s.{slot.index}
                  LIMIT 1
              ) head
          )
          OR EXISTS (
              SELECT 1 FROM {slot} s
              WHERE s.{slot.dataset} = ds.{dataset.id} AND s.{slot.state} = 'leased'
                AND s.{slot.lease_expires_at} < %(now)s
                AND s.{slot.kind} IN (SELECT {qualification.kind} FROM kinds) AND {not_touched}
          )
      )
),
serveable AS (
    SELECT g.{gold.id}, g.{gold.kind}, g.{gold.dataset}, g.{gold.source_pair}
    FROM {gold} g JOIN due ON g.{gold.dataset} = due.{dataset.id}
    WHERE g.{gold.active} AND NOT g.{gold.in_quiz} AND g.{gold.kind} IN (SELECT {qualification.kind} FROM kinds)
),
pick AS (
    SELECT gp.{gold.id}, gp.{gold.kind}, gp.{gold.dataset}
    FROM (
        (
            SELECT * FROM serveable
            OFFSET COALESCE((
                SELECT floor(random() * sum(c.{gold_counter.pairs_serveable}))::bigint
                FROM {gold_counter} c JOIN due ON c.{gold_counter.dataset} = due.{dataset.id}
                WHERE c.{gold_counter.kind} IN (SELECT {qualification.kind} FROM kinds)
            ), {past_any_row})
            LIMIT 1
        )
        UNION ALL
        (SELECT * FROM serveable ORDER BY random())
    ) gp
    WHERE NOT (
        EXISTS (SELECT 1 FROM {lease} l WHERE l.{lease.gold_pair} = gp.{gold.id} AND l.{lease.rater} = %(rater)s)
        OR EXISTS (
            SELECT 1 FROM {gold_rating} r
            WHERE r.{gold_rating.gold_pair} = gp.{gold.id} AND r.{gold_rating.rater} = %(rater)s
              AND r.{gold_rating.purpose} = {quiz_purpose}
        )
        OR EXISTS (
            SELECT 1 FROM {attempt} a
            WHERE a.{attempt.rater} = %(rater)s AND a.{attempt.dataset} = gp.{gold.dataset}
              AND a.{attempt.kind} = gp.{gold.kind} AND a.{attempt.order} @> to_jsonb(gp.{gold.id})
        )
        OR gp.{gold.source_pair} IS NOT NULL AND (
            EXISTS (SELECT 1 FROM {slot} m WHERE m.{slot.pair} = gp.{gold.source_pair} AND m.{slot.rater} = %(rater)s)
            OR EXISTS (
                SELECT 1 FROM {skip} x WHERE x.{skip.pair} = gp.{gold.source_pair} AND x.{skip.rater} = %(rater)s
            )
        )
    )
    LIMIT 1
),
fresh AS (
    INSERT INTO {lease} ({lease.id}, {lease.gold_pair}, {lease.rater}, {lease.dataset}, {lease.kind}, {lease.state},
                         {lease.leased_at}, {lease.lease_expires_at}, {lease.flag_reason}, {lease.flag_note})
    SELECT nextval(pg_get_serial_sequence(%(slot_table)s, %(slot_pk)s)), pick.{gold.id}, %(rater)s,
           pick.{gold.dataset}, pick.{gold.kind}, 'leased', %(now)s, %(expires)s, '', ''
    FROM pick
    ON CONFLICT DO NOTHING
    RETURNING {lease.id}, {lease.gold_pair}, {lease.lease_expires_at}, false AS resumed
),
renewed AS (
    UPDATE {lease} g SET {lease.lease_expires_at} = %(expires)s FROM held WHERE g.{lease.id} = held.{lease.id}
    RETURNING g.{lease.id}, g.{lease.gold_pair}, g.{lease.lease_expires_at}, true AS resumed
),
chosen AS (SELECT * FROM renewed UNION ALL SELECT * FROM fresh)
{assignment_rows}
"""


@cache
def gold_claim() -> Statement:
    """One row (the assignment's columns, as the ordinary claim's) or none."""
    models = {
        "dataset": Dataset,
        "settings": QualitySettings,
        "pause": RaterPause,
        "qualification": Qualification,
        "lease": GoldLease,
        "gold": GoldPair,
        "slot": RatingSlot,
        "caption": Caption,
        "image": Image,
        "skip": PairSkip,
        "gold_rating": GoldRating,
        "attempt": QuizAttempt,
        "gold_counter": GoldCounter,
    }
    tables = {name: SqlTable(model) for name, model in models.items()}
    # As the ordinary claim's (annotation.serving.statements.NOT_TOUCHED_SQL): a pair the
    # rater rated, holds or skipped is no work for them.
    not_touched = NOT_TOUCHED_SQL.format(**tables)
    sql = _GOLD_CLAIM_SQL.format(
        **tables,
        default_one_in=DEFAULT_GOLD_ONE_IN,
        named_only=named_only_literals(),
        not_touched=not_touched,
        assignment_rows=assignment_rows(
            "chosen", lease_model=GoldLease, pair_field="gold_pair", pair_model=GoldPair, resumed="c.resumed"
        ),
        quiz_purpose=f"'{GoldPurpose.QUIZ.value}'",
        past_any_row=2**63 - 1,
    )
    params = (
        ("dataset", "text"),
        ("rater", "bigint"),
        ("kind", "varchar"),
        ("now", "timestamptz"),
        ("expires", "timestamptz"),
        ("slot_table", "text"),
        ("slot_pk", "text"),
        ("drawn", "boolean"),
    )
    return Statement("gold_claim_v8", sql, params)
