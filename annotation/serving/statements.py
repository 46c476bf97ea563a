"""The claim's SQL statements, the switch that chooses them, and ``all_statements``: every
statement of the queue's hot path (the submit's are in ``submit_statements``).

The statements run on PostgreSQL only (anything else takes the portable ORM paths); they
are prepared once per connection (see ``annotation.core.sql``). Table and column names come
from the models (``annotation.serving.sql_text``). Each statement is rendered
once, on first use. The names of the prepared statements are unique per statement; the
text must keep its plan (the claim walks ``slot_claim_idx``, see test_queue_plan).
"""

from __future__ import annotations

from functools import cache

from django.db import connection

from annotation.core.sql import Statement
from annotation.models import (
    Caption,
    Dataset,
    GoldLease,
    GoldPair,
    Image,
    Pair,
    RatingSlot,
)
from annotation.serving.sql_text import SqlTable, render_sql
from annotation.serving.submit_statements import (
    GOLD_STORED,
    SUBMITTED_SETTING,
    lock_pair_and_slot,
    submit,
    submit_fast,
    submit_fast_stashed,
)

# A lease need not survive a database crash: losing the last instants of claims only
# leaves those slots open again. So the claim does not wait for its WAL flush;
# submissions do.
ASYNC_COMMIT = "SET LOCAL synchronous_commit TO OFF; "


def async_commit_prefix() -> str:
    """ASYNC_COMMIT for a claim that is its own transaction; nothing inside a caller's
    transaction (a participant's submit and next claim), whose rating must wait for its
    WAL flush like any other: SET LOCAL would last to that transaction's end."""
    return "" if connection.in_atomic_block else ASYNC_COMMIT


