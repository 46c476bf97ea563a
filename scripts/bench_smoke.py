"""`make bench-smoke`: every benchmark at its smoke size, so none of them rots unseen.

Runs each `bench-*` target of the Makefile (but this one, bench-peer, which installs the
peer tools, and those the test suite runs end to end: RUN_BY_TESTS) as `make bench-X` with
BENCH_SMOKE=1, BENCH_SMOKE_JOBS at a time (default 2: at the smoke size a benchmark spends
much of its time starting processes, servers and databases, so two overlap well on 2
cores; the ones that start several web servers, each holding database connections, never
run beside each other: EXCLUSIVE), and judges only that it worked: a benchmark fails when
it exits non-zero, or ends after BENCH_SMOKE_TIMEOUT seconds (default 600), or the last
line of its standard output is not one JSON object (strict JSON: no NaN). It never judges
a timing. Prints one line per benchmark (name, wall seconds, ok or why it failed, with the
tail of its output), then one JSON object on the last line: ``{"seconds": {target: wall
seconds}, "failed": [target, ...], "total_s", "wall_s", "jobs"}``. Exit status 1 when any
failed. Each benchmark's output is kept in BENCH_SMOKE_LOGS (default
test-artifacts/bench-smoke/<target>.stdout.log and .stderr.log).

Arguments: target names to run only those (`scripts/bench_smoke.py bench-ui bench-join`).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO_DIR = Path(__file__).resolve().parent.parent
TARGET = re.compile(r"^(bench-[a-z0-9-]+)\s*:", re.MULTILINE)
# Targets left out: this runner, and bench-peer, which installs the peer tools from PyPI.
LEFT_OUT = {"bench-smoke", "bench-peer"}
# Targets the test suite runs end to end already, at a size below their smoke size: left
# out of a run without arguments (they run when named). The test named must run the
# target's script (tests/test_bench_smoke.py checks that it still does).
RUN_BY_TESTS = {"bench-adaptive": ("tests/test_bench_adaptive.py", "benchmarks/bench_adaptive.py")}
# Settings a benchmark takes beside BENCH_SMOKE=1, unless the caller's environment sets
# them. bench-queue's phases take ports from 8121 on, where the tests' web server looks for
# one (tests/support/web_server.py: 8121-8129): the smoke run, which may
# share the machine with the tests, moves them away.
EXTRA_ENV = {"bench-queue": {"BENCH_FIRST_PORT": "8161"}, "bench-shortcuts": {"BENCH_FIRST_PORT": "8171"}}
TAIL_LINES = 25
# They start several web servers, each with database connections (bench-queue checks
# the free ones before it starts): one of them at a time.
EXCLUSIVE = frozenset({"bench-queue", "bench-shortcuts"})


@dataclass
class Outcome:
    """One benchmark's run: ``problem`` is empty when it worked."""

    name: str
    seconds: float
    problem: str
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return not self.problem


def benchmark_targets(makefile: Path) -> list[str]:
    """The Makefile's bench-* targets in their order, but LEFT_OUT."""
    return [name for name in TARGET.findall(makefile.read_text()) if name not in LEFT_OUT]


def default_targets(known: Sequence[str]) -> list[str]:
    """What a run without arguments runs: the known targets but those RUN_BY_TESTS."""
    return [name for name in known if name not in RUN_BY_TESTS]


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def last_line_problem(returncode: int, stdout: str) -> str:
    """Why a finished benchmark failed ('' when it did not): a non-zero exit status, or a
    last non-empty line of ``stdout`` that is not one JSON object."""
    if returncode != 0:
        return f"exit status {returncode}"
    lines = [line for line in stdout.splitlines() if line.strip()]
    if not lines:
        return "no output: the last line must be one JSON object"
    try:
        figures = json.loads(lines[-1], parse_constant=_no_constant)
    except ValueError as error:
        return f"last line is not JSON ({error}): {lines[-1][:200]!r}"
    if not isinstance(figures, dict):
        return f"last line is JSON but no object: {lines[-1][:200]!r}"
    return ""


def _stop_group(process: subprocess.Popen) -> None:
    """End the benchmark's whole process group (make, Python, the web server, Chromium)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=20)
            return
        except subprocess.TimeoutExpired:
            continue


def run_one(name: str, command: Sequence[str], env: dict[str, str], timeout: float) -> Outcome:
    """Run ``command`` in a process group of its own; its outcome, judged by
    last_line_problem (or the timeout)."""
    started = time.perf_counter()
    process = subprocess.Popen(
        command,
        cwd=REPO_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
        problem = last_line_problem(process.returncode, stdout)
    except subprocess.TimeoutExpired:
        _stop_group(process)
        stdout, stderr = process.communicate()
        problem = f"no end within {timeout:g} s (stopped)"
    return Outcome(name, round(time.perf_counter() - started, 1), problem, stdout, stderr)


def make_command(name: str) -> list[str]:
    return ["make", "--no-print-directory", name]


def smoke_env(name: str, base: dict[str, str]) -> dict[str, str]:
    """``base`` with BENCH_SMOKE=1 and the target's EXTRA_ENV where ``base`` has none."""
    extra = {key: value for key, value in EXTRA_ENV.get(name, {}).items() if not base.get(key)}
    return {**base, **extra, "BENCH_SMOKE": "1"}


