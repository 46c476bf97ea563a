"""The rating page's cycle in one process: CPU per rated item, web and PostgreSQL, and
PostgreSQL's CPU per statement, without HTTP, a load generator or other processes.

bench-queue measures the served cycle, but on a shared two-core machine its figures move
by up to 1.8x between runs minutes apart: the server, the database and the load
generator compete for the cores. This benchmark drives ``web.served_wsgi.application``
directly (the WSGI entry the web server serves) with the page's requests, one rater after
another over a single database connection, and reads the web CPU from the process
(``time.process_time``) and the backend's from ``/proc/<pid>/schedstat``. Comparing two
versions of the code means running it for each in turns (a ``git worktree`` of the old
one): a change of 0.05 ms shows there, not in bench-queue.

Phases, each in a child process on a fresh database ``<BENCH_DB_PREFIX>_<phase>``
(SIS pairs with 5 open slots each, raters with tokens, as bench-queue fills them):
``page`` (no gold pairs) and ``page_gold`` (BENCH_GOLD_PAIRS gold pairs, one in 20 items).
Each runs BENCH_WARMUP cycles (default 300: statements prepared, caches warm), an ANALYZE
of the queue in use, BENCH_WARMUP cycles again (statements planned anew), then
BENCH_CYCLES measured ones (default 3,000), then as many again with every statement's
backend CPU read around it (through Django's cursor, which the wrapper needs: its web
figure is not the cycle's). Both run in blocks of BENCH_BLOCK cycles (default 500); before
each, on a server that runs without autovacuum (this machine's), what autovacuum would
have done by then (``_autovacuum.catch_up``; BENCH_EMULATE_AUTOVACUUM=0 leaves it out):
without it the gold tables kept statistics of a few dozen rows while they grew tenfold,
and the gold phase's progress read 544 us of PostgreSQL per item against the gold-free
phase's 393. A cycle is one submit that also claims the next pair and answers with the
rater's progress, as the rating page sends it.

Last line: ``{"phases": {phase: {"cycles", "web_cpu_ms_per_cycle",
"db_cpu_ms_per_cycle", "cpu_ms_per_cycle", "statements": {name: {"per_cycle",
"db_us"}}, "autovacuum_emulated"}}, "machine"}``; ``autovacuum_emulated``: the tables
vacuumed and analyzed, and that work's backend CPU per cycle, outside the cycle's figures.
Environment: DATABASE_URL (server and user; the database name is replaced), BENCH_SLOTS
(default 100,000), BENCH_RATERS (default 32), BENCH_CYCLES, BENCH_WARMUP,
BENCH_GOLD_PAIRS (default 2,000), BENCH_BLOCK, BENCH_DB_PREFIX (default cxc_bench_cycle),
BENCH_KEEP_DATABASES=1, BENCH_EMULATE_AUTOVACUUM. BENCH_SMOKE=1: 5,000 slots, 60 cycles
after 20.
"""

from __future__ import annotations

import io
import json
import os
import random
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path

from _autovacuum import add, catch_up, emulating, figures
from _common import (
    drop_database,
    env_number,
    fresh_database,
    machine_speed,
    print_figures,
    smoke,
)
from _cpu import run_ns
from _load import PAGE_CLAIM, PAGE_SUBMIT_TEMPLATE
from _queue_data import add_gold, analyze, django_env, fill, migrate, server_dsn

REPO = Path(__file__).resolve().parent.parent
SMOKE = smoke()
SLOTS = 5_000 if SMOKE else env_number("BENCH_SLOTS", 100_000, minimum=1_000)
RATERS = env_number("BENCH_RATERS", 32, minimum=1)
CYCLES = 60 if SMOKE else env_number("BENCH_CYCLES", 3_000, minimum=10)
WARMUP = 20 if SMOKE else env_number("BENCH_WARMUP", 300, minimum=1)
GOLD_PAIRS = 50 if SMOKE else env_number("BENCH_GOLD_PAIRS", 2_000, minimum=1)
PREFIX = os.environ.get("BENCH_DB_PREFIX") or "cxc_bench_cycle"
PHASES = {"page": False, "page_gold": True}
# Cycles between two of autovacuum's catch-ups (``_autovacuum.catch_up``) on a server
# that runs without it: a gold phase adds about 300 gold ratings in 6,000 cycles to the
# few dozen its statistics were taken at, past autovacuum's analyze threshold (50 rows
# and a tenth of the table) several times over.
BLOCK = 60 if SMOKE else env_number("BENCH_BLOCK", 500, minimum=10)
EMULATE_AUTOVACUUM = emulating()


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- the child: one phase in this process ------------------------------------------------