# ``ds`` is empty for a rater an admin (or the gold rule) paused in the dataset: such a
# rater is served nothing, and the caller says why. ``kinds``: those granted to the rater
# in this dataset or in every dataset (a grant without a dataset).
# Candidates: the rater's own lease (held), the head of the open queue for each kind the
# rater may rate (fresh), and an expired lease in reach (stale: by priority, then the
# pair's count when it was claimed, as a leased slot's copy is not kept up to date
# (RatingSlot.pair_done), then the oldest expiry). ``pick`` takes
# the held one, else the highest batch priority, an expired lease before fresh work, and
# among the kinds' heads one at random: each kind's head is its pair closest to
# completion, and comparing that across kinds would finish one kind before another
# starts. The others are unlocked when the statement commits. ``held`` waits for its row (only this rater
# touches it); the rest skip rows other claims hold.
# With ``gold`` true, gold comes first as the gold claim would serve it: a gold lease of an
# active gold pair the rater holds is renewed and answered (``gheld``, ``grenewed``: the
# same one statement as resuming an ordinary slot, so a rater re-claiming a held item
# cannot tell by the round trips which it is); else ``gold_turn``: the rater holds no
# slot and draws a gold item (probability 1 / gold_one_in, in a dataset with active gold
# pairs of their kinds outside the quiz). Then nothing is leased and the answer is one row
# of NULLs: the gold claim decides, and a rater whom gold serves nothing claims again
# without the turn. So a claim that serves no gold costs one statement. The caller draws
# the turn itself when it knows the dataset's rate; the claims it did not draw run
# ``claim_held_gold``, the same statement without ``gold_turn`` (23-26 us less
# PostgreSQL CPU per claim, 4 %, interleaved in bench-cycle's gold database).
_CLAIM_SQL = """
WITH ds AS (
    SELECT d.{dataset.id} FROM {dataset} d WHERE d.{dataset.name} = %(dataset)s
      AND NOT EXISTS (
          SELECT 1 FROM {pause} rp
          WHERE rp.{pause.rater} = %(rater)s AND rp.{pause.dataset} = d.{dataset.id} AND rp.{pause.lifted_at} IS NULL
      ){after_submit}
),
kinds AS (
    SELECT DISTINCT q.{qualification.kind} FROM {qualification} q
    WHERE q.{qualification.rater} = %(rater)s
      AND (q.{qualification.dataset} IS NULL OR q.{qualification.dataset} IN (SELECT {dataset.id} FROM ds))
      AND (q.{qualification.kind} = %(kind)s::varchar
           OR %(kind)s::varchar IS NULL AND q.{qualification.kind} NOT IN ({named_only}))
),
held AS (
    SELECT s.{slot.id}, 0 AS src, s.{slot.priority}, s.{slot.pair_done}
    FROM {slot} s JOIN ds ON s.{slot.dataset} = ds.{dataset.id}
    WHERE s.{slot.rater} = %(rater)s AND s.{slot.state} = {state_leased}
      AND s.{slot.kind} IN (SELECT {qualification.kind} FROM kinds)
    ORDER BY s.{slot.leased_at}
    LIMIT 1
    FOR UPDATE OF s
),
{gold_ctes}fresh AS (
    SELECT c.{slot.id}, 2 AS src, c.{slot.priority}, c.{slot.pair_done}
    FROM ds CROSS JOIN kinds k CROSS JOIN LATERAL (
        SELECT s.{slot.id}, s.{slot.priority}, s.{slot.pair_done}
        FROM {slot} s
        WHERE s.{slot.dataset} = ds.{dataset.id} AND s.{slot.kind} = k.{qualification.kind}
          AND s.{slot.state} = {state_open}
          AND {not_touched}
        ORDER BY s.{slot.priority} DESC, s.{slot.pair_done} DESC, s.{slot.pair}, s.{slot.index}
        LIMIT 1
        FOR UPDATE OF s SKIP LOCKED
    ) c
    WHERE NOT EXISTS (SELECT 1 FROM held) AND {no_gold_now}
),
stale AS (
    SELECT s.{slot.id}, 1 AS src, s.{slot.priority}, s.{slot.pair_done}
    FROM {slot} s JOIN ds ON s.{slot.dataset} = ds.{dataset.id}
    WHERE s.{slot.state} = {state_leased} AND s.{slot.lease_expires_at} < %(now)s
      AND s.{slot.kind} IN (SELECT {qualification.kind} FROM kinds)
      AND {not_touched}
      AND NOT EXISTS (SELECT 1 FROM held) AND {no_gold_now}
    ORDER BY s.{slot.priority} DESC, s.{slot.pair_done} DESC, s.{slot.lease_expires_at}
    LIMIT 1
    FOR UPDATE OF s SKIP LOCKED
),
pick AS (
    SELECT {slot.id}, src FROM (
        SELECT * FROM held UNION ALL SELECT * FROM fresh UNION ALL SELECT * FROM stale
    ) candidates
    WHERE {no_gold_now}
    ORDER BY src = 0 DESC, {slot.priority} DESC, src = 1 DESC, random()
    LIMIT 1
),
claimed AS (
    UPDATE {slot} s SET
        {slot.state} = {state_leased},
        {slot.previous_rater} = CASE WHEN pick.src = 1 THEN s.{slot.rater} ELSE s.{slot.previous_rater} END,
        {slot.rater} = %(rater)s,
        {slot.leased_at} = CASE WHEN pick.src = 0 THEN s.{slot.leased_at} ELSE %(now)s END,
        {slot.lease_expires_at} = %(expires)s
    FROM pick
    WHERE s.{slot.id} = pick.{slot.id}
    RETURNING s.{slot.id}, s.{slot.pair}, s.{slot.lease_expires_at}, pick.src = 0 AS resumed
)
{answer}
"""

