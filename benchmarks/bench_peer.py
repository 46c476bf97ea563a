"""Peer benchmark: our rating API and a peer annotation tool (PEER=potato or
PEER=label-studio) side by side, driven by the same asyncio client (``_peer_client.py``).

The peer is installed from its pinned PyPI release into a virtualenv of its own under
``var/peers/<peer>/venv`` (kept and reused while it holds that version; pip uses the
configured package index only) and configured as the closest task to ours (see
``_peer_potato.py`` and ``_peer_label_studio.py``): sentence pairs rated 0-5, 5 annotators
per item, passwordless or token users. Ours runs as ``bench_queue.py`` runs it (its web server +
PostgreSQL, a fresh database filled by ``_queue_data.fill``).

Ours is driven as its rating page drives it (BENCH_OURS_FLOW=page, the default: each
submit also claims the next pair and returns the rater's progress, one request per item),
or with a claim and a submit request per item (BENCH_OURS_FLOW=split); each peer as its
own page drives it (``_peer_potato.py``, ``_peer_label_studio.py``).

Both get ITEMS generated pairs (two short sentences each). Before each of ours' phases its
queue is topped up to ITEMS x 5 open answers again (``_queue_data.top_up``): a fast
machine rated it empty within the run, where the peers answer a small share of theirs.
Before each closed-loop phase, on each store kept in PostgreSQL (ours, Label Studio's), what
autovacuum would have done if the server ran it (``_autovacuum.catch_up``, as bench-queue).
Phases, each with fresh raters: after a warm-up (and an ANALYZE of each store kept in
PostgreSQL, ours and Label Studio's, as ``bench_queue.py`` does), BENCH_ROUNDS rounds of
closed-loop phases of BENCH_SECONDS per app, U=8 then U=32 raters claiming and submitting
back to back, ours and the peer alternating which goes first; then saturation: a fresh
store of SAT_ITEMS items (5 answers each) per app, SAT_RATERS raters racing until each is
told nothing is left. Per phase and app: cycles/s (claim + submit), claim p50/p95, server
CPU ms per cycle (the server's process tree; with a database, its backends:
``_cpu.cpu_reading`` at the phase's ends, and for Label Studio, which opens a connection
per request, the larger of that and the ``_peer_cpu`` sampler's poll, both of which can
only miss time), and this process's (``client_cpu_ms_per_cycle``: the load generator's and
the backend sampler's). Afterwards every store is checked: items over-assigned (more than
5 answers, or a rater twice), answers the app acknowledged but did not store (lost),
stored answers it never acknowledged, duplicates.

Last line: ``{"peer", "phases": {"u8"|"u32"|"saturation": {"ours": {...}, "peer": {...}}},
"stores": {...}, "ratio_cycles_u8", "ratio_cycles_u32", "ratio_cpu_u8", "ratio_cpu_u32",
"over_assigned_ours", "over_assigned_peer", "machine"}`` (``_common.machine_speed``): cycle
ratios are ours / peer, CPU ratios peer / ours (above 1: we use less). It measures; it asserts no timing.

Environment: PEER (required), DATABASE_URL (server; names replaced), BENCH_SECONDS (30),
BENCH_ROUNDS (2), BENCH_ITEMS (10,000), BENCH_SAT_ITEMS (200), BENCH_SAT_RATERS (40),
BENCH_RATERS_LOW (8), BENCH_RATERS_HIGH (32), BENCH_OURS_FLOW (page), BENCH_SAT_LIMIT_S
(900: saturation stops there), BENCH_EMULATE_AUTOVACUUM (1; 0: without it), BENCH_FIRST_PORT
(8171; four ports from it), BENCH_DB_PREFIX (cxc_bench_peer:
``_ours``, ``_ours_sat``, ``_ls``). BENCH_SMOKE=1: 300 items, 20 in saturation with 10
raters, one round of 2 s phases.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import _peer_label_studio
import _peer_potato
import psycopg2
from _autovacuum import add, catch_up, emulating, figures
from _common import (
    drop_database,
    env_database,
    env_number,
    fresh_database,
    machine_speed,
    print_figures,
    smoke,
    stop_server,
)
from _cpu import cpu_ms_per_cycle, postmaster_pid
from _load import FLOWS, Stats
from _peer_client import (
    Acknowledged,
    HttpConnection,
    OursApp,
    Rater,
    close_all,
    closed_loop,
    login_all,
    summary,
    until_done,
)
from _peer_cpu import Meter
from _peer_stores import CAP, check_store, sentence_pairs, stored_ours
from _queue_data import REPO, analyze, fill, migrate, server_dsn, top_up
from bench_queue import start_server

PEERS = {"potato": _peer_potato, "label-studio": _peer_label_studio}
SMOKE = smoke()
SECONDS = env_number("BENCH_SECONDS", 2.0 if SMOKE else 30.0)
ROUNDS = env_number("BENCH_ROUNDS", 1 if SMOKE else 2)
ITEMS = env_number("BENCH_ITEMS", 300 if SMOKE else 10_000)
SAT_ITEMS = env_number("BENCH_SAT_ITEMS", 20 if SMOKE else 200)
SAT_RATERS = env_number("BENCH_SAT_RATERS", 10 if SMOKE else 40)
LOW = env_number("BENCH_RATERS_LOW", 8)
HIGH = env_number("BENCH_RATERS_HIGH", 32)
SAT_LIMIT_S = env_number("BENCH_SAT_LIMIT_S", 60.0 if SMOKE else 900.0)
FIRST_PORT = env_number("BENCH_FIRST_PORT", 8171, minimum=1024)
OURS_FLOW = os.environ.get("BENCH_OURS_FLOW", "page")
DB_PREFIX = env_database("cxc_bench_peer", "BENCH_DB_PREFIX")
WARMUP_S = 1.0 if SMOKE else 3.0
PEERS_DIR = REPO / "var" / "peers"
# After a top-up of ours or autovacuum's work, before the phase's meter starts (see Side.upkeep).
REFILL_SETTLE_S = 1.0
EMULATE_AUTOVACUUM = emulating()


def log(message: str) -> None:
    print(message, flush=True)


# --- the peer's virtualenv -----------------------------------------------------------


def installed_version(venv: Path, package: str) -> str | None:
    python = venv / "bin" / "python"
    if not python.exists():
        return None
    found = subprocess.run(
        [str(python), "-c", f"import importlib.metadata as m; print(m.version({package!r}))"],
        capture_output=True,
        text=True,
    )
    return found.stdout.strip() if found.returncode == 0 else None


def ensure_venv(peer: str, module) -> Path:
    """``var/peers/<peer>/venv`` holding the peer's pinned packages: reused when it does,
    else made (or completed) with pip from the configured index."""
    venv = PEERS_DIR / peer / "venv"
    wanted = [spec.split("==") for spec in module.PACKAGES]
    missing = [f"{name}=={version}" for name, version in wanted if installed_version(venv, name) != version]
    if not missing:
        log(f"{peer}: reusing {venv} ({', '.join(module.PACKAGES)})")
        return venv
    started = time.perf_counter()
    log(f"{peer}: installing {', '.join(missing)} into {venv} (the configured package index only)")
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *missing])
    if pip.returncode != 0:
        raise SystemExit(f"{peer}: pip install {' '.join(missing)} exited with {pip.returncode} (its output above)")
    log(f"{peer}: installed in {time.perf_counter() - started:.0f} s")
    return venv


# --- measuring -----------------------------------------------------------------------


@dataclass
class Side:
    """One app under test: its client adapter, unused rater keys, CPU meter and figures."""

    label: str  # "ours" or "peer"
    app: object
    keys: list[str]
    meter: Meter
    port: int
    acked: Acknowledged = field(default_factory=Acknowledged)
    phases: dict = field(default_factory=dict)
    database: str | None = None  # its PostgreSQL database, analyzed after the warm-up
    # Queues what its raters took since the last phase again, before each phase (ours:
    # a fast machine rated 10,000 items x 5 empty within the run); returns answers queued.
    refill: Callable[[], int] | None = None

    def raters(self, count: int) -> list[Rater]:
        if len(self.keys) < count:
            raise SystemExit(f"{self.label}: {count} raters wanted, {len(self.keys)} left")
        taken, self.keys = self.keys[:count], self.keys[count:]
        return [Rater(key, HttpConnection(self.port)) for key in taken]

    async def upkeep(self, phase: str, record: dict) -> None:
        """Before a phase: ours' queue topped up; for a store in PostgreSQL, what
        autovacuum would have done (_autovacuum.catch_up; its CPU kept in the record)."""
        settle = False
        if self.refill is not None:
            added = self.refill()
            settle = added > 0
            if added:
                log(f"  {self.label}: {added:,} answers queued again before {phase}")
        if self.database is not None and EMULATE_AUTOVACUUM:
            done = catch_up(server_dsn(self.database))
            record["upkeep"] = add(record.get("upkeep", {}), done)
            settle = True
        if settle:
            # Its backend ends and is reaped before the meter starts: the reaped time of a
            # backend that ends within the phase is counted as the phase's.
            await asyncio.sleep(REFILL_SETTLE_S)

    async def closed(self, phase: str, users: int, seconds: float) -> None:
        raters = self.raters(users)
        record = self.phases.setdefault(phase, {"stats": Stats(), "seconds": 0.0, "cpu": {}, "raters": users})
        await self.upkeep(phase, record)
        await login_all(self.app, raters)
        begun = self.meter.begin()
        record["seconds"] += await closed_loop(self.app, raters, seconds, record["stats"], self.acked)
        for key, value in self.meter.end(begun).items():
            # None: a reading not taken (the backends not polled) in any of the phase's runs.
            record["cpu"][key] = None if value is None else (record["cpu"].get(key) or 0.0) + value
        close_all(raters)

    def figures(self, phase: str) -> dict:
        record = self.phases[phase]
        stats = record["stats"]
        cpu = cpu_ms_per_cycle(record["cpu"], stats.cycles)
        live = cpu_ms_per_cycle({"web_s": 0.0, "db_s": record["cpu"]["db_live_s"]}, stats.cycles)
        polled = record["cpu"]["db_sampled_s"]  # None: the backends were not polled (Meter.sample_backends)
        sampled = cpu_ms_per_cycle({"web_s": 0.0, "db_s": polled}, stats.cycles) if polled is not None else {}
        return {
            "raters": record["raters"],
            **summary(stats, record["seconds"]),
            **cpu,
            "db_cpu_ms_per_cycle_live": live["db_cpu_ms_per_cycle"],
            "db_cpu_ms_per_cycle_sampled": sampled.get("db_cpu_ms_per_cycle"),
            "client_cpu_ms_per_cycle": round(1000 * record["cpu"]["client_s"] / max(stats.cycles, 1), 2),
            **(figures(record.get("upkeep", {}), stats.cycles) if self.database is not None else {}),
            **record.get("extra", {}),
        }


async def measure(sides: list[Side]) -> None:
    """Warm-up, then the closed-loop phases, alternating which app goes first."""
    for side in sides:
        await side.closed("warmup", LOW, WARMUP_S)
    # Statistics of the stores in use, as a campaign past its first minute has them
    # (_queue_data.analyze), for every app that keeps its store in PostgreSQL.
    for side in sides:
        if side.database is not None:
            analyze(side.database)
    for number in range(ROUNDS):
        order = sides if number % 2 == 0 else sides[::-1]
        for users in (LOW, HIGH):
            for side in order:
                await side.closed(f"u{users}", users, SECONDS)
                done = side.figures(f"u{users}")["cycles"]
                log(
                    f"  round {number + 1}/{ROUNDS} u{users} {side.label}: {done} cycles so far, "
                    f"load average {os.getloadavg()[0]:.2f}"
                )


async def saturate(side: Side) -> None:
    raters = side.raters(len(side.keys))
    await login_all(side.app, raters)
    record = side.phases.setdefault("saturation", {"stats": Stats(), "seconds": 0.0, "cpu": {}, "raters": len(raters)})
    begun = side.meter.begin()
    record["seconds"] = await until_done(side.app, raters, SAT_LIMIT_S, record["stats"], side.acked)
    record["cpu"] = side.meter.end(begun)
    record["extra"] = {"timed_out": record["seconds"] >= SAT_LIMIT_S}
    close_all(raters)


# --- running -------------------------------------------------------------------------


def port_free(port: int) -> int:
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", port)) == 0:
            raise SystemExit(f"port {port} is taken on 127.0.0.1: set BENCH_FIRST_PORT")
    return port


def ours_store(database: str, open_slots: int, raters: int, port: int, logs: Path):
    """A fresh, filled database of ours and its web server: (server, tokens)."""
    fresh_database(database)
    migrate(database)
    n_pairs, tokens = fill(database, open_slots, raters)
    log(f"ours: {n_pairs:,} pairs x {CAP} in {database}, {len(tokens)} raters")
    return start_server(database, port_free(port), logs / f"ours-{port}.log"), tokens


class PotatoRun:
    """Potato's two stores: one server (task directory under var/peers/potato/run) each."""

    def __init__(self, venv: Path, logs: Path, cursor, postmaster: int):
        self.venv, self.logs = venv, logs
        self.servers: dict[str, subprocess.Popen] = {}
        self.tasks: dict[str, Path] = {}

    def _open(self, store: str, pairs: list[tuple[str, str]], raters: int, port: int) -> Side:
        task = PEERS_DIR / "potato" / "run" / store
        _peer_potato.write_task(task, pairs)
        started = time.perf_counter()
        server = _peer_potato.start(self.venv, task, port_free(port), self.logs / f"potato-{store}.log")
        log(f"potato: {len(pairs):,} items in {task}, serving on {port} after {time.perf_counter() - started:.1f} s")
        self.servers[store], self.tasks[store] = server, task
        keys = [f"{store}{number:04d}" for number in range(raters)]
        return Side("peer", _peer_potato.PotatoApp(port), keys, Meter(server.pid), port)

    def open_main(self, pairs, raters: int) -> Side:
        return self._open("main", pairs, raters, FIRST_PORT + 2)

    def open_saturation(self, pairs, raters: int) -> Side:
        return self._open("saturation", pairs, raters, FIRST_PORT + 3)

    def close(self, store: str) -> dict:
        stop_server(self.servers.pop(store))  # every save is on disk; the files are read after
        return _peer_potato.stored(self.tasks[store])

    def cleanup(self) -> None:
        for server in self.servers.values():
            stop_server(server)


