"""Rating-queue benchmark: gunicorn + PostgreSQL over HTTP, with 10,000 and 1,000,000
open slots.

For each size a fresh database ``<BENCH_DB_PREFIX>_<size>`` (dropped first if it exists)
is migrated and filled server-side (INSERT ... SELECT over generate_series: SIS pairs
with 5 open slots each, raters with tokens) and served by its own gunicorn (ports from
BENCH_FIRST_PORT on). An asyncio load generator (``_load.py``) with raw keep-alive
HTTP/1.1 connections then measures the sizes in alternation, BENCH_ROUNDS rounds of short
phases, pooling each size's samples, so that both sizes see the same background load of a
shared machine:

- throughput: BENCH_RATERS simulated raters doing claim + submit with no pause (closed
  loop), completed cycles per second;
- latency: an open loop of BENCH_OPEN_RATE claim + submit cycles per second (Poisson
  arrivals, each cycle by an idle rater from a pool of BENCH_OPEN_RATERS), p50/p95/p99 of
  the claim, measured from the scheduled start so a slow server is not hidden by a late
  sender.

The last line of output is one JSON object:
``{"10k": {"cycles_per_s", "p50_ms", "p95_ms", "p99_ms"}, "10k_gold": {...}, "1m": {...}}``;
``10k_gold`` is the 10k queue with gold pairs on (1 in 20 items, 2,000 gold pairs).
The load generator runs on the same cores as the server and the database; figures are
only comparable between runs on an otherwise idle machine.

Environment: DATABASE_URL (server, user; the database name is replaced), BENCH_SIZES
(default "10k,10k_gold,1m"), BENCH_SECONDS (per phase and size, default 30), BENCH_ROUNDS
(default 3), BENCH_RATERS (closed-loop raters, default 16), BENCH_OPEN_RATE (open-loop
cycles per second, default 50), BENCH_OPEN_RATERS (its pool, default 2,000), BENCH_FIRST_PORT
(default 8121; the sizes take the ports from it on), BENCH_DB_PREFIX (default
cxc_bench_queue), GUNICORN_WORKERS / GUNICORN_THREADS (defaults from config/gunicorn.conf.py).
So two runs can share the machine: give the second other ports and another prefix.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import psycopg2
from _common import drop_database, env_number, fresh_database, stop_server
from _load import Stats, closed_loop, open_loop, percentile

REPO = Path(__file__).resolve().parent.parent
DB_PREFIX = os.environ.get("BENCH_DB_PREFIX") or "cxc_bench_queue"
FIRST_PORT = env_number("BENCH_FIRST_PORT", 8121, minimum=1024)
SIZES = {"10k": 10_000, "10k_gold": 10_000, "1m": 1_000_000}
# With gold on: one in GOLD_ONE_IN items a gold pair, out of GOLD_PAIRS (never one twice to a rater).
GOLD_ONE_IN = 20
GOLD_PAIRS = 2_000
RATINGS_PER_PAIR = 5
CLOSED_LOOP_RATERS = env_number("BENCH_RATERS", 16)
OPEN_LOOP_RATE = env_number("BENCH_OPEN_RATE", 50.0)
OPEN_LOOP_RATERS = env_number("BENCH_OPEN_RATERS", 2_000)
WARMUP_CYCLES = 300


def log(message: str) -> None:
    print(message, flush=True)


# --- database --------------------------------------------------------------------------


def server_dsn(database: str) -> str:
    url = urlparse(os.environ.get("DATABASE_URL") or "postgres://postgres@127.0.0.1:5432/postgres")
    return url._replace(path="/" + database).geturl()


def django_env(database: str) -> dict:
    return os.environ | {
        "DATABASE_URL": server_dsn(database),
        "RUN_MODE": "services",
        "DEBUG": "false",
        "SECRET_KEY": os.environ.get("SECRET_KEY") or "bench-only-secret-key",
        "CELERY_TASK_ALWAYS_EAGER": "true",
    }


def migrate(database: str) -> None:
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"],
        cwd=REPO,
        env=django_env(database),
        check=True,
    )


def images_for_pairs(n_pairs: int) -> int:
    n = 2
    while n * (n - 1) // 2 < n_pairs:
        n += 1
    return n


def fill(database: str, open_slots: int, n_raters: int) -> tuple[int, list[str]]:
    """Queue open_slots / 5 SIS pairs and create the raters. Returns (pairs, tokens)."""
    n_pairs = open_slots // RATINGS_PER_PAIR
    conn = psycopg2.connect(server_dsn(database))
    with conn, conn.cursor() as cur:
        cur.execute(
            "INSERT INTO annotation_dataset (name, description, images_root, image_url_prefix, created_at) "
            "VALUES ('bench', '', '', 'https://images.example.org/', now()) RETURNING id"
        )
        (dataset,) = cur.fetchone()
        cur.execute("INSERT INTO annotation_split (dataset_id, name) VALUES (%s, 'val') RETURNING id", [dataset])
        (split,) = cur.fetchone()
        cur.execute(
            """
            INSERT INTO sampling_samplingbatch (dataset_id, split_id, source, methods, k, spaces, ratings_per_pair,
                seed, priority, status, progress_done, progress_total, progress_message, pairs_per_method, error,
                upload_path, runner, stats, audit, created_at)
            VALUES (%s, %s, 'sampled', '{"i2i_csim": null}', 5, '[]', %s, 0, 0, 'succeeded', 0, 0, '', '{}', '', '',
                    '', '{}', '{}', now())
            RETURNING id
            """,
            [dataset, split, RATINGS_PER_PAIR],
        )
        (batch,) = cur.fetchone()
        cur.execute(
            """
            INSERT INTO annotation_image (dataset_id, split_id, key, file_path, cocoid, width, height)
            SELECT %(d)s, %(s)s, 'COCO_val2014_' || lpad(g::text, 12, '0') || '.jpg',
                   'val2014/COCO_val2014_' || lpad(g::text, 12, '0') || '.jpg', g, 640, 480
            FROM generate_series(1, %(n)s) g
            """,
            {"d": dataset, "s": split, "n": images_for_pairs(n_pairs)},
        )
        cur.execute(
            """
            INSERT INTO annotation_pair (dataset_id, split_id, batch_id, kind, sampling_method, image_a_id, image_b_id,
                                         ratings_required, priority, ratings_done, created_at)
            SELECT %(d)s, %(s)s, %(b)s, 'SIS', 'i2i_csim', a, b, %(r)s, 0, 0, now()
            FROM (
                SELECT a.id AS a, b.id AS b FROM annotation_image a JOIN annotation_image b ON a.id < b.id
                ORDER BY a.id, b.id LIMIT %(n)s
            ) combos
            """,
            {"d": dataset, "s": split, "b": batch, "r": RATINGS_PER_PAIR, "n": n_pairs},
        )
        cur.execute(
            """
            INSERT INTO annotation_ratingslot (pair_id, dataset_id, index, state, kind, priority, pair_done,
                                               pair_complete)
            SELECT p.id, p.dataset_id, g, 'open', 'SIS', 0, 0, false
            FROM annotation_pair p CROSS JOIN generate_series(0, %(r)s - 1) g
            ORDER BY p.id, g
            """,
            {"r": RATINGS_PER_PAIR},
        )
        cur.execute(
            "INSERT INTO annotation_queuecounter (dataset_id, kind, pairs_open) VALUES (%s, 'SIS', %s)",
            [dataset, n_pairs],
        )
        cur.execute(
            """
            INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, email, is_staff,
                                   is_active, date_joined)
            SELECT '!', false, 'rater' || g, '', '', '', false, true, now() FROM generate_series(1, %s) g
            """,
            [n_raters],
        )
        cur.execute(
            """
            INSERT INTO auth_user_groups (user_id, group_id)
            SELECT u.id, g.id FROM auth_user u, auth_group g WHERE g.name = 'rater' AND u.username LIKE 'rater%%'
            """
        )
        cur.execute(
            "INSERT INTO annotation_qualification (rater_id, kind, granted_at) "
            "SELECT id, 'SIS', now() FROM auth_user WHERE username LIKE 'rater%%'"
        )
        # django-rest-knox tokens, made server-side as knox makes them: 64 hex characters,
        # the first 15 kept as the lookup key, the SHA-512 of the whole as the digest.
        cur.execute(
            "CREATE TEMP TABLE bench_token AS SELECT id AS user_id, "
            "md5(random()::text || id) || md5(id::text || random()::text) AS token "
            "FROM auth_user WHERE username LIKE 'rater%%'"
        )
        cur.execute(
            "INSERT INTO knox_authtoken (digest, token_key, user_id, created, expiry) "
            "SELECT encode(sha512(convert_to(token, 'UTF8')), 'hex'), substr(token, 1, 15), user_id, now(), "
            "now() + interval '1 day' FROM bench_token"
        )
        cur.execute("SELECT token FROM bench_token ORDER BY user_id")
        tokens = [row[0] for row in cur.fetchall()]
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("VACUUM ANALYZE")
    conn.close()
    return n_pairs, tokens


def add_gold(database: str) -> None:
    """GOLD_PAIRS gold SIS pairs over images of their own (ids from the pairs' sequence,
    as the upload takes them) and the dataset's gold rate set to 1 in GOLD_ONE_IN."""
    conn = psycopg2.connect(server_dsn(database))
    with conn, conn.cursor() as cur:
        cur.execute("SELECT id FROM annotation_dataset WHERE name = 'bench'")
        (dataset,) = cur.fetchone()
        cur.execute("SELECT id FROM annotation_split WHERE dataset_id = %s", [dataset])
        (split,) = cur.fetchone()
        cur.execute(
            """
            INSERT INTO annotation_image (dataset_id, split_id, key, file_path, cocoid, width, height)
            SELECT %(d)s, %(s)s, 'gold_' || g || '.jpg', 'gold/' || g || '.jpg', NULL, 640, 480
            FROM generate_series(1, %(n)s) g
            """,
            {"d": dataset, "s": split, "n": images_for_pairs(GOLD_PAIRS)},
        )
        cur.execute(
            r"""
            INSERT INTO annotation_goldpair (id, dataset_id, split_id, kind, image_a_id, image_b_id, swapped,
                                             gold_score, explanation, source, active, in_quiz, created_at)
            SELECT nextval(pg_get_serial_sequence('annotation_pair', 'id')), %(d)s, %(s)s, 'SIS', a.id, b.id, false,
                   2.5, '', 'upload', true, false, now()
            FROM annotation_image a JOIN annotation_image b ON a.id < b.id
            WHERE a.key LIKE 'gold\_%%' AND b.key LIKE 'gold\_%%'
            ORDER BY a.id, b.id LIMIT %(n)s
            """,
            {"d": dataset, "s": split, "n": GOLD_PAIRS},
        )
        cur.execute(
            "INSERT INTO annotation_qualitysettings (dataset_id, gold_one_in, auto_pause, pause_window, "
            "pause_max_error, quiz_max_error, quiz_length) VALUES (%s, %s, false, 5, 1.0, 0.75, 5)",
            [dataset, GOLD_ONE_IN],
        )
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("VACUUM ANALYZE")
    conn.close()