# The claim's gold half (``claim``): the rater's gold lease of an active gold pair
# renewed (``gheld``, ``grenewed``), or gold's turn; then the ordinary half claims nothing.
# ``gold_rate``: the dataset's, answered in every row (alone in ``claim_rate_checked``).
# ``{rate_check}`` and ``{rate_kept}`` are ``claim_held_gold``'s (empty in ``claim``).
_GOLD_RATE_SQL = """gold_rate AS (
    SELECT COALESCE(
        (SELECT q.{settings.gold_one_in} FROM {settings} q WHERE q.{settings.dataset} = ds.{dataset.id}),
        {default_one_in}
    ) AS one_in
    FROM ds
),
"""
_GOLD_CTES_SQL = (
    _GOLD_RATE_SQL
    + """{rate_check}gheld AS (
    SELECT gl.{gold_lease.id}, gl.{gold_lease.gold_pair}
    FROM {gold_lease} gl JOIN ds ON gl.{gold_lease.dataset} = ds.{dataset.id}
    JOIN {gold} hp ON hp.{gold.id} = gl.{gold_lease.gold_pair} AND hp.{gold.active}
    WHERE %(gold)s AND gl.{gold_lease.rater} = %(rater)s AND gl.{gold_lease.state} = 'leased'
      AND gl.{gold_lease.kind} IN (SELECT {qualification.kind} FROM kinds){rate_kept}
    ORDER BY gl.{gold_lease.leased_at}
    LIMIT 1
    FOR UPDATE OF gl
),
grenewed AS (
    UPDATE {gold_lease} g SET {gold_lease.lease_expires_at} = %(expires)s FROM gheld
    WHERE g.{gold_lease.id} = gheld.{gold_lease.id}
    RETURNING g.{gold_lease.id}, g.{gold_lease.gold_pair}, g.{gold_lease.lease_expires_at}
),
"""
)
# Gold's turn: drawn by the caller at the dataset's rate (``drawn_at``, the rate it drew
# with: a turn drawn at a rate changed since is drawn again here), else drawn here.
_GOLD_TURN_SQL = """gold_turn AS (
    SELECT 1 FROM ds, gold_rate o
    WHERE %(gold)s AND NOT EXISTS (SELECT 1 FROM gheld) AND NOT EXISTS (SELECT 1 FROM held)
      AND o.one_in > 0 AND (o.one_in = %(drawn_at)s OR random() * o.one_in < 1)
      AND EXISTS (
          SELECT 1 FROM {gold} g
          WHERE g.{gold.dataset} = ds.{dataset.id} AND g.{gold.active} AND NOT g.{gold.in_quiz}
            AND g.{gold.kind} IN (SELECT {qualification.kind} FROM kinds)
      )
),
"""
_GOLD_HALF = "NOT EXISTS (SELECT 1 FROM gold_turn) AND NOT EXISTS (SELECT 1 FROM gheld)"
# ``claim_held_gold``'s: it was chosen on a draw at the rate the caller knew (``one_in``);
# should the dataset's rate differ, it claims nothing and answers a row of NULLs with the
# rate, and the caller draws again. Else ``gheld`` and ``grenewed`` as in ``claim``.
_RATE_CHECK_SQL = """rate_changed AS (SELECT 1 FROM gold_rate WHERE %(gold)s AND one_in <> %(one_in)s),
"""
_RATE_KEPT_SQL = "\n      AND NOT EXISTS (SELECT 1 FROM rate_changed)"
_HELD_GOLD_HALF = "NOT EXISTS (SELECT 1 FROM gheld) AND NOT EXISTS (SELECT 1 FROM rate_changed)"
# The dataset's gold rate, a last column of every row of the statements with the gold
# half: the process draws gold's turn itself with it next time (``claim._claim_postgres``).
_ONE_IN_COLUMN = ", (SELECT one_in FROM gold_rate)"
_NULL_ROW = "SELECT " + ", ".join(["NULL"] * 18)

# ``claim_ordinary``'s stand-in for the gold half, for a dataset with no active gold pair:
# there the gold half finds nothing (a held gold lease and gold's turn both need an
# active gold pair), and leaving it out spares each claim the gold tables' locks and
# plan nodes (a quarter of the claim's PostgreSQL CPU). Should the dataset have one (or
# have gained one), with ``gold`` it claims nothing and answers a row of NULLs: the
# caller then asks ``claim``.
_GOLD_ON_CTE_SQL = """gold_on AS (
    SELECT 1 FROM ds WHERE %(gold)s AND EXISTS (
        SELECT 1 FROM {gold} g WHERE g.{gold.dataset} = ds.{dataset.id} AND g.{gold.active}
    )
),
"""