class LabelStudioRun:
    """Label Studio's two stores: two projects of one server on database <prefix>_ls."""

    def __init__(self, venv: Path, logs: Path, cursor, postmaster: int):
        self.database = f"{DB_PREFIX}_ls"
        self.dsn = fresh_database(self.database)
        data_dir = PEERS_DIR / "label-studio" / "data"
        subprocess.run(["rm", "-rf", str(data_dir)], check=True)
        port = port_free(FIRST_PORT + 2)
        self.ls = _peer_label_studio.LabelStudio(venv, data_dir, port, self.database, self.dsn)
        self.logs, self.cursor, self.postmaster = logs, cursor, postmaster
        self.projects: dict[str, int] = {}
        self.tokens: list[str] = []

    def _open(self, store: str, pairs, keys: list[str]) -> Side:
        started = time.perf_counter()
        self.projects[store] = self.ls.project(store, pairs)
        log(f"label-studio: project {store}, {len(pairs):,} tasks imported in {time.perf_counter() - started:.1f} s")
        meter = Meter(self.ls.server.pid, self.cursor, self.database, self.postmaster, sample_backends=True)
        app = _peer_label_studio.LabelStudioApp(self.ls.port, self.projects[store])
        return Side("peer", app, keys, meter, self.ls.port, database=self.database)

    def open_main(self, pairs, raters: int) -> Side:
        started = time.perf_counter()
        self.ls.start(self.logs / "label-studio.log")
        self.tokens = self.ls.make_annotators(raters + SAT_RATERS)
        took = time.perf_counter() - started
        log(f"label-studio: serving on {self.ls.port} ({self.database}), {len(self.tokens)} annotators, {took:.1f} s")
        return self._open("main", pairs, self.tokens[:raters])

    def open_saturation(self, pairs, raters: int) -> Side:
        return self._open("saturation", pairs, self.tokens[-raters:])

    def close(self, store: str) -> dict:
        return _peer_label_studio.stored(self.dsn, self.projects[store], self.ls.user_ids)

    def cleanup(self) -> None:
        if self.ls.server is not None:
            stop_server(self.ls.server)
        drop_database(self.database)