def _tail(text: str) -> str:
    return "\n".join(f"    | {line}" for line in text.splitlines()[-TAIL_LINES:])


def report(outcome: Outcome, echo: Callable[[str], None]) -> None:
    verdict = "ok" if outcome.ok else f"FAILED: {outcome.problem}"
    echo(f"{outcome.name:<22} {outcome.seconds:7.1f} s  {verdict}")
    if not outcome.ok:
        echo(f"  last lines of its standard error:\n{_tail(outcome.stderr)}")
        echo(f"  last lines of its standard output:\n{_tail(outcome.stdout)}")


def run_all(
    names: Sequence[str],
    *,
    command_for: Callable[[str], Sequence[str]] = make_command,
    env: dict[str, str] | None = None,
    timeout: float = 600,
    log_dir: Path | None = None,
    echo: Callable[[str], None] = print,
    jobs: int = 1,
    exclusive: frozenset[str] = EXCLUSIVE,
) -> dict:
    """Run every benchmark of ``names``, ``jobs`` at a time (each lane, as it frees up,
    takes the first waiting one that may start: of ``exclusive`` one at a time); echo a line each as it ends, then the
    summary object (also returned): seconds per benchmark in the order of ``names``, the
    failed ones, the total of their seconds and the run's wall seconds."""
    base = dict(os.environ if env is None else env)
    waiting = list(names)
    outcomes: dict[str, Outcome] = {}
    changed = threading.Condition()
    exclusive_running = False
    started = time.perf_counter()

    def next_name() -> str | None:
        """The first waiting benchmark that may start now (None: all taken); waits while
        only an exclusive one is left and another is running."""
        nonlocal exclusive_running
        with changed:
            while waiting:
                free = [name for name in waiting if name not in exclusive or not exclusive_running]
                if free:
                    waiting.remove(free[0])
                    exclusive_running = exclusive_running or free[0] in exclusive
                    return free[0]
                changed.wait()
            return None

    def lane() -> None:
        nonlocal exclusive_running
        while (name := next_name()) is not None:
            outcome = run_one(name, command_for(name), smoke_env(name, base), timeout)
            if log_dir is not None:
                log_dir.mkdir(parents=True, exist_ok=True)
                (log_dir / f"{name}.stdout.log").write_text(outcome.stdout)
                (log_dir / f"{name}.stderr.log").write_text(outcome.stderr)
            with changed:
                report(outcome, echo)
                outcomes[name] = outcome
                if name in exclusive:
                    exclusive_running = False
                changed.notify_all()

    lanes = [threading.Thread(target=lane, name=f"bench-smoke-{number}") for number in range(max(1, jobs))]
    for thread in lanes:
        thread.start()
    for thread in lanes:
        thread.join()
    ordered = [outcomes[name] for name in names]
    summary = {
        "seconds": {outcome.name: outcome.seconds for outcome in ordered},
        "failed": [outcome.name for outcome in ordered if not outcome.ok],
        "total_s": round(sum(outcome.seconds for outcome in ordered), 1),
        "wall_s": round(time.perf_counter() - started, 1),
        "jobs": max(1, jobs),
    }
    if summary["failed"]:
        echo(f"bench-smoke: {len(summary['failed'])} failed: {', '.join(summary['failed'])}")
    echo(json.dumps(summary))
    return summary


def main(argv: Sequence[str]) -> int:
    known = benchmark_targets(REPO_DIR / "Makefile")
    unknown = [name for name in argv if name not in known]
    if unknown:
        print(f"unknown benchmark(s) {', '.join(unknown)}; the Makefile has {', '.join(known)}", file=sys.stderr)
        return 2
    try:
        timeout = float(os.environ.get("BENCH_SMOKE_TIMEOUT") or 600)
    except ValueError:
        print(f"BENCH_SMOKE_TIMEOUT={os.environ['BENCH_SMOKE_TIMEOUT']!r} is not a number", file=sys.stderr)
        return 2
    jobs_text = os.environ.get("BENCH_SMOKE_JOBS") or "2"
    if not jobs_text.isdigit() or int(jobs_text) < 1:
        print(f"BENCH_SMOKE_JOBS={jobs_text!r} is not a whole number of at least 1", file=sys.stderr)
        return 2
    log_dir = Path(os.environ.get("BENCH_SMOKE_LOGS") or REPO_DIR / "test-artifacts" / "bench-smoke")
    summary = run_all(
        list(argv) or default_targets(known),
        timeout=timeout,
        log_dir=log_dir,
        echo=lambda line: print(line, flush=True),
        jobs=int(jobs_text),
    )
    return 1 if summary["failed"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
