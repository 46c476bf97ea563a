"""The web server: granian serving ``web.served_wsgi:application``, set from the environment.

Run: ``python -m web.serve`` (the container's command). Granian answers HTTP in Rust
and hands each request to a pool of Python threads per worker process; gunicorn's
threaded workers, served before, parsed HTTP in Python under the GIL: 0.23-0.39 ms of CPU
per request against granian's 0.08-0.10 (a WSGI hello-world on 2 cores); in bench-queue
(U=8 and U=32, both flows, three runs of each server taking turns) granian spent less web
CPU per rated item in 10 of 12 phase pairs, 26 % less over all twelve, at 22 % more
rated items per second. Threads keep client connections alive and overlap
one request's database wait with another's Python work; a process per core, plus one,
keeps the cores busy despite the GIL.

Settings (environment, checked here: a bad value stops the start naming it):

- ``WEB_BIND``: ``host:port`` (default ``127.0.0.1:8000``; the container's is
  ``0.0.0.0:8000``);
- ``WEB_WORKERS``: processes (default one per core, at most 8; the container sets 2, since
  inside it the host's cores would be counted); each thread of each holds a database
  connection;
- ``WEB_THREADS``: request threads per process (default 2: see below);
- ``WEB_THREAD_IDLE_SECONDS``: a request thread idle this long ends, and its database
  connection closes with it (default 600, the most granian allows: each new thread
  connects anew, about 28 ms of PostgreSQL's CPU; from 5);
- ``WEB_BACKLOG``: pending connections (default 2048);
- ``WEB_LOG_LEVEL`` (default ``warning``), ``WEB_ACCESS_LOG`` (``true``: a line per request);
- ``WEB_KEEPALIVE_REQUESTS``: read by ``web.served_wsgi`` (default 20, 0: never),
  checked here as well;
- with ``METRICS_ENABLED``, ``PROMETHEUS_MULTIPROC_DIR``: the folder the workers count in,
  emptied of the web's files at each start (``prepare_metrics``).

A worker that dies is started again; on stop, workers get 10 s to finish their requests.
``GUNICORN_*`` variables from the former server (``GUNICORN_CMD_ARGS`` too) stop the
start, naming their replacement, so that a deployment's tuning is not dropped unseen.
Granian parses and queues requests in Rust, so Python threads need only overlap one
request's database wait with another's work: at 3 x 2 the rating cycle ran 8-16 % more
cycles per second than at 3 x 4 in bench-queue's page phases (U=8 and U=32, three rounds
taking turns with other settings), each statement cheaper for PostgreSQL with fewer
requests in its hands at once (1.52-1.59 ms per cycle against 1.77-1.89), at a lower p95;
2 x 3, 4 x 2 and 6 x 1 fell between. One process per core went further: 2 x 2 against
3 x 2 served 7-10 % more cycles in the page phases and 14-15 % more in the split ones (on
the means of two runs each), at 12-16 % less CPU per cycle (docs/architecture.md). Image files and downloads take these
threads too: behind the reverse proxy that production runs behind (docs/operator-guide.md,
"HTTPS behind a reverse proxy"), which buffers answers, a slow client does not hold one; served without such a
proxy, raise WEB_THREADS.
"""

from __future__ import annotations

import glob
import multiprocessing
import os
import sys

TARGET = "web.served_wsgi:application"
LOG_LEVELS = ("critical", "error", "warning", "info", "debug")
# What former gunicorn settings became; any other GUNICORN_* is no longer needed.
FORMER_SETTINGS = {
    "GUNICORN_BIND": "WEB_BIND",
    "GUNICORN_WORKERS": "WEB_WORKERS",
    "GUNICORN_THREADS": "WEB_THREADS",
    "GUNICORN_BACKLOG": "WEB_BACKLOG",
    "GUNICORN_LOGLEVEL": "WEB_LOG_LEVEL",
    "GUNICORN_ACCESSLOG": "WEB_ACCESS_LOG",
    "GUNICORN_KEEPALIVE_REQUESTS": "WEB_KEEPALIVE_REQUESTS",
}


class ServeSettingError(ValueError):
    """A web server setting in the environment that cannot be used; the message names it."""


def _whole_number(environ: dict, name: str, default: int, low: int, high: int) -> int:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ServeSettingError(f"{name} must be a whole number, got {raw!r}") from None
    if not low <= value <= high:
        raise ServeSettingError(f"{name} must be from {low} to {high}, got {value}")
    return value