class PageRaters:
    """The rating page's requests, rater after rater, through the WSGI application."""

    def __init__(self, application, tokens: list[str], seed: int):
        self.application = application
        self.tokens = tokens
        self.held: dict[str, str | None] = {}
        self.rng = random.Random(seed)

    def post(self, path: str, token: str, body: bytes) -> tuple[int, bytes]:
        environ = {
            "REQUEST_METHOD": "POST",
            "PATH_INFO": path,
            "QUERY_STRING": "",
            "SERVER_NAME": "localhost",
            "SERVER_PORT": "80",
            "HTTP_HOST": "localhost",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(body),
            "wsgi.errors": sys.stderr,
            "CONTENT_TYPE": "application/json",
            "CONTENT_LENGTH": str(len(body)),
            "HTTP_AUTHORIZATION": f"Token {token}",
        }
        status = []
        chunks = self.application(environ, lambda line, headers, exc_info=None: status.append(line))
        try:
            content = b"".join(chunks)
        finally:
            chunks.close()
        return int(status[0][:3]), content

    def cycles(self, count: int) -> None:
        """``count`` rated items; a claim first for a rater who holds nothing."""
        for number in range(count):
            token = self.tokens[number % len(self.tokens)]
            slot = self.held.get(token)
            if slot is None:
                status, content = self.post("/api/rate/bench/claim/", token, PAGE_CLAIM)
                if status != 200:
                    raise SystemExit(f"claim answered {status}: {content[:300]!r}")
                slot = json.loads(content)["slot_id"]
            body = (PAGE_SUBMIT_TEMPLATE % (self.rng.uniform(0, 5), uuid.uuid4().hex)).encode()
            status, content = self.post(f"/api/rate/bench/slots/{slot}/submit/", token, body)
            if status != 201:
                raise SystemExit(f"submit answered {status}: {content[:300]!r}")
            following = json.loads(content)["next"]
            self.held[token] = None if following is None else following["slot_id"]


def backend_ns(connection) -> int:
    """CPU nanoseconds of the connection's PostgreSQL backend so far."""
    return run_ns(connection.connection.get_backend_pid())


def statement_name(sql: str) -> str:
    """The names of the prepared statements a round trip runs, without their versions,
    joined by "+" (statements sent in one round trip), else the SQL's first words."""
    words = sql.split()
    if "EXECUTE" in words:
        names = [words[at + 1].split("(")[0] for at, word in enumerate(words) if word == "EXECUTE"]
        return "+".join(name.rsplit("_v", 1)[0] for name in names)
    return " ".join(words[:2])[:40]


def run_phase(tokens: list[str]) -> dict:
    """Warm-up, the measured cycles, then the per-statement pass; this process's figures."""
    from django.db import connection

    from web.served_wsgi import application

    raters = PageRaters(application, tokens, seed=1)
    raters.cycles(WARMUP)
    # Statistics of a queue in use, as bench-queue takes them (analyzed when filled, the
    # progress cost 1.1 ms per item at 100,000 slots instead of 0.3); the statements are
    # planned again on their next runs.
    analyze(connection.settings_dict["NAME"])
    raters.cycles(WARMUP)
    upkeep: dict = {}
    web = db = 0
    for block in blocks(CYCLES):
        upkeep = add(upkeep, catch_up_between_blocks(connection, raters))
        started_web, started_db = time.process_time(), backend_ns(connection)
        raters.cycles(block)
        web, db = web + time.process_time() - started_web, db + backend_ns(connection) - started_db
    spent: dict[str, list[int]] = defaultdict(lambda: [0, 0])

    def wrapper(execute, sql, params, many, context):
        before = backend_ns(connection)
        try:
            return execute(sql, params, many, context)
        finally:
            entry = spent[statement_name(sql)]
            entry[0] += 1
            entry[1] += backend_ns(connection) - before

    for block in blocks(CYCLES):
        upkeep = add(upkeep, catch_up_between_blocks(connection, raters))
        with connection.execute_wrapper(wrapper):
            raters.cycles(block)
    return {
        "cycles": CYCLES,
        "web_cpu_ms_per_cycle": round(1000 * web / CYCLES, 3),
        "db_cpu_ms_per_cycle": round(db / 1e6 / CYCLES, 3),
        "cpu_ms_per_cycle": round(1000 * web / CYCLES + db / 1e6 / CYCLES, 3),
        "statements": {
            name: {"per_cycle": round(count / CYCLES, 3), "db_us": round(ns / count / 1000, 1)}
            for name, (count, ns) in sorted(spent.items(), key=lambda item: -item[1][1])
        },
        **figures(upkeep, 2 * CYCLES),
    }


