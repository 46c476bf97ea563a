"""Real `celery -A config worker` processes for tests: their environment (the test's Redis,
database and DATA_DIR) and their start, waiting until they answer a ping."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

REPO_DIR = Path(__file__).resolve().parents[2]


def database_url(settings) -> str:
    db = settings.DATABASES["default"]
    auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def worker_env(settings, redis_url: str, **extra: str) -> dict[str, str]:
    """A worker's whole environment: services mode on the test database and Redis."""
    return {
        **os.environ,
        "RUN_MODE": "services",
        "DATABASE_URL": database_url(settings),
        "CELERY_BROKER_URL": redis_url,
        "REDIS_URL": redis_url,
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "DATA_DIR": str(settings.DATA_DIR),
        **extra,
    }


# The worker's launcher: the kernel sends the worker SIGTERM when the test process that
# started it ends (PR_SET_PDEATHSIG, kept across the exec). A test run stopped by a signal
# runs no finalizer, and a worker it left behind went on taking tasks from the tests'
# shared Redis queue: another run's batches then waited for ever.
_END_WITH_PARENT = (
    "import ctypes, os, signal, sys; "
    "ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM) == 0 or sys.exit('prctl failed'); "
    "os.getppid() != 1 or sys.exit('the test process is gone'); "
    "os.execv(sys.executable, [sys.executable, '-m', 'celery', *sys.argv[1:]])"
)


def start_worker(
    celery_app, log_dir: Path, env: dict[str, str], *, prefix: str, pool: list[str], purge: bool
) -> tuple[subprocess.Popen, Path]:
    """Start a worker (``pool``: its pool arguments; ``purge``: drain the queue first) and
    return it once it answers a ping, with its log file; fail the test if it never does."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}@localhost"
    log_path = log_dir / f"{name}.log"
    command = [sys.executable, "-c", _END_WITH_PARENT, "-A", "config", "worker", *pool, "-n", name]
    command += ["--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel=INFO"]
    if purge:
        command.append("--purge")
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, cwd=REPO_DIR, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 90
    while not celery_app.control.ping(destination=[name], timeout=1.0):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"worker {name} did not come up:\n{log_path.read_text(errors='replace')[-3000:]}")
    return process, log_path
