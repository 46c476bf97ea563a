"""`make bench-shortcuts`: each of the rating cycle's framework shortcuts against the
framework's way, in one series of bench-queue runs on this machine.

Runs ``benchmarks/bench_queue.py`` once with every shortcut on (A), then once with each
shortcut off in turn (B, ``RATING_SHORTCUTS_OFF=<name>``, passed to the web servers it
starts), then A again, in the API flow and the rating page's flow at U=8 and U=32
(phases 10k_u8, 10k_u32, 10k_u8_page, 10k_u32_page; ``BENCH_SHORTCUT_PHASES`` to change).
A shortcut's saving in a phase is 1 - A/B of the server's CPU per cycle (web + PostgreSQL),
A the mean of the two A runs; the shortcut keeps its place where its largest saving over
the phases is at least 10 % (docs/architecture.md, "Framework shortcuts").

Environment: BENCH_SECONDS and BENCH_ROUNDS (bench-queue's, default 8 and 2 here),
BENCH_SHORTCUTS (names, default all four), BENCH_SMOKE=1 (bench-queue's smoke size, one
phase, one shortcut). Last line: one JSON object ``{"phases", "on": {phase: cpu ms},
"on_drift_pct", "shortcuts": {name: {"off": {phase: cpu ms}, "saved_pct": {phase: %},
"largest_saved_pct", "keeps"}}}``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from _common import print_figures, smoke

REPO_DIR = Path(__file__).resolve().parent.parent
SHORTCUTS = ("wsgi", "token_view", "input", "answer")
KEEP_AT_PCT = 10.0


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def bench_queue(phases: list[str], off: str) -> dict[str, float]:
    """One bench-queue run with ``off`` (a shortcut's name or "") turned off: the server's
    CPU ms per cycle by phase."""
    environ = {
        **os.environ,
        "BENCH_SIZES": ",".join(phases),
        "RATING_SHORTCUTS_OFF": off,
        "BENCH_DB_PREFIX": "cxc_bench_shortcuts",
    }
    environ.setdefault("BENCH_SECONDS", "8")
    environ.setdefault("BENCH_ROUNDS", "2")
    log(f"bench-shortcuts: bench-queue with {'every shortcut on' if not off else off + ' off'}")
    done = subprocess.run(
        [sys.executable, str(REPO_DIR / "benchmarks" / "bench_queue.py")],
        env=environ,
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    errors = {phase: figures[phase]["errors"] for phase in phases if figures[phase]["errors"]}
    if errors:
        raise SystemExit(f"bench-shortcuts: errors with {off or 'every shortcut on'}: {errors}")
    return {phase: figures[phase]["cpu_ms_per_cycle"] for phase in phases}


def main() -> int:
    default_phases = "10k_u8" if smoke() else "10k_u8,10k_u32,10k_u8_page,10k_u32_page"
    phases = [p.strip() for p in os.environ.get("BENCH_SHORTCUT_PHASES", default_phases).split(",") if p.strip()]
    default_names = "token_view" if smoke() else ",".join(SHORTCUTS)
    names = [n.strip() for n in os.environ.get("BENCH_SHORTCUTS", default_names).split(",") if n.strip()]
    unknown = sorted(set(names) - set(SHORTCUTS))
    if unknown:
        raise SystemExit(f"BENCH_SHORTCUTS: unknown {unknown}; use names of {list(SHORTCUTS)}")
    first = bench_queue(phases, "")
    off = {name: bench_queue(phases, name) for name in names}
    # The second run with every shortcut on tells the drift; a smoke run only shows it works.
    last = first if smoke() else bench_queue(phases, "")
    on = {phase: round((first[phase] + last[phase]) / 2, 3) for phase in phases}
    drift = {phase: round(100 * (last[phase] - first[phase]) / first[phase], 1) for phase in phases}
    shortcuts = {}
    for name, cpu in off.items():
        saved = {phase: round(100 * (1 - on[phase] / cpu[phase]), 1) for phase in phases}
        largest = max(saved.values())
        shortcuts[name] = {
            "off": cpu,
            "saved_pct": saved,
            "largest_saved_pct": largest,
            "keeps": largest >= KEEP_AT_PCT,
        }
    print_figures({"phases": phases, "on": on, "on_drift_pct": drift, "shortcuts": shortcuts})
    return 0


if __name__ == "__main__":
    sys.exit(main())