RUNS = {"potato": PotatoRun, "label-studio": LabelStudioRun}


def ratio(top, bottom) -> float | None:
    return round(top / bottom, 2) if top and bottom else None


def result(peer: str, main: list[Side], saturation: list[Side], stores: dict) -> dict:
    phases = {name: {side.label: side.figures(name) for side in main} for name in (f"u{LOW}", f"u{HIGH}")}
    phases["saturation"] = {side.label: side.figures("saturation") for side in saturation}
    low, high = phases[f"u{LOW}"], phases[f"u{HIGH}"]
    return {
        "peer": peer,
        "ours_flow": OURS_FLOW,
        "items": ITEMS,
        "saturation_items": SAT_ITEMS,
        "phases": phases,
        "stores": stores,
        "ratio_cycles_u8": ratio(low["ours"]["cycles_per_s"], low["peer"]["cycles_per_s"]),
        "ratio_cycles_u32": ratio(high["ours"]["cycles_per_s"], high["peer"]["cycles_per_s"]),
        "ratio_cpu_u8": ratio(low["peer"]["cpu_ms_per_cycle"], low["ours"]["cpu_ms_per_cycle"]),
        "ratio_cpu_u32": ratio(high["peer"]["cpu_ms_per_cycle"], high["ours"]["cpu_ms_per_cycle"]),
        "over_assigned_ours": sum(store["over_assigned"] for store in stores["ours"].values()),
        "over_assigned_peer": sum(store["over_assigned"] for store in stores["peer"].values()),
    }


