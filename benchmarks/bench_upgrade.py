"""Upgrade benchmark: the schema migrated forward while raters rate through the API.

A fresh database (BENCH_DATABASE, default cxc_bench_upgrade), migrated to the latest schema
and filled server-side with BENCH_SLOTS open slots (``_queue_data.fill``: SIS pairs of 5,
raters with tokens) is rolled back (``manage.py migrate annotation <target>``, nobody
rating): by default to before the fifth-last migration that touches a hot table
(annotation/schema/hot_tables.py; ``manage.py lint_migrations --json`` says which do), or
BENCH_UPGRADE_N migrations of the annotation app. The rollback stops at a migration that
cannot be unapplied, and the run says so. Then the web server (``python -m web.serve``,
the container's command) serves BENCH_RATERS raters, each claiming and submitting back to
back over keep-alive HTTP (``_load.Connection``); after a warm-up and BENCH_BEFORE_SECONDS,
``manage.py migrate`` runs forward in a child process (the command operators run, with
its lock and statement timeouts and retries: MIGRATION_* from the environment), and the
raters go on until BENCH_AFTER_SECONDS after it ends.

Measured: the forward migration's wall seconds and the migrations it applied; every claim's
latency from the end of the warm-up on (its max and p99, and the same over the claims
sent while the migration ran); submits acknowledged (201), failed (any other answer or a
broken connection) and lost (acknowledged, but their rating is not in the database
afterwards, looked up by idempotency key); claims that failed (a claim finding the queue
empty, 204, is no failure); what the database stored (``_queue_data.stored_check``). It
asserts nothing; a migration that fails stops the benchmark with its output.

The raters are served by this checkout's code on the older schema while it migrates: the
code must work on both, as a deployment that migrates under the running release needs.

Last line: ``{"migrations", "seconds", "submits", "failed_submits", "max_claim_ms",
"p99_claim_ms", "lost", "failed_claims", "claims", "claims_during", "max_claim_ms_during",
"p99_claim_ms_during", "lock_retries", "rolled_back_to", "open_slots", "raters",
"load_average", "machine", ...stored_check}``.

Environment (smoke size under BENCH_SMOKE=1 in brackets): BENCH_SLOTS 1,000,000 [5,000],
BENCH_RATERS 32 [4], BENCH_UPGRADE_N (default: back to the fifth-last migration touching a
hot table), BENCH_BEFORE_SECONDS 3 [1], BENCH_AFTER_SECONDS 3 [1], BENCH_UPGRADE_PORT 8181,
BENCH_DATABASE cxc_bench_upgrade (and <it>_lint, the linter's scratch database),
MIGRATION_LOCK_TIMEOUT_MS and the other MIGRATION_* settings (passed to both migrations),
WEB_WORKERS / WEB_THREADS (defaults from web/serve.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import psycopg2
from _common import (
    REPO_DIR,
    drop_database,
    env_database,
    env_number,
    fresh_database,
    machine_speed,
    print_figures,
    sized,
    smoke,
    start_web_server,
    stop_server,
)
from _load import SUBMIT_TEMPLATE, Connection, percentile
from _queue_data import django_env, fill, server_dsn, stored_check

SMOKE = smoke()
DATABASE = env_database("cxc_bench_upgrade")
PORT = env_number("BENCH_UPGRADE_PORT", 8181, minimum=1024)
OPEN_SLOTS = sized("BENCH_SLOTS", 1_000_000, 5_000)
RATERS = sized("BENCH_RATERS", 32, 4)
BEFORE_SECONDS = sized("BENCH_BEFORE_SECONDS", 3.0, 1.0, minimum=0)
AFTER_SECONDS = sized("BENCH_AFTER_SECONDS", 3.0, 1.0, minimum=0)
WARMUP_SECONDS = 1.0
DEFAULT_HOT_MIGRATIONS = 5
APPLIED = re.compile(r"Applying (\S+)\.\.\. OK")


def log(message: str) -> None:
    print(message, flush=True)


def manage(database: str, *args: str) -> subprocess.CompletedProcess:
    """``manage.py <args>`` on ``database``; its output captured, a failure stops the run."""
    result = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=REPO_DIR, env=django_env(database), capture_output=True, text=True
    )
    if result.returncode != 0:
        raise SystemExit(f"manage.py {' '.join(args)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result


def annotation_migrations() -> list[dict]:
    """The annotation app's migrations in the order they apply, each with the hot tables it
    touches and whether it can be unapplied (the linter's record, on its own database)."""
    result = subprocess.run(
        [sys.executable, "manage.py", "lint_migrations", "--json", "--scratch-database", f"{DATABASE}_lint"],
        cwd=REPO_DIR,
        env=django_env(DATABASE),
        capture_output=True,
        text=True,
    )
    lines = result.stdout.strip().splitlines()
    if not lines or not lines[-1].startswith("{"):
        raise SystemExit(f"lint_migrations --json gave no JSON:\n{result.stdout}\n{result.stderr}")
    if result.returncode != 0:
        log(f"note: the migration linter refuses a migration:\n{result.stderr.strip()}")
    return [m for m in json.loads(lines[-1])["migrations"] if m["migration"].startswith("annotation.")]


def rollback_target(migrations: list[dict], count: int | None) -> tuple[str, list[str]]:
    """(the migration to roll back to, the annotation migrations rolled back): the last
    ``count``, or by default those from the fifth-last touching a hot table on; never past
    one that cannot be unapplied (the run says so)."""
    names = [m["migration"].split(".", 1)[1] for m in migrations]
    if count is None:
        hot = [i for i, m in enumerate(migrations) if m["hot_tables"]]
        first = hot[-DEFAULT_HOT_MIGRATIONS] if len(hot) >= DEFAULT_HOT_MIGRATIONS else hot[0]
    else:
        first = max(len(names) - count, 1)
    stuck = [i for i in range(first, len(names)) if not migrations[i]["reversible"]]
    if stuck:
        log(f"note: {names[stuck[-1]]} cannot be unapplied: rolling back only the migrations after it")
        first = stuck[-1] + 1
    if first >= len(names):
        raise SystemExit("nothing to roll back: the latest migration cannot be unapplied")
    return names[first - 1], names[first:]


@dataclass
class Tally:
    """What the raters saw. Claim latencies count from the end of the warm-up; each is kept
    with the time it was sent, to tell the claims sent while the migration ran."""

    measuring: bool = False
    claims: list[tuple[float, float]] = field(default_factory=list)  # (sent, ms)
    acknowledged: list[str] = field(default_factory=list)  # idempotency keys of 201 answers
    failed_submits: Counter = field(default_factory=Counter)
    failed_claims: Counter = field(default_factory=Counter)
    empty: int = 0


async def rater(token: str, tally: Tally, stop: asyncio.Event, seed: int) -> None:
    """Claim, submit, again, until ``stop``; every answer counted in ``tally``."""
    conn, rng = Connection(PORT), random.Random(seed)
    while not stop.is_set():
        sent = time.perf_counter()
        try:
            status, payload = await conn.request("/api/rate/bench/claim/", token, b"{}")
        except (OSError, asyncio.IncompleteReadError) as exc:
            tally.failed_claims[type(exc).__name__] += 1
            conn.close()
            await asyncio.sleep(0.05)
            continue
        if tally.measuring:
            tally.claims.append((sent, (time.perf_counter() - sent) * 1000))
        if status != 200:
            if status == 204:
                tally.empty += 1
            else:
                tally.failed_claims[f"claim {status}"] += 1
            await asyncio.sleep(0.05)
            continue
        key = uuid.uuid4().hex
        body = (SUBMIT_TEMPLATE % (rng.uniform(0, 5), key)).encode()
        path = f"/api/rate/bench/slots/{json.loads(payload)['slot_id']}/submit/"
        try:
            status, _ = await conn.request(path, token, body)
        except (OSError, asyncio.IncompleteReadError) as exc:
            tally.failed_submits[type(exc).__name__] += 1
            conn.close()
            continue
        if status == 201:
            tally.acknowledged.append(key)
        else:
            tally.failed_submits[f"submit {status}"] += 1
    conn.close()


async def migrate_while_rating(tokens: list[str], tally: Tally) -> tuple[float, float, str, str]:
    """The raters rating; the forward migration in a child process after the warm-up and
    BEFORE_SECONDS. Returns (its start, its end, its stdout, its stderr)."""
    stop = asyncio.Event()
    raters = [asyncio.create_task(rater(token, tally, stop, seed)) for seed, token in enumerate(tokens)]
    await asyncio.sleep(WARMUP_SECONDS)
    tally.measuring = True
    await asyncio.sleep(BEFORE_SECONDS)
    started = time.perf_counter()
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "manage.py",
        "migrate",
        "--no-input",
        cwd=REPO_DIR,
        env=django_env(DATABASE),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await child.communicate()
    ended = time.perf_counter()
    await asyncio.sleep(AFTER_SECONDS)
    stop.set()
    await asyncio.gather(*raters)
    if child.returncode != 0:
        raise SystemExit(f"the forward migration failed ({child.returncode}):\n{out.decode()}\n{err.decode()}")
    return started, ended, out.decode(), err.decode()


def stored_of(keys: list[str]) -> int:
    """How many of the acknowledged submits' ratings the database holds."""
    conn = psycopg2.connect(server_dsn(DATABASE))
    with conn, conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM annotation_rating WHERE idempotency_key = ANY(%s)", [keys])
        (found,) = cur.fetchone()
    conn.close()
    return found


def prepare() -> tuple[list[str], str, list[str]]:
    """The filled database rolled back; returns (tokens, the target, the migrations rolled back)."""
    text = os.environ.get("BENCH_UPGRADE_N", "").strip()
    count = env_number("BENCH_UPGRADE_N", 1) if text else None
    target, rolled_back = rollback_target(annotation_migrations(), count)
    started = time.perf_counter()
    fresh_database(DATABASE)
    manage(DATABASE, "migrate", "--no-input")
    n_pairs, tokens = fill(DATABASE, OPEN_SLOTS, RATERS)
    log(f"{OPEN_SLOTS:,} open slots ({n_pairs:,} pairs), {RATERS} raters in {time.perf_counter() - started:.1f} s")
    started = time.perf_counter()
    manage(DATABASE, "migrate", "annotation", target, "--no-input")
    conn = psycopg2.connect(server_dsn(DATABASE))
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("VACUUM ANALYZE")
    conn.close()
    log(
        f"rolled back to annotation {target} ({len(rolled_back)}: {', '.join(rolled_back)}) in "
        f"{time.perf_counter() - started:.1f} s"
    )
    return tokens, target, rolled_back


def figures(tally: Tally, window: tuple[float, float], out: str, err: str) -> dict:
    claims_ms = [ms for _, ms in tally.claims]
    during = [ms for sent, ms in tally.claims if window[0] <= sent <= window[1]]
    found = stored_of(tally.acknowledged)

    def rounded(value: float) -> float | None:
        return None if value != value else round(value, 1)  # no claim: no figure (NaN is no JSON)

    return {
        "migrations": len(set(APPLIED.findall(out))),
        "seconds": round(window[1] - window[0], 2),
        "submits": len(tally.acknowledged),
        "failed_submits": sum(tally.failed_submits.values()),
        "max_claim_ms": rounded(max(claims_ms, default=float("nan"))),
        "p99_claim_ms": rounded(percentile(claims_ms, 99)),
        "lost": len(tally.acknowledged) - found,
        "failed_claims": sum(tally.failed_claims.values()),
        "failures": dict(tally.failed_claims + tally.failed_submits),
        "empty_claims": tally.empty,
        "claims": len(claims_ms),
        "claims_during": len(during),
        "max_claim_ms_during": rounded(max(during, default=float("nan"))),
        "p99_claim_ms_during": rounded(percentile(during, 99)),
        "lock_retries": err.count("gave up waiting for a lock"),
    }


def main() -> int:
    load = os.getloadavg()[0]
    log(f"bench-upgrade: load average {load:.2f} on {os.cpu_count()} cores (other load skews figures)")
    machine = machine_speed()
    tokens, target, rolled_back = prepare()
    env = django_env(DATABASE) | {"CONN_MAX_AGE": os.environ.get("CONN_MAX_AGE") or "3600"}
    if SMOKE:
        env.setdefault("WEB_WORKERS", "1")
    try:
        with tempfile.TemporaryDirectory(prefix="bench-upgrade-") as tmp:
            server = start_web_server(env, PORT, Path(tmp) / "web.log", port_setting="BENCH_UPGRADE_PORT")
            tally = Tally()
            try:
                started, ended, out, err = asyncio.run(migrate_while_rating(tokens, tally))
            finally:
                stop_server(server)
        log(out.strip())
        if err.strip():
            log(err.strip())
        result = figures(tally, (started, ended), out, err)
        stored = stored_check(DATABASE)
    finally:
        drop_database(DATABASE)
    log(
        f"forward: {result['migrations']} migrations in {result['seconds']} s while {RATERS} raters rated: "
        f"{result['submits']} submits, {result['failed_submits']} failed, {result['lost']} lost; claims max "
        f"{result['max_claim_ms']} ms, p99 {result['p99_claim_ms']} ms ({result['claims_during']} during the "
        f"migration: max {result['max_claim_ms_during']} ms)"
    )
    print_figures(
        result
        | {"rolled_back_to": f"annotation.{target}", "rolled_back": len(rolled_back), "open_slots": OPEN_SLOTS}
        | {"raters": RATERS, "load_average": round(load, 2), "machine": machine}
        | stored
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