def blocks(cycles: int) -> list[int]:
    """``cycles`` in blocks of BLOCK, the last one shorter."""
    return [min(BLOCK, cycles - start) for start in range(0, cycles, BLOCK)]


def catch_up_between_blocks(connection, raters: PageRaters) -> dict | None:
    """Autovacuum's work by then (BENCH_EMULATE_AUTOVACUUM), on its own connection: neither
    this process's CPU nor the measured backend's. A table analyzed makes the connection
    plan its statements again (12 ms for the claim), which autovacuum would do once a
    minute at most, not every block: a cycle per rater, unmeasured, plans them before the
    block."""
    if not EMULATE_AUTOVACUUM:
        return None
    done = catch_up(server_dsn(connection.settings_dict["NAME"]))
    if done and done["analyzed"]:
        raters.cycles(len(raters.tokens))
    return done


# --- the parent: a database and a child per phase ------------------------------------------


def prepare(database: str, gold: bool) -> list[str]:
    started = time.perf_counter()
    fresh_database(database)
    migrate(database)
    _, tokens = fill(database, SLOTS, RATERS)
    if gold:
        add_gold(database, GOLD_PAIRS)
    log(f"{database}: {SLOTS:,} open slots, {RATERS} raters ready in {time.perf_counter() - started:.1f} s")
    return tokens


def measure(database: str, tokens: list[str]) -> dict:
    """The phase in a child process (Django set up on the phase's database)."""
    env = django_env(database) | {"DJANGO_SETTINGS_MODULE": "config.settings", "ALLOWED_HOSTS": "localhost"}
    child = subprocess.run(
        [sys.executable, __file__, "--child"],
        input="\n".join(tokens),
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        check=False,
    )
    if child.returncode != 0:
        raise SystemExit(f"{database}: the phase failed ({child.returncode}):\n{child.stderr[-3000:]}")
    return json.loads(child.stdout.strip().splitlines()[-1])


def main() -> None:
    if not os.environ.get("DATABASE_URL"):
        raise SystemExit("benchmarks need PostgreSQL: set DATABASE_URL (make bench-* sets it)")
    machine = machine_speed()
    log(f"bench-cycle: machine speed {machine}")
    phases = {}
    for name, gold in PHASES.items():
        database = f"{PREFIX}_{name}"
        try:
            phases[name] = measure(database, prepare(database, gold))
        finally:
            if os.environ.get("BENCH_KEEP_DATABASES") != "1":
                drop_database(database)
        figures = phases[name]
        log(
            f"{name}: {figures['cpu_ms_per_cycle']} ms of CPU per cycle (web {figures['web_cpu_ms_per_cycle']}, "
            f"PostgreSQL {figures['db_cpu_ms_per_cycle']}); PostgreSQL per statement: "
            + ", ".join(
                f"{key} {value['db_us']} us x {value['per_cycle']}" for key, value in figures["statements"].items()
            )
        )
    print_figures({"phases": phases, "machine": machine})


if __name__ == "__main__":
    if sys.argv[1:] == ["--child"]:
        sys.path.insert(0, str(REPO))
        print(json.dumps(run_phase(sys.stdin.read().split())))
    else:
        main()