def _bind(environ: dict) -> tuple[str, int]:
    raw = environ.get("WEB_BIND", "").strip() or "127.0.0.1:8000"
    host, colon, port = raw.rpartition(":")
    if not colon or not host or not (port.isascii() and port.isdigit()) or not 0 < int(port) < 65536:
        raise ServeSettingError(f"WEB_BIND must be host:port (as 0.0.0.0:8000), got {raw!r}")
    return host.strip("[]"), int(port)


def _flag(environ: dict, name: str) -> bool:
    raw = environ.get(name, "").strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise ServeSettingError(f"{name} must be true or false, got {raw!r}")


def server_options(environ: dict, cores: int) -> dict:
    """Granian's keyword arguments from ``environ`` on a machine of ``cores`` cores."""
    former = sorted(name for name in environ if name.startswith("GUNICORN_"))
    if former:
        names = ", ".join(f"{name} ({FORMER_SETTINGS.get(name) or 'no longer needed'})" for name in former)
        raise ServeSettingError(f"the web server is granian now (web/serve.py); replace or remove {names}")
    host, port = _bind(environ)
    log_level = (environ.get("WEB_LOG_LEVEL", "").strip() or "warning").lower()
    if log_level not in LOG_LEVELS:
        raise ServeSettingError(f"WEB_LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}, got {log_level!r}")
    # Read by each worker's settings (web.served_wsgi); checked here too, so that a bad
    # value stops the start with its name instead of every worker failing on it.
    _whole_number(environ, "WEB_KEEPALIVE_REQUESTS", 20, 0, 1_000_000)
    return {
        "address": host,
        "port": port,
        # One per core: on 2 cores 2 x 2 served 7-15 % more rating cycles than 3 x 2 in
        # both of bench-queue's flows, at 12-16 % less CPU per cycle (docs/architecture.md).
        "workers": _whole_number(environ, "WEB_WORKERS", max(1, min(8, cores)), 1, 64),
        "blocking_threads": _whole_number(environ, "WEB_THREADS", 2, 1, 64),
        "blocking_threads_idle_timeout": _whole_number(environ, "WEB_THREAD_IDLE_SECONDS", 600, 5, 600),
        "backlog": _whole_number(environ, "WEB_BACKLOG", 2048, 128, 65535),
        "log_level": log_level,
        "log_access": _flag(environ, "WEB_ACCESS_LOG"),
    }


def prepare_metrics(environ: dict) -> str | None:
    """With METRICS_ENABLED, the folder where the workers count (PROMETHEUS_MULTIPROC_DIR,
    made if missing) emptied of the web's figures from before: a worker's counts live in
    files of its own (``config.metrics``), and files of processes gone would be summed for
    ever. Without METRICS_ENABLED, None. The Celery worker's files stay (it empties its
    own at its start)."""
    if not _flag(environ, "METRICS_ENABLED"):
        return None
    folder = environ.get("PROMETHEUS_MULTIPROC_DIR", "").strip()
    if not folder:
        raise ServeSettingError(
            "METRICS_ENABLED is true but PROMETHEUS_MULTIPROC_DIR is not set: the worker processes "
            'need a folder to count in (docs/operator-guide.md, "Metrics, health and logs")'
        )
    try:
        os.makedirs(folder, exist_ok=True)
        for path in glob.glob(os.path.join(folder, "*_web-*.db")):  # config.metrics names them
            os.remove(path)
    except OSError as problem:
        raise ServeSettingError(f"PROMETHEUS_MULTIPROC_DIR {folder!r} cannot be used: {problem}") from None
    return folder


def serve(options: dict) -> None:
    from granian import Granian
    from granian.constants import HTTPModes, Interfaces
    from granian.log import LogLevels

    Granian(
        TARGET,
        interface=Interfaces.WSGI,
        http=HTTPModes.http1,
        websockets=False,
        respawn_failed_workers=True,
        workers_kill_timeout=10,
        **options | {"log_level": LogLevels(options["log_level"])},
    ).serve()


def main() -> None:
    try:
        options = server_options(dict(os.environ), multiprocessing.cpu_count())
        prepare_metrics(dict(os.environ))
    except ServeSettingError as problem:
        sys.exit(f"web.serve: {problem}")
    serve(options)


if __name__ == "__main__":
    main()
