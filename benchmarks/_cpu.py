"""Server CPU over a benchmark phase, read from /proc: a web server's whole process tree
and the PostgreSQL backends serving one database.

CPU time in /proc/<pid>/stat counts in clock ticks (utime, stime; cutime, cstime for
children the process reaped). A process tree's CPU is its live processes' own time plus
the reaped children's time its members report, so a worker that ends mid-phase still
counts. PostgreSQL backends are found by database name in pg_stat_activity; a backend
that ends within a phase (a connection past CONN_MAX_AGE, 60 s by default, is closed and
opened again) is counted through the postmaster, which reaps it: the postmaster's reaped
time grows by the backend's whole life, of which its time before the phase is taken off.
What else the postmaster reaps within the phase counts too: another database's backend
(the benchmarks' other servers sit idle meanwhile and keep their connections) and
autovacuum workers, also those cleaning up after the phase before (phases alternate):
that work is the database's cost of the writes all the same, but it can land in a
neighbouring phase; ``db_ended_s`` shows how much of a phase's figure came this way.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def run_ns(pid: int) -> int:
    """CPU nanoseconds a live process has run so far (/proc/<pid>/schedstat: finer than
    the clock ticks of /proc/<pid>/stat, for the work of one statement)."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name, or None for a gone pid."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text[text.rindex(")") + 2 :].split()


def _own_and_reaped_ticks(pid: int) -> tuple[int, int] | None:
    """(utime + stime, cutime + cstime) of a live pid, else None."""
    fields = _stat_fields(pid)
    if fields is None:
        return None
    # After the name: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14).
    return int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])


def _children(pid: int) -> list[int]:
    """Direct children of ``pid`` (every thread's list: the web server starts its workers from its main thread)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found.extend(int(child) for child in (task / "children").read_text().split())
        except FileNotFoundError:
            continue
    return found


def process_tree_ticks(root: int) -> int:
    """CPU ticks of ``root`` and every descendant, counting the ones they reaped; 0 when
    ``root`` is gone."""
    total = 0
    pending = [root]
    while pending:
        pid = pending.pop()
        ticks = _own_and_reaped_ticks(pid)
        if ticks is None:
            continue
        total += ticks[0] + ticks[1]
        pending.extend(_children(pid))
    return total


def postmaster_pid(cursor) -> int:
    """The postmaster of the server ``cursor`` is connected to (its backend's parent)."""
    cursor.execute("SELECT pg_backend_pid()")
    (backend,) = cursor.fetchone()
    return int(_stat_fields(backend)[1])


def backend_pids(cursor, database: str) -> list[int]:
    """PostgreSQL backends connected to ``database``, the asking session excluded."""
    cursor.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
        [database],
    )
    return [pid for (pid,) in cursor.fetchall()]


@dataclass(frozen=True)
class CpuReading:
    """A moment's CPU ticks: the web tree's, each PostgreSQL backend's and what the
    postmaster has reaped of its ended children."""

    web_ticks: int
    backend_ticks: dict[int, int]
    reaped_ticks: int


def cpu_reading(*, web_root: int, cursor, database: str) -> CpuReading:
    backends = {}
    for pid in backend_pids(cursor, database):
        ticks = _own_and_reaped_ticks(pid)
        if ticks is not None:
            backends[pid] = ticks[0]
    _, reaped = _own_and_reaped_ticks(postmaster_pid(cursor))
    return CpuReading(web_ticks=process_tree_ticks(web_root), backend_ticks=backends, reaped_ticks=reaped)


def cpu_spent(before: CpuReading, after: CpuReading) -> dict:
    """Seconds of CPU between two readings: ``web_s``; ``db_s``, the backends alive at the
    end (one born within the phase counts from zero) plus ``db_ended_s``, what the
    postmaster reaped in between less the ended backends' time before the phase; and
    ``backends_lost``: how many backends of the first reading ended."""
    db_ticks = sum(ticks - before.backend_ticks.get(pid, 0) for pid, ticks in after.backend_ticks.items())
    lost = set(before.backend_ticks) - set(after.backend_ticks)
    ended_ticks = after.reaped_ticks - before.reaped_ticks - sum(before.backend_ticks[pid] for pid in lost)
    return {
        "web_s": (after.web_ticks - before.web_ticks) / TICKS_PER_S,
        "db_s": (db_ticks + max(ended_ticks, 0)) / TICKS_PER_S,
        "db_ended_s": max(ended_ticks, 0) / TICKS_PER_S,
        "backends_lost": len(lost),
    }


def machine_ticks() -> tuple[int, int]:
    """(busy, total) CPU ticks of the whole machine since boot, all cores (/proc/stat:
    busy is everything but idle and iowait)."""
    fields = [int(value) for value in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def cpu_ms_per_cycle(spent: dict, cycles: int) -> dict:
    """Milliseconds of server CPU per cycle, in all and split web / PostgreSQL."""
    if cycles <= 0:
        return {"cpu_ms_per_cycle": None, "web_cpu_ms_per_cycle": None, "db_cpu_ms_per_cycle": None}
    web = 1000 * spent["web_s"] / cycles
    db = 1000 * spent["db_s"] / cycles
    return {
        "cpu_ms_per_cycle": round(web + db, 2),
        "web_cpu_ms_per_cycle": round(web, 2),
        "db_cpu_ms_per_cycle": round(db, 2),
    }