def run(peer: str, venv: Path, logs: Path, cursor, postmaster: int) -> dict:
    """Every phase of both apps, each store checked once its server is done with it."""
    ours_db, sat_db = f"{DB_PREFIX}_ours", f"{DB_PREFIX}_ours_sat"
    main_raters = LOW + ROUNDS * (LOW + HIGH)
    stores: dict = {"ours": {}, "peer": {}}
    peer_run, server = None, None
    try:
        server, tokens = ours_store(ours_db, ITEMS * CAP, main_raters, FIRST_PORT, logs)
        ours = Side(
            "ours",
            OursApp(FIRST_PORT, flow=OURS_FLOW),
            tokens,
            Meter(server.pid, cursor, ours_db, postmaster),
            FIRST_PORT,
            database=ours_db,
            refill=lambda: top_up(ours_db, ITEMS * CAP),
        )
        peer_run = RUNS[peer](venv, logs, cursor, postmaster)
        theirs = peer_run.open_main(sentence_pairs(ITEMS, seed=1), main_raters)
        asyncio.run(measure([ours, theirs]))
        stop_server(server)
        stores["ours"]["main"] = check_store(stored_ours(ours_db, tokens), ours.acked)
        stores["peer"]["main"] = check_store(peer_run.close("main"), theirs.acked)
        log(f"stores after the closed-loop phases: {stores}")

        server, tokens = ours_store(sat_db, SAT_ITEMS * CAP, SAT_RATERS, FIRST_PORT + 1, logs)
        meter = Meter(server.pid, cursor, sat_db, postmaster)
        ours_sat = Side("ours", OursApp(FIRST_PORT + 1, flow=OURS_FLOW), tokens, meter, FIRST_PORT + 1)
        asyncio.run(saturate(ours_sat))
        stop_server(server)
        server = None
        stores["ours"]["saturation"] = check_store(stored_ours(sat_db, tokens), ours_sat.acked)
        theirs_sat = peer_run.open_saturation(sentence_pairs(SAT_ITEMS, seed=2), SAT_RATERS)
        asyncio.run(saturate(theirs_sat))
        stores["peer"]["saturation"] = check_store(peer_run.close("saturation"), theirs_sat.acked)
        log(f"stores after saturation: ours {stores['ours']['saturation']}, peer {stores['peer']['saturation']}")
    finally:
        if server is not None and server.poll() is None:
            stop_server(server)
        if peer_run is not None:
            peer_run.cleanup()
        drop_database(ours_db)
        drop_database(sat_db)
    return result(peer, [ours, theirs], [ours_sat, theirs_sat], stores)