# Of a candidate slot ``s``: the rater holds, rated or skipped none of its pair.
NOT_TOUCHED_SQL = """NOT EXISTS (
              SELECT 1 FROM {slot} m WHERE m.{slot.pair} = s.{slot.pair} AND m.{slot.rater} = %(rater)s OFFSET 0
          )
          AND NOT EXISTS (
              SELECT 1 FROM {skip} x WHERE x.{skip.pair} = s.{slot.pair} AND x.{skip.rater} = %(rater)s OFFSET 0
          )"""


def assignment_rows(source: str, *, lease_model, pair_field: str, pair_model, resumed: str, extra: str = "") -> str:
    """SQL selecting the assignment's columns (``shapes.assignment_of``: lease id, pair id,
    expiry, resumed, kind, dataset, both sides' texts and images) for the leases in
    ``source`` (a CTE with the lease's id, pair and expiry columns). ``pair_field`` names
    the lease's field pointing at ``pair_model``; ``resumed`` is an SQL expression;
    ``extra``, columns after them (", expression ..."). The claim and the gold claim answer
    in this one shape."""
    lease, pair = SqlTable(lease_model), SqlTable(pair_model)
    dataset, caption, image = SqlTable(Dataset), SqlTable(Caption), SqlTable(Image)
    pair_id = getattr(lease, pair_field)
    return f"""SELECT c.{lease.id}, c.{pair_id}, c.{lease.lease_expires_at}, {resumed},
       p.{pair.kind}, d.{dataset.name}, d.{dataset.images_root}, d.{dataset.image_url_prefix},
       ca.{caption.text}, cb.{caption.text},
       ia.{image.key}, ia.{image.file_path}, ia.{image.width}, ia.{image.height},
       ib.{image.key}, ib.{image.file_path}, ib.{image.width}, ib.{image.height}{extra}
FROM {source} c
JOIN {pair} p ON p.{pair.id} = c.{pair_id}
JOIN {dataset} d ON d.{dataset.id} = p.{pair.dataset}
LEFT JOIN {caption} ca ON ca.{caption.id} = p.{pair.caption_a}
LEFT JOIN {caption} cb ON cb.{caption.id} = p.{pair.caption_b}
LEFT JOIN {image} ia ON ia.{image.id} = p.{pair.image_a}
LEFT JOIN {image} ib ON ib.{image.id} = p.{pair.image_b}"""


def _claim_statement(
    name: str,
    params: tuple[tuple[str, str], ...],
    read: Statement | None,
    *,
    gold_ctes: str,
    no_gold_now: str,
    gold_rows: str,
    extra: str = "",
    after_submit: bool = False,
) -> Statement:
    """A claim statement of the shape ``_CLAIM_SQL``: its gold CTEs, the condition that
    nothing of gold comes now, the rows after the slot's, ``extra`` columns of the slot's;
    with ``read`` in it (``_with_read``); ``after_submit``: as ``claim_ordinary_after_submit``
    runs it, after a submit in its transaction."""
    slot_rows = assignment_rows(
        "claimed", lease_model=RatingSlot, pair_field="pair", pair_model=Pair, resumed="c.resumed", extra=extra
    )
    answer = f"{slot_rows}\n{gold_rows}"
    ctes = ""
    if read is not None:
        # Every row of the claim with the read's row after it (its columns NULL when it
        # has none): a CTE may hold a WITH of its own, whose names shadow the claim's.
        ctes = f",\nalongside AS (\n{read.sql}\n)\n"
        answer = f"SELECT a.*, r.* FROM (\n{answer}\n) a LEFT JOIN alongside r ON true"
    if after_submit:
        # One row whatever was claimed: the claim's row (or NULLs) and whether there was
        # one, then what the submit before it stored.
        answer = (
            f"SELECT y.*, current_setting('{SUBMITTED_SETTING}', true) FROM (SELECT 1) one LEFT JOIN (\n"
            f"SELECT x.*, true AS row_found FROM (\n{answer}\n) x\n) y ON true"
        )
    sql = render_sql(
        _CLAIM_SQL,
        not_touched=render_sql(NOT_TOUCHED_SQL),
        gold_ctes=gold_ctes,
        no_gold_now=no_gold_now,
        answer=ctes + answer,
        after_submit=_AFTER_SUBMIT_SQL if after_submit else "",
    )
    name, params = _with_read(name, params, read)
    return Statement(name, sql, params)