# --- server ----------------------------------------------------------------------------


def start_server(database: str, port: int, log_path: Path) -> subprocess.Popen:
    env = django_env(database) | {"GUNICORN_BIND": f"127.0.0.1:{port}"}
    with log_path.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "config.wsgi", "-c", "config/gunicorn.conf.py"],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"gunicorn exited with {process.returncode}:\n{log_path.read_text()[-3000:]}")
        try:
            import http.client

            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/api/schema/")
            conn.getresponse().read()
            conn.close()
            return process
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit(f"gunicorn did not answer on port {port}")


@dataclass
class Target:
    """One queue size under test: its database, server and what it measured."""

    name: str
    open_slots: int
    database: str
    port: int
    tokens: list[str] = field(default_factory=list)
    server: subprocess.Popen | None = None
    latency: Stats = field(default_factory=Stats)
    throughput: Stats = field(default_factory=Stats)
    closed_seconds: float = 0.0
    idle_raters: deque = field(default_factory=deque)
    closed_round: int = 0

    def closed_loop_raters(self) -> list[str]:
        # Fresh raters each round, none of them among the open loop's.
        start = self.closed_round * CLOSED_LOOP_RATERS
        self.closed_round += 1
        return self.tokens[start : start + CLOSED_LOOP_RATERS]

    def result(self) -> dict:
        return {
            "cycles_per_s": round(self.throughput.cycles / self.closed_seconds, 1),
            "p50_ms": round(percentile(self.latency.claim_ms, 50), 2),
            "p95_ms": round(percentile(self.latency.claim_ms, 95), 2),
            "p99_ms": round(percentile(self.latency.claim_ms, 99), 2),
        }