def main() -> int:
    peer = (os.environ.get("PEER") or "").strip()
    if peer not in PEERS:
        raise SystemExit(f"PEER={peer!r}: choose one of {', '.join(PEERS)} (make bench-peer PEER=potato)")
    if OURS_FLOW not in FLOWS:
        raise SystemExit(f"BENCH_OURS_FLOW={OURS_FLOW!r}: choose one of {', '.join(FLOWS)}")
    log(f"bench-peer {peer}: load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores (other load skews")
    log(f"figures); {ITEMS:,} items, {ROUNDS} round(s) of {SECONDS:g} s phases at U={LOW} and U={HIGH}")
    venv = ensure_venv(peer, PEERS[peer])
    machine = machine_speed()
    log(f"bench-peer: machine speed {machine} (a fixed Python workload's CPU time; smaller is faster)")
    logs = PEERS_DIR / peer / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    admin = psycopg2.connect(server_dsn("postgres"))
    admin.autocommit = True
    try:
        with admin.cursor() as cursor:
            figures = run(peer, venv, logs, cursor, postmaster_pid(cursor))
    finally:
        admin.close()
    for name, apps in figures["phases"].items():
        for label, numbers in apps.items():
            log(f"{name} {label}: {numbers}")
    print_figures(figures | {"machine": machine})
    return 0


if __name__ == "__main__":
    sys.exit(main())
