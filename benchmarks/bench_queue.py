"""Rating-queue benchmark: the web server + PostgreSQL over HTTP, phases at 10,000 and
1,000,000 open slots.

Each phase gets a fresh database ``<BENCH_DB_PREFIX>_<phase>`` (dropped first if it
exists), migrated and filled server-side (``_queue_data.py``: SIS pairs with 5 open
slots each, raters with tokens) and served by its own web server (``python -m
web.serve``, the container's command; ports from BENCH_FIRST_PORT on). An asyncio
load generator (``_load.py``) with raw keep-alive HTTP/1.1 connections then measures the
phases in alternation, BENCH_ROUNDS rounds of short phases, pooling each phase's
samples, so that all see the same background load of a shared machine (the split-flow
phases with each other, then the page-flow ones: no more servers hold database
connections at once than one flow's, checked against the free connections before
anything starts):

- throughput: the phase's simulated raters (U) doing claim + submit with no pause (closed
  loop), completed cycles per second, and the server's CPU per cycle over those phases
  (``_cpu.py``: the web server's process tree and the PostgreSQL backends of the phase's
  database, read from /proc, with backends that end within the phase counted through the
  postmaster's reaped time), split into web and PostgreSQL;
- latency: an open loop of BENCH_OPEN_RATE claim + submit cycles per second, in the split
  flow in every phase (its figures are the claim request's latency; Poisson
  arrivals, each cycle by an idle rater from a pool of BENCH_OPEN_RATERS), p50/p95/p99 of
  the claim, measured from the scheduled start so a slow server is not hidden by a late
  sender;
- before the measured phases, a warm-up of every phase (each worker thread connects and
  prepares its statements) and an ANALYZE of its database, so that the planner sees a
  queue in use (``_queue_data.analyze``);
- before each round, the server idle: on a PostgreSQL server running without autovacuum
  (this machine's), the vacuum and analyze autovacuum would have done by then
  (``_autovacuum.catch_up``, by its own rules): without it the gold tables kept the
  statistics of their first hundred rows and each gold item cost more with every round;
- afterwards, what each database stored: pairs over-assigned (more ratings than needed,
  or a rater twice), pairs whose count disagrees with their ratings, ratings and gold
  ratings.

Phases: ``10k`` (U = BENCH_RATERS, 16), ``10k_u8``, ``10k_u32``, ``10k_gold`` (gold on: 1 in
20 items, 2,000 gold pairs, U = BENCH_RATERS) and ``1m`` (U = BENCH_RATERS), their closed
loops in the split flow (a claim request and a submit request per cycle); ``10k_page``,
``10k_u8_page``, ``10k_u32_page`` and ``10k_gold_page`` (U = BENCH_RATERS, 8, 32 and
BENCH_RATERS with gold on), closed loops in the rating page's flow (each submit also
claims the next pair and answers with the rater's progress: one request per rated item;
see ``_load.py``). A cycle is one stored rating in every phase. The last line of output
is one JSON object, per phase: ``{"raters", "cycles_per_s", "cpu_ms_per_cycle",
"web_cpu_ms_per_cycle", "db_cpu_ms_per_cycle", "db_ended_cpu_ms_per_cycle" (of the
PostgreSQL figure, what backends that ended within the phase spent),
"client_cpu_ms_per_cycle", "machine_busy", "p50_ms", "p95_ms", "p99_ms", "errors",
"empty" (claims that found nothing left for the rater), "autovacuum_emulated" ({"vacuumed",
"analyzed": tables, "cpu_ms_per_cycle": that work's backend CPU, not in cpu_ms_per_cycle},
or null when not done),
"over_assigned", "counter_off",
"ratings", "gold_ratings"}``, and ``"machine"``: the machine's speed
(``_common.machine_speed``), measured before the phases. The load generator runs on the same cores as the server and the
database: its own CPU per cycle (``client_cpu_ms_per_cycle``, this process) is reported
beside the server's, not in it, and ``machine_busy`` is the share of all cores' time busy
over the closed-loop phases (near 1: the cycles per second are what the machine's cores
allow, not what the server does alone). Figures are only comparable between runs on an
otherwise idle machine.

Environment: DATABASE_URL (server, user; the database name is replaced), BENCH_SIZES
(phases, default all nine), BENCH_SECONDS (per phase, default 15; before each round every
phase's queue is topped up with new pairs to its open slots, so a fast machine does not
rate a 10k queue empty and then measure claims that find nothing), BENCH_ROUNDS
(default 3), BENCH_RATERS (default 16), BENCH_OPEN_RATE (default 50), BENCH_OPEN_RATERS
(default 2,000), BENCH_GOLD_PAIRS (default 2,000), BENCH_EMULATE_AUTOVACUUM (default 1; 0:
without autovacuum's work on a server that runs without it),
BENCH_FIRST_PORT (default 8121; the phases take the ports from it on), BENCH_DB_PREFIX
(default cxc_bench_queue), BENCH_KEEP_DATABASES=1 (leave the phases' databases for a look
afterwards; the next run drops them), WEB_WORKERS / WEB_THREADS (defaults from
web/serve.py), CONN_MAX_AGE (default here 3600: the connections last the run,
see ``start_server``). BENCH_SMOKE=1: 2,000 and 5,000 open slots, 50 gold pairs, one
round of 2 s, a pool of 100 raters. So two runs can share the machine: give the second
other ports and another prefix.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import psycopg2
from _autovacuum import add, catch_up, emulating, figures
from _common import (
    drop_database,
    env_number,
    fresh_database,
    machine_speed,
    print_figures,
    sized,
    smoke,
    start_web_server,
    stop_server,
)
from _cpu import cpu_ms_per_cycle, cpu_reading, cpu_spent, machine_ticks
from _load import FLOWS, Stats, closed_loop, open_loop, percentile, rater_spread
from _queue_data import (
    add_gold,
    analyze,
    django_env,
    fill,
    migrated_template,
    server_dsn,
    stored_check,
    top_up,
)

from web.serve import ServeSettingError, server_options  # _common puts the repository on the path

SMOKE = smoke()
DB_PREFIX = os.environ.get("BENCH_DB_PREFIX") or "cxc_bench_queue"
FIRST_PORT = env_number("BENCH_FIRST_PORT", 8121, minimum=1024)
CLOSED_LOOP_RATERS = env_number("BENCH_RATERS", 16)
# To look into what a phase left (EXPLAIN its statements); the next run drops them first.
KEEP_DATABASES = os.environ.get("BENCH_KEEP_DATABASES") == "1"
# Every phase's database is a copy of this one, migrated once per run.
TEMPLATE_DATABASE = f"{DB_PREFIX}_template"
EMULATE_AUTOVACUUM = emulating()

OPEN_LOOP_RATE = env_number("BENCH_OPEN_RATE", 50.0)
OPEN_LOOP_RATERS = sized("BENCH_OPEN_RATERS", 2_000, 100)
GOLD_PAIRS = sized("BENCH_GOLD_PAIRS", 2_000, 50)
WARMUP_SECONDS = 0.5 if SMOKE else 2.0
SMALL, LARGE = (2_000, 5_000) if SMOKE else (10_000, 1_000_000)


@dataclass(frozen=True)
class Phase:
    """One queue under test: its open slots at the start, its closed-loop raters, gold on or off."""

    open_slots: int
    raters: int
    gold: bool = False
    flow: str = "split"


PHASES = {
    "10k": Phase(SMALL, CLOSED_LOOP_RATERS),
    "10k_u8": Phase(SMALL, 8),
    "10k_u32": Phase(SMALL, 32),
    "10k_page": Phase(SMALL, CLOSED_LOOP_RATERS, flow="page"),
    "10k_u8_page": Phase(SMALL, 8, flow="page"),
    "10k_u32_page": Phase(SMALL, 32, flow="page"),
    "10k_gold": Phase(SMALL, CLOSED_LOOP_RATERS, gold=True),
    "10k_gold_page": Phase(SMALL, CLOSED_LOOP_RATERS, gold=True, flow="page"),
    "1m": Phase(LARGE, CLOSED_LOOP_RATERS),
}


def log(message: str) -> None:
    print(message, flush=True)


# --- server ----------------------------------------------------------------------------


# Each worker thread's database connection lives CONN_MAX_AGE (production: 60 s), then
# opens again: about 28 ms of PostgreSQL's CPU and 2 ms of the web process's (a backend
# started, its statements prepared and planned; measured in one process). Served, that is
# half a millisecond per second per thread, 0.02 ms per cycle at 300 cycles/s on twelve
# threads (3 x 4, the default then), spread over the minute. Here the phases take turns,
# so a server's connections ran out together within whichever phase came a minute after its warm-up,
# the gold ones in every run (0.55-4.05 ms per cycle of ended backends in their figures). So
# the phases' servers keep their connections for the run, unless CONN_MAX_AGE is set.
BENCH_CONN_MAX_AGE = "3600"


def start_server(database: str, port: int, log_path: Path) -> subprocess.Popen:
    """The web server on the phase's database; at the smoke size one worker unless
    WEB_WORKERS says otherwise (five phases' servers stay within the database's
    connections). Connections live BENCH_CONN_MAX_AGE unless CONN_MAX_AGE is set."""
    env = django_env(database)
    env.setdefault("CONN_MAX_AGE", BENCH_CONN_MAX_AGE)
    if SMOKE:
        env.setdefault("WEB_WORKERS", "1")
    return start_web_server(env, port, log_path, port_setting="BENCH_FIRST_PORT")


CPU_FIGURES = ("web_s", "db_s", "db_ended_s", "backends_lost", "client_s", "busy", "ticks")


@dataclass
class Target:
    """One phase under test: its database, server and what it measured."""

    name: str
    phase: Phase
    database: str
    port: int
    tokens: list[str] = field(default_factory=list)
    server: subprocess.Popen | None = None
    latency: Stats = field(default_factory=Stats)
    throughput: Stats = field(default_factory=Stats)
    closed_seconds: float = 0.0
    cpu: dict = field(default_factory=lambda: dict.fromkeys(CPU_FIGURES, 0))
    stored: dict = field(default_factory=dict)
    idle_raters: deque = field(default_factory=deque)
    closed_round: int = 0
    upkeep: dict = field(default_factory=dict)  # _autovacuum.catch_up's, over the rounds

    def closed_loop_raters(self) -> list[str]:
        # Fresh raters each round, none of them among the open loop's.
        start = self.closed_round * self.phase.raters
        self.closed_round += 1
        return self.tokens[start : start + self.phase.raters]

    async def closed_phase(self, seconds: float, admin) -> None:
        """A closed-loop phase, with the server's CPU (the web server's tree and the database's
        backends) read before and after."""
        before = cpu_reading(web_root=self.server.pid, cursor=admin, database=self.database)
        client_before, machine_before = time.process_time(), machine_ticks()
        self.closed_seconds += await closed_loop(
            self.port, self.closed_loop_raters(), seconds, self.throughput, self.phase.flow
        )
        client_after, machine_after = time.process_time(), machine_ticks()
        spent = cpu_spent(before, cpu_reading(web_root=self.server.pid, cursor=admin, database=self.database))
        for key, value in spent.items():
            self.cpu[key] += value
        self.cpu["client_s"] += client_after - client_before
        self.cpu["busy"] += machine_after[0] - machine_before[0]
        self.cpu["ticks"] += machine_after[1] - machine_before[1]

    def result(self) -> dict:
        return {
            "raters": self.phase.raters,
            "cycles_per_s": round(self.throughput.cycles / self.closed_seconds, 1),
            **cpu_ms_per_cycle(self.cpu, self.throughput.cycles),
            "db_ended_cpu_ms_per_cycle": round(1000 * self.cpu["db_ended_s"] / max(self.throughput.cycles, 1), 2),
            "client_cpu_ms_per_cycle": round(1000 * self.cpu["client_s"] / max(self.throughput.cycles, 1), 2),
            "machine_busy": round(self.cpu["busy"] / max(self.cpu["ticks"], 1), 3),
            "p50_ms": round(percentile(self.latency.claim_ms, 50), 2),
            "p95_ms": round(percentile(self.latency.claim_ms, 95), 2),
            "p99_ms": round(percentile(self.latency.claim_ms, 99), 2),
            "rater_cycles_max_over_min": rater_spread(self.throughput),
            "errors": sum(self.latency.errors.values()) + sum(self.throughput.errors.values()),
            "empty": self.latency.empty + self.throughput.empty,
            **figures(self.upkeep, self.throughput.cycles),
            **self.stored,
        }


async def measure(targets: list[Target], seconds: float, rounds: int, admin) -> None:
    """Alternate the phases: per round, each gets its queue topped up to its open slots,
    an open-loop phase and a closed-loop phase of seconds / rounds each, after one warm-up
    and an ANALYZE of what it left."""
    phase = seconds / rounds
    for target in targets:
        # Warm-up: every worker thread opens its database connection and prepares.
        await closed_loop(target.port, target.closed_loop_raters(), WARMUP_SECONDS, Stats(), target.phase.flow)
        analyze(target.database)  # the statistics of a queue in use, not of one never rated
    for number in range(rounds):
        for target in targets:
            added = top_up(target.database, target.phase.open_slots)  # the server idle: no phase runs now
            if added:
                log(f"  {target.name}: {added:,} open slots queued to hold {target.phase.open_slots:,} again")
            if EMULATE_AUTOVACUUM:
                done = catch_up(server_dsn(target.database))
                target.upkeep = add(target.upkeep, done)
                if done and (done["vacuumed"] or done["analyzed"]):
                    log(f"  {target.name}: as autovacuum would, {done}")
            await open_loop(target.port, target.idle_raters, OPEN_LOOP_RATE, phase, target.latency, seed=number)
            await target.closed_phase(phase, admin)
        log(f"  round {number + 1}/{rounds} done, load average {os.getloadavg()[0]:.2f}")
    for target in targets:
        report(target)


def report(target: Target) -> None:
    result = target.result()
    latency, closed = target.latency, target.throughput
    log(
        f"{target.name}: open loop {OPEN_LOOP_RATE:g}/s: {latency.cycles} cycles, claim p50/p95/p99 "
        f"{result['p50_ms']}/{result['p95_ms']}/{result['p99_ms']} ms, submit p50/p95 "
        f"{percentile(latency.submit_ms, 50):.2f}/{percentile(latency.submit_ms, 95):.2f} ms, "
        f"errors {latency.errors}, empty {latency.empty}; the generator sent p50/p95/p99 "
        f"{percentile(latency.send_lag_ms, 50):.2f}/{percentile(latency.send_lag_ms, 95):.2f}/"
        f"{percentile(latency.send_lag_ms, 99):.2f} ms late (its own stalls, counted in the claim latency)"
    )
    log(
        f"{target.name}: closed loop {target.phase.raters} raters: {result['cycles_per_s']} cycles/s, "
        f"CPU {result['cpu_ms_per_cycle']} ms/cycle (web {result['web_cpu_ms_per_cycle']}, "
        f"PostgreSQL {result['db_cpu_ms_per_cycle']}, of which {target.cpu['db_ended_s']:.2f} s in "
        f"{target.cpu['backends_lost']} backends ended mid-phase and other reaped ones), "
        f"load generator {result['client_cpu_ms_per_cycle']} ms/cycle, cores busy {result['machine_busy']:.1%}, "
        f"claim p50/p95 {percentile(closed.claim_ms, 50):.2f}/{percentile(closed.claim_ms, 95):.2f} ms, "
        f"most/least served rater {result['rater_cycles_max_over_min']}, errors {closed.errors}, empty {closed.empty}"
    )
    if result["empty"]:
        log(
            f"{target.name}: WARNING {result['empty']} claims found the queue empty within a round: its figures "
            "measured claims with nothing to rate; run more BENCH_ROUNDS (shorter rounds) or fewer BENCH_SECONDS"
        )


def prepare(target: Target, rounds: int, tmp: str) -> None:
    """A fresh database for the phase, filled, and its web server started."""
    started = time.perf_counter()
    closed_raters = target.phase.raters * (rounds + 1)  # warm-up plus one fresh set per round
    fresh_database(target.database, template=TEMPLATE_DATABASE)
    n_pairs, target.tokens = fill(target.database, target.phase.open_slots, closed_raters + OPEN_LOOP_RATERS)
    target.idle_raters = deque(target.tokens[closed_raters:])
    if target.phase.gold:
        add_gold(target.database, GOLD_PAIRS)
    log(
        f"{target.name}: {target.phase.open_slots:,} open slots ({n_pairs:,} pairs), "
        f"{len(target.tokens):,} raters, fresh database {target.database} ready in "
        f"{time.perf_counter() - started:.1f} s"
    )
    target.server = start_server(target.database, target.port, Path(tmp) / f"web-{target.name}.log")


def connections_per_server() -> int:
    """PostgreSQL connections one phase's web server holds: a connection per worker
    thread (web/serve.py's settings; one worker at the smoke size)."""
    environ = dict(os.environ)
    if SMOKE:
        environ.setdefault("WEB_WORKERS", "1")
    try:
        options = server_options(environ, os.cpu_count() or 1)
    except ServeSettingError as problem:
        raise SystemExit(str(problem)) from None
    return options["workers"] * options["blocking_threads"]


def check_connections(groups: list[list[Target]], cursor) -> None:
    """Stop before anything starts when a group's servers need more connections than
    the database server has free (each would answer 500 for every request past it)."""
    cursor.execute(
        "SELECT current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int"
        " - (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')"
    )
    (free,) = cursor.fetchone()
    need = max(len(group) for group in groups) * connections_per_server()
    if need > free - 2:  # the check's own connection and the admin's
        raise SystemExit(
            f"bench-queue needs {need} PostgreSQL connections at once ({connections_per_server()} per phase's "
            f"server) and {free} are free: run fewer phases (BENCH_SIZES), fewer WEB_WORKERS or "
            f"WEB_THREADS, or raise max_connections"
        )


def run_group(targets: list[Target], seconds: float, rounds: int, tmp: str, admin) -> None:
    """Prepare, measure in alternation and check the phases of one flow."""
    try:
        for target in targets:
            prepare(target, rounds, tmp)
        with admin.cursor() as cursor:
            asyncio.run(measure(targets, seconds, rounds, cursor))
        for target in targets:
            stop_server(target.server)  # its connections closed before the check opens one
            target.server = None
            target.stored = stored_check(target.database)
            log(f"{target.name}: stored {target.stored}")
    finally:
        for target in targets:
            if target.server is not None:
                stop_server(target.server)
            if not KEEP_DATABASES:
                drop_database(target.database)


def main() -> int:
    seconds = sized("BENCH_SECONDS", 15.0, 2.0, minimum=0)
    rounds = sized("BENCH_ROUNDS", 3, 1)
    default_phases = ",".join(PHASES)
    names = [s.strip() for s in os.environ.get("BENCH_SIZES", default_phases).split(",") if s.strip()]
    unknown = [s for s in names if s not in PHASES]
    if unknown or not names:
        raise SystemExit(f"BENCH_SIZES: unknown phase(s) {unknown}; use {default_phases}")
    if seconds == 0:
        raise SystemExit("BENCH_SECONDS must be positive")
    log(f"bench-queue: load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores (other load skews figures)")
    machine = machine_speed()
    log(f"bench-queue: machine speed {machine} (a fixed Python workload's CPU time; smaller is faster)")
    targets = [
        Target(name=name, phase=PHASES[name], database=f"{DB_PREFIX}_{name}", port=FIRST_PORT + i)
        for i, name in enumerate(names)
    ]
    # The phases of one flow alternate with each other; the flows run one after the other,
    # so that no more servers hold database connections at once than one flow's.
    groups = [[t for t in targets if t.phase.flow == flow] for flow in FLOWS]
    groups = [group for group in groups if group]
    admin = psycopg2.connect(server_dsn("postgres"))
    admin.autocommit = True
    try:
        with admin.cursor() as cursor:
            check_connections(groups, cursor)
        migrated_template(TEMPLATE_DATABASE)
        with tempfile.TemporaryDirectory(prefix="bench-queue-") as tmp:
            for group in groups:
                run_group(group, seconds, rounds, tmp, admin)
    finally:
        admin.close()
        drop_database(TEMPLATE_DATABASE)
    print_figures({target.name: target.result() for target in targets} | {"machine": machine})
    return 0


if __name__ == "__main__":
    sys.exit(main())