async def measure(targets: list[Target], seconds: float, rounds: int) -> None:
    """Alternate the sizes: per round, each size gets a warm-up, an open-loop phase and
    a closed-loop phase of seconds / rounds each."""
    phase = seconds / rounds
    for target in targets:
        # Warm-up: every worker thread opens its database connection and prepares.
        await closed_loop(target.port, target.closed_loop_raters(), max(2.0, WARMUP_CYCLES / 150), Stats())
    for number in range(rounds):
        for target in targets:
            await open_loop(target.port, target.idle_raters, OPEN_LOOP_RATE, phase, target.latency, seed=number)
            target.closed_seconds += await closed_loop(
                target.port, target.closed_loop_raters(), phase, target.throughput
            )
        log(f"  round {number + 1}/{rounds} done, load average {os.getloadavg()[0]:.2f}")
    for target in targets:
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
            f"{target.name}: closed loop {CLOSED_LOOP_RATERS} raters: {result['cycles_per_s']} cycles/s, "
            f"claim p50/p95 {percentile(closed.claim_ms, 50):.2f}/{percentile(closed.claim_ms, 95):.2f} ms, "
            f"errors {closed.errors}, empty {closed.empty}"
        )


def main() -> int:
    seconds = env_number("BENCH_SECONDS", 30.0, minimum=0)
    rounds = env_number("BENCH_ROUNDS", 3)
    names = [s.strip() for s in os.environ.get("BENCH_SIZES", "10k,10k_gold,1m").split(",") if s.strip()]
    unknown = [s for s in names if s not in SIZES]
    if unknown or not names:
        raise SystemExit(f"BENCH_SIZES: unknown size(s) {unknown}; use {', '.join(SIZES)}")
    if seconds == 0:
        raise SystemExit("BENCH_SECONDS must be positive")
    log(f"bench-queue: load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores (other load skews figures)")
    # Closed-loop raters: warm-up plus one fresh set per round; the rest rate in the open loop.
    closed_raters = CLOSED_LOOP_RATERS * (rounds + 1)
    targets = [
        Target(name=name, open_slots=SIZES[name], database=f"{DB_PREFIX}_{name}", port=FIRST_PORT + i)
        for i, name in enumerate(names)
    ]
    with tempfile.TemporaryDirectory(prefix="bench-queue-") as tmp:
        try:
            for target in targets:
                started = time.perf_counter()
                fresh_database(target.database)
                migrate(target.database)
                n_pairs, target.tokens = fill(target.database, target.open_slots, closed_raters + OPEN_LOOP_RATERS)
                target.idle_raters = deque(target.tokens[closed_raters:])
                if target.name.endswith("_gold"):
                    add_gold(target.database)
                log(
                    f"{target.name}: {target.open_slots:,} open slots ({n_pairs:,} pairs), "
                    f"{len(target.tokens):,} raters, fresh database {target.database} ready in "
                    f"{time.perf_counter() - started:.1f} s"
                )
                target.server = start_server(target.database, target.port, Path(tmp) / f"gunicorn-{target.name}.log")
            asyncio.run(measure(targets, seconds, rounds))
        finally:
            for target in targets:
                if target.server is not None:
                    stop_server(target.server)
                drop_database(target.database)
    print(json.dumps({target.name: target.result() for target in targets}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