def _with_read(name: str, params: tuple[tuple[str, str], ...], read: Statement | None) -> tuple[str, tuple]:
    """The name and parameters of a claim statement with ``read`` in it: the claim's
    parameters, then the read's others (a name both use must have one type)."""
    if read is None:
        return name, params
    types = dict(params)
    for param, sql_type in read.params:
        if types.setdefault(param, sql_type) != sql_type:
            raise ValueError(f"{read.name}: parameter {param} is {sql_type}, the claim's is {types[param]}")
    return f"{name}_with_{read.name}", tuple(types.items())


def _gold_half_rows(*, null_row_from: str) -> str:
    """The rows after the slot's in a statement with the gold half: a renewed gold lease
    (``grenewed``), then the row of NULLs when ``null_row_from`` (a CTE) has a row; each
    with the dataset's gold rate last."""
    renewed = assignment_rows(
        "grenewed",
        lease_model=GoldLease,
        pair_field="gold_pair",
        pair_model=GoldPair,
        resumed="true",
        extra=_ONE_IN_COLUMN,
    )
    return f"UNION ALL\n{renewed}\nUNION ALL\n{_NULL_ROW}{_ONE_IN_COLUMN}\nFROM {null_row_from}"


_CLAIM_PARAMS = (
    ("dataset", "text"),
    ("rater", "bigint"),
    ("kind", "varchar"),
    ("now", "timestamptz"),
    ("expires", "timestamptz"),
    ("gold", "boolean"),
)


@cache
def claim(read: Statement | None = None) -> Statement:
    """The claim (see ``annotation.serving.claim``). Returns one row, the assignment (slot,
    pair, expiry, resumed, kind, dataset and both sides' texts and images), a row of
    NULLs for gold's turn, or none; every row ends with the dataset's gold rate (one in
    ``gold_one_in`` items, 0 for none). ``drawn_at``: the rate at which the caller drew
    gold's turn, or NULL to draw it here. With ``read`` (``shapes.ClaimRead``), each row
    ends with the read's columns."""
    return _claim_statement(
        "queue_claim_v7",
        (*_CLAIM_PARAMS, ("drawn_at", "integer")),
        read,
        gold_ctes=render_sql(_GOLD_CTES_SQL, rate_check="", rate_kept="") + render_sql(_GOLD_TURN_SQL),
        no_gold_now=_GOLD_HALF,
        gold_rows=_gold_half_rows(null_row_from="gold_turn"),
        extra=_ONE_IN_COLUMN,
    )


@cache
def claim_held_gold(read: Statement | None = None) -> Statement:
    """``claim`` for a claim whose gold turn the caller did not draw, at the rate
    ``one_in``: a held gold lease is resumed as there (in one statement, as a held slot
    is), and no turn is taken; the same rows, and a row of NULLs (nothing claimed) when
    the dataset's rate is no longer ``one_in``. Sparing ``gold_turn`` spares its plan
    nodes on nearly every claim of a dataset that serves gold."""
    return _claim_statement(
        "queue_claim_held_gold_v1",
        (*_CLAIM_PARAMS, ("one_in", "integer")),
        read,
        gold_ctes=render_sql(_GOLD_CTES_SQL, rate_check=_RATE_CHECK_SQL, rate_kept=_RATE_KEPT_SQL),
        no_gold_now=_HELD_GOLD_HALF,
        gold_rows=_gold_half_rows(null_row_from="rate_changed"),
        extra=_ONE_IN_COLUMN,
    )


