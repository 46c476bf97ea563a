"""The gold claim as one PostgreSQL statement (see ``annotation.gold.serving``)."""

from __future__ import annotations

from functools import cache

from annotation.models import (
    DEFAULT_GOLD_ONE_IN,
    Caption,
    Dataset,
    GoldLease,
    GoldPair,
    Image,
    Qualification,
    QualitySettings,
    RaterPause,
    RatingSlot,
)
from annotation.queue.statements import _Table
from annotation.sql import Statement

# ``held``: the rater's gold lease (resumed, renewed). Otherwise, when the rater holds no
# ordinary slot of these kinds either (``busy``: that one is resumed first), with
# probability 1 / gold_one_in (``due``), a random active gold pair of a kind they may
# rate that they never met, and not one of the quiz's, is leased to them. No row: serve an ordinary pair.
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
      AND (%(kind)s::varchar IS NULL OR q.{qualification.kind} = %(kind)s::varchar)
),
held AS (
    SELECT g.{lease.id} FROM {lease} g JOIN ds ON g.{lease.dataset} = ds.{dataset.id}
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
    WHERE ds.one_in > 0 AND random() * ds.one_in < 1
      AND NOT EXISTS (SELECT 1 FROM held) AND NOT EXISTS (SELECT 1 FROM busy)
),
pick AS (
    SELECT gp.{gold.id}, gp.{gold.kind}, gp.{gold.dataset}
    FROM {gold} gp JOIN due ON gp.{gold.dataset} = due.{dataset.id}
    WHERE gp.{gold.active} AND NOT gp.{gold.in_quiz} AND gp.{gold.kind} IN (SELECT {qualification.kind} FROM kinds)
      AND NOT EXISTS (
          SELECT 1 FROM {lease} l WHERE l.{lease.gold_pair} = gp.{gold.id} AND l.{lease.rater} = %(rater)s
      )
    ORDER BY random() LIMIT 1
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
SELECT c.{lease.id}, c.{lease.gold_pair}, c.{lease.lease_expires_at}, c.resumed,
       gp.{gold.kind}, d.{dataset.name}, d.{dataset.images_root}, d.{dataset.image_url_prefix},
       ca.{caption.text}, cb.{caption.text},
       ia.{image.key}, ia.{image.file_path}, ia.{image.width}, ia.{image.height},
       ib.{image.key}, ib.{image.file_path}, ib.{image.width}, ib.{image.height}
FROM chosen c
JOIN {gold} gp ON gp.{gold.id} = c.{lease.gold_pair}
JOIN {dataset} d ON d.{dataset.id} = gp.{gold.dataset}
LEFT JOIN {caption} ca ON ca.{caption.id} = gp.{gold.caption_a}
LEFT JOIN {caption} cb ON cb.{caption.id} = gp.{gold.caption_b}
LEFT JOIN {image} ia ON ia.{image.id} = gp.{gold.image_a}
LEFT JOIN {image} ib ON ib.{image.id} = gp.{gold.image_b}
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
    }
    tables = {name: _Table(model) for name, model in models.items()}
    sql = _GOLD_CLAIM_SQL.format(**tables, default_one_in=DEFAULT_GOLD_ONE_IN)
    params = (
        ("dataset", "text"),
        ("rater", "bigint"),
        ("kind", "varchar"),
        ("now", "timestamptz"),
        ("expires", "timestamptz"),
        ("slot_table", "text"),
        ("slot_pk", "text"),
    )
    return Statement("gold_claim_v3", sql, params)
