"""benchmarks/_cpu.py counts a PostgreSQL backend that ends within a phase (a connection
past CONN_MAX_AGE closes and opens again mid-phase): through the postmaster's reaped time,
less what the backend had spent before the phase. Without it a bench-queue phase at 32
raters lost the CPU of all 12 backends that reconnected."""

import sys
import time
from pathlib import Path

import psycopg2
import pytest

from tests.conftest import REPO_DIR

sys.path.insert(0, str(REPO_DIR / "benchmarks"))
from _cpu import TICKS_PER_S, CpuReading, cpu_reading, cpu_spent


def test_an_ended_backend_counts_from_the_phase_start_and_a_new_one_from_zero():
    before = CpuReading(web_ticks=10, backend_ticks={1: 100, 2: 50}, reaped_ticks=1_000)
    # Backend 2 ended having spent 80 in all; backend 3 was born within the phase.
    after = CpuReading(web_ticks=30, backend_ticks={1: 160, 3: 20}, reaped_ticks=1_080)
    spent = cpu_spent(before, after)
    assert spent["backends_lost"] == 1
    assert spent["db_ended_s"] * TICKS_PER_S == pytest.approx(30)
    assert spent["db_s"] * TICKS_PER_S == pytest.approx(60 + 20 + 30)
    assert spent["web_s"] * TICKS_PER_S == pytest.approx(20)


def _ticks(pid: int) -> int:
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[11]) + int(fields[12])


@pytest.mark.postgres
def test_a_real_backend_that_ends_mid_phase_keeps_its_work(settings):
    database = settings.DATABASES["default"]
    server = {key.lower(): database[key] for key in ("HOST", "PORT", "USER", "PASSWORD") if database.get(key)}
    admin, worker = psycopg2.connect(dbname="postgres", **server), psycopg2.connect(dbname="postgres", **server)
    admin.autocommit = True
    try:
        with worker.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            (pid,) = cursor.fetchone()
        if not Path(f"/proc/{pid}").exists():
            pytest.skip("PostgreSQL runs outside this machine's process namespace: its /proc cannot be read")
        with admin.cursor() as cursor:
            before = cpu_reading(web_root=1, cursor=cursor, database="postgres")
            start = _ticks(pid)
            with worker.cursor() as busy:
                busy.execute("SELECT count(*) FROM generate_series(1, 4000000) g WHERE g % 7 = 3")
            work = (_ticks(pid) - start) / TICKS_PER_S
            worker.close()
            for _ in range(100):  # until the postmaster has reaped it
                if not Path(f"/proc/{pid}").exists():
                    break
                time.sleep(0.05)
            after = cpu_reading(web_root=1, cursor=cursor, database="postgres")
    finally:
        admin.close()
        worker.close()
    spent = cpu_spent(before, after)
    assert work > 0.05, "the query was too short to measure"
    assert spent["backends_lost"] >= 1
    assert spent["db_s"] >= 0.9 * work, spent


@pytest.mark.postgres
@pytest.mark.parametrize("polled", [False, True])
def test_the_meter_polls_backends_only_for_a_server_that_asks_for_it(settings, polled):
    """bench-peer polls the backends of Label Studio's database (a connection per request);
    ours' keep their connections, and the poll's CPU would come out of the cores ours
    shares with the load generator."""
    import os
    import threading

    from _cpu import postmaster_pid
    from _peer_cpu import Meter

    database = settings.DATABASES["default"]
    server = {key.lower(): database[key] for key in ("HOST", "PORT", "USER", "PASSWORD") if database.get(key)}
    admin = psycopg2.connect(dbname="postgres", **server)
    admin.autocommit = True
    try:
        with admin.cursor() as cursor:
            if not Path(f"/proc/{postmaster_pid(cursor)}").exists():
                pytest.skip("PostgreSQL runs outside this machine's process namespace: its /proc cannot be read")
            meter = Meter(os.getpid(), cursor, "postgres", postmaster_pid(cursor), sample_backends=polled)
            begun = meter.begin()
            polling = any(thread.name == "backend-sampler" for thread in threading.enumerate())
            spent = meter.end(begun)
    finally:
        admin.close()
    assert polling is polled
    assert (spent["db_sampled_s"] is not None) is polled
    assert spent["db_s"] >= spent["db_live_s"] >= 0