@cache
def claim_rate_checked(read: Statement | None = None) -> Statement:
    """``claim_held_gold`` without resuming a held gold lease, for a claim whose caller knows
    the rater holds none of these kinds: the rows of ``claim_ordinary``, each with the
    dataset's gold rate, and the row of NULLs when the rate is no longer ``one_in``.
    Sparing the gold lease's lookup and its item's joins spares about a seventh of the
    claim's PostgreSQL CPU on nearly every claim of a dataset that serves gold."""
    return _claim_statement(
        "queue_claim_rate_checked_v1",
        (*_CLAIM_PARAMS, ("one_in", "integer")),
        read,
        gold_ctes=render_sql(_GOLD_RATE_SQL + _RATE_CHECK_SQL),
        no_gold_now="NOT EXISTS (SELECT 1 FROM rate_changed)",
        gold_rows=f"UNION ALL\n{_NULL_ROW}{_ONE_IN_COLUMN}\nFROM rate_changed",
        extra=_ONE_IN_COLUMN,
    )


@cache
def claim_ordinary(read: Statement | None = None) -> Statement:
    """``claim`` without its gold half, for a dataset without active gold pairs: the
    assignment, or none; with ``gold`` in a dataset that has one, a row of NULLs and
    nothing claimed (ask ``claim``)."""
    return _claim_statement(
        "queue_claim_ordinary_v1",
        _CLAIM_PARAMS,
        read,
        gold_ctes=render_sql(_GOLD_ON_CTE_SQL),
        no_gold_now="NOT EXISTS (SELECT 1 FROM gold_on)",
        gold_rows=f"UNION ALL\n{_NULL_ROW}\nFROM gold_on",
    )


# ``claim_ordinary_after_submit``'s condition on its dataset: the submit before it in its
# transaction stored a slot's rating (``submit_statements.submit_fast_stashed`` sets the
# setting only then, or for a gold lease's rating, which may pause the rater: then the
# caller claims after the pause's decision), so that a submission refused claims nothing.
_AFTER_SUBMIT_SQL = (
    f"\n      AND current_setting('{SUBMITTED_SETTING}', true) <> ''"
    f"\n      AND NOT starts_with(current_setting('{SUBMITTED_SETTING}', true), '{GOLD_STORED} ')"
)


@cache
def claim_ordinary_after_submit(read: Statement | None = None) -> Statement:
    """``claim_ordinary`` run after ``submit_statements.submit_fast_stashed`` in one
    transaction and one round trip (``annotation.serving.submit_then_claim``): it
    claims only when that submit stored its rating, and answers one row whatever it
    claimed: ``claim_ordinary``'s row (the assignment or the row of NULLs, then the
    read's columns) or NULLs when it had none, then ``row_found`` (true when it had one),
    then what the submit stored (``submit_statements.SUBMITTED_SETTING``; empty or NULL
    when nothing)."""
    return _claim_statement(
        "queue_claim_ordinary_after_submit_v2",
        _CLAIM_PARAMS,
        read,
        gold_ctes=render_sql(_GOLD_ON_CTE_SQL),
        no_gold_now="NOT EXISTS (SELECT 1 FROM gold_on)",
        gold_rows=f"UNION ALL\n{_NULL_ROW}\nFROM gold_on",
        after_submit=True,
    )


def all_statements() -> tuple[Statement, ...]:
    """Every statement of the hot path (for checks over all of them)."""
    return (
        claim(),
        claim_held_gold(),
        claim_rate_checked(),
        claim_ordinary(),
        claim_ordinary_after_submit(),
        lock_pair_and_slot(),
        submit(),
        submit_fast(),
        submit_fast_stashed(),
    )
