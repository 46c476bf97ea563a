"""What PostgreSQL's autovacuum would have done to a benchmark's database, done by the
benchmark between its phases when the server runs with autovacuum off (this machine's
does; the production image's PostgreSQL has it on, as PostgreSQL does by default).

Without it a benchmark measured a state production never stays in: statistics taken
when a table was tiny, kept while it grew tenfold. The gold tables start a bench-queue
gold phase at a hundred rows, whose generic plans read them whole; at 1,000 gold
ratings the rater's progress cost 905 us of PostgreSQL per item against 333 us with
fresh statistics, and the gold claim 2,581 us against 950 (in one process,
4,000-item blocks). Autovacuum's own rules decide which tables: vacuum when the dead
rows, or the rows inserted since the last vacuum, pass their threshold; analyze when
the rows changed since the last analyze pass theirs (the server's autovacuum_*
settings; tables with their own autovacuum storage parameters are not read, the
project sets none).

Its work runs with the server otherwise idle, before a phase's meter starts. Autovacuum
workers would have run within the phases, where the benchmarks count what the
postmaster reaps, so the benchmarks report this work's backend CPU beside each phase's
figures instead (``cpu_s``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import psycopg2
from _cpu import run_ns

# pg_settings names of autovacuum's thresholds, in Thresholds' field order.
SETTINGS = (
    "autovacuum_vacuum_threshold",
    "autovacuum_vacuum_scale_factor",
    "autovacuum_vacuum_insert_threshold",
    "autovacuum_vacuum_insert_scale_factor",
    "autovacuum_analyze_threshold",
    "autovacuum_analyze_scale_factor",
)


@dataclass(frozen=True)
class Thresholds:
    """Autovacuum's thresholds: a base count of rows plus a share of the table's rows."""

    vacuum_base: float
    vacuum_scale: float
    insert_base: float  # -1 turns the insert rule off, as in PostgreSQL
    insert_scale: float
    analyze_base: float
    analyze_scale: float


@dataclass(frozen=True)
class TableActivity:
    """One table's rows and its changes since its last vacuum and analyze (pg_stat_user_tables)."""

    name: str
    rows: float  # pg_class.reltuples; -1 (never vacuumed or analyzed) counts as 0
    dead: int
    inserted_since_vacuum: int
    changed_since_analyze: int


def due(table: TableActivity, limits: Thresholds) -> tuple[bool, bool]:
    """(vacuum, analyze): whether autovacuum would vacuum and analyze ``table`` now."""
    rows = max(table.rows, 0.0)
    vacuum = table.dead > limits.vacuum_base + limits.vacuum_scale * rows or (
        limits.insert_base >= 0 and table.inserted_since_vacuum > limits.insert_base + limits.insert_scale * rows
    )
    analyze = table.changed_since_analyze > limits.analyze_base + limits.analyze_scale * rows
    return vacuum, analyze


def command(table: TableActivity, limits: Thresholds) -> str | None:
    """The statement autovacuum's worker would run on ``table``, or None."""
    vacuum, analyze = due(table, limits)
    if not (vacuum or analyze):
        return None
    # PARALLEL 0: autovacuum never vacuums indexes with parallel workers, whose CPU the
    # backend's own reading would miss.
    verb = "VACUUM (ANALYZE, PARALLEL 0)" if vacuum and analyze else "VACUUM (PARALLEL 0)" if vacuum else "ANALYZE"
    return f'{verb} public."{table.name}"'


def server_runs_it(cursor) -> bool:
    cursor.execute("SELECT current_setting('autovacuum')::boolean")
    return cursor.fetchone()[0]


def thresholds(cursor) -> Thresholds:
    cursor.execute("SELECT name, setting::float8 FROM pg_settings WHERE name = ANY(%s)", [list(SETTINGS)])
    found = dict(cursor.fetchall())
    return Thresholds(*(found[name] for name in SETTINGS))


def activity(cursor) -> list[TableActivity]:
    cursor.execute(
        """
        SELECT s.relname, c.reltuples, s.n_dead_tup, s.n_ins_since_vacuum, s.n_mod_since_analyze
        FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
        WHERE s.schemaname = 'public' ORDER BY s.relname
        """
    )
    return [TableActivity(*row) for row in cursor.fetchall()]


def _backend_cpu_s(cursor) -> float:
    return run_ns(cursor.connection.get_backend_pid()) / 1e9


def catch_up(dsn: str) -> dict | None:
    """Vacuum and analyze what autovacuum would in the database at ``dsn``, if the server
    runs without it. Returns {"vacuumed", "analyzed": tables, "cpu_s": the backend's
    CPU}, or None when the server runs autovacuum itself."""
    done = {"vacuumed": 0, "analyzed": 0, "cpu_s": 0.0}
    connection = psycopg2.connect(dsn)
    connection.autocommit = True  # VACUUM cannot run in a transaction
    try:
        with connection.cursor() as cursor:
            if server_runs_it(cursor):
                return None
            started = _backend_cpu_s(cursor)
            limits = thresholds(cursor)
            for table in activity(cursor):
                statement = command(table, limits)
                if statement is None:
                    continue
                cursor.execute(statement)
                done["vacuumed"] += statement.startswith("VACUUM")
                done["analyzed"] += "ANALYZE" in statement
            done["cpu_s"] = _backend_cpu_s(cursor) - started
    finally:
        connection.close()
    return done


def emulating() -> bool:
    """BENCH_EMULATE_AUTOVACUUM: 1 (the default) to do autovacuum's work between phases on
    a server without it, 0 to measure without (the figures before it came)."""
    raw = os.environ.get("BENCH_EMULATE_AUTOVACUUM", "1").strip()
    if raw not in ("0", "1"):
        raise SystemExit(f"BENCH_EMULATE_AUTOVACUUM must be 0 or 1, got {raw!r}")
    return raw == "1"


def add(total: dict, done: dict | None) -> dict:
    """``total`` with one catch_up's counts added (a phase's over its rounds); unchanged
    when it did nothing (the server runs autovacuum)."""
    if done is None:
        return total
    return {key: total.get(key, 0) + value for key, value in done.items()}


def figures(total: dict, cycles: int) -> dict:
    """A phase's figures of the work, None when none was done (not emulated, or the server
    runs autovacuum): tables vacuumed and analyzed before its rounds, and the backend's
    CPU over the phase's measured cycles (not in its cpu_ms_per_cycle). The first round's
    work is mostly the vacuum of the freshly filled tables (an ANALYZE leaves their
    inserts counted), so this is the run's upkeep spread over its cycles, not a steady
    cost per cycle."""
    if not total:
        return {"autovacuum_emulated": None}
    return {
        "autovacuum_emulated": {
            "vacuumed": total.get("vacuumed", 0),
            "analyzed": total.get("analyzed", 0),
            "cpu_ms_per_cycle": round(1000 * total.get("cpu_s", 0.0) / max(cycles, 1), 3),
        }
    }
