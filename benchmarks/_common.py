"""Helpers for benchmarks: a fresh PostgreSQL database each run, sizes and names from the
environment (BENCH_SMOKE=1: the smoke size), the last line's figures, and peak memory."""

from __future__ import annotations

import http.client
import json
import os
import re
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlparse, urlunparse

REPO_DIR = Path(__file__).resolve().parent.parent
if str(REPO_DIR) not in sys.path:
    sys.path.insert(0, str(REPO_DIR))

from scripts.probe_services import admin_connection  # noqa: E402  (needs REPO_DIR on the path)


def _server_url() -> str:
    base = os.environ.get("DATABASE_URL") or ""
    if not base.startswith("postgres"):
        raise SystemExit("benchmarks need PostgreSQL: set DATABASE_URL (make bench-* sets it)")
    return base


def fresh_database(name: str, *, template: str | None = None) -> str:
    """Drop and create database ``name`` on the server of DATABASE_URL, as a copy of
    ``template`` when given (no session may be connected to it meanwhile); return its URL.

    Benchmarks never touch the developer's or the tests' databases.
    """
    from psycopg2 import sql

    base = _server_url()
    admin = admin_connection(base)
    with admin.cursor() as cursor:
        cursor.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        create = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if template is not None:
            create = sql.SQL("{} TEMPLATE {}").format(create, sql.Identifier(template))
        cursor.execute(create)
    admin.close()
    return urlunparse(urlparse(base)._replace(path=f"/{name}"))


def drop_database(name: str) -> None:
    """Drop a benchmark's database, closing any session still connected to it."""
    from psycopg2 import sql

    admin = admin_connection(_server_url())
    with admin.cursor() as cursor:
        cursor.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    admin.close()


def setup_django(database_url: str, **env: str) -> None:
    """Point Django at the benchmark database (before any setting is read) and migrate."""
    os.environ["DATABASE_URL"] = database_url
    os.environ["RUN_MODE"] = "services"
    os.environ.setdefault("SECRET_KEY", "benchmark-only")
    os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "true")
    os.environ.update(env)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def env_number(name: str, default: int | float, *, minimum: int | float = 1) -> int | float:
    """A number from the environment (of ``default``'s type), ``default`` when unset; a
    value that is no such number, or below ``minimum``, stops the benchmark naming it."""
    text = os.environ.get(name)
    if text is None or text.strip() == "":
        return default
    try:
        value = type(default)(text)
    except ValueError:
        wanted = "a whole number" if isinstance(default, int) else "a number"
        raise SystemExit(f"{name}={text!r} is not {wanted}") from None
    if value < minimum:
        raise SystemExit(f"{name}={text!r} is below {minimum}")
    return value


def smoke() -> bool:
    """Whether BENCH_SMOKE=1 asks for the smoke size: tiny data, short phases, the same path
    end to end (``make bench-smoke``). Unset or 0: the full size; anything else stops."""
    text = (os.environ.get("BENCH_SMOKE") or "").strip()
    if text not in ("", "0", "1"):
        raise SystemExit(f"BENCH_SMOKE={text!r} is neither 0 nor 1")
    return text == "1"


def sized(name: str, full: int | float, smoke_value: int | float, *, minimum: int | float = 1) -> int | float:
    """The number in ``name`` (see env_number); unset, ``smoke_value`` under BENCH_SMOKE=1,
    else ``full`` (today's size)."""
    return env_number(name, smoke_value if smoke() else full, minimum=minimum)


def env_database(default: str, name: str = "BENCH_DATABASE") -> str:
    """The benchmark's own database: ``name`` from the environment, else ``default``; one
    that is no plain identifier (lower-case letters, digits, underscores) stops, named."""
    text = (os.environ.get(name) or "").strip() or default
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", text):
        raise SystemExit(f"{name}={text!r} is no database name (lower-case letters, digits, underscores)")
    return text


def served_command() -> list[str]:
    """The web server's command as the Dockerfile's CMD gives it (JSON form), its
    ``python`` this interpreter: benchmarks and tests serve the app as the container does,
    so a CMD that stops serving the project's configuration fails them."""
    found = re.search(r"^CMD (\[.*\])$", (REPO_DIR / "Dockerfile").read_text(), re.MULTILINE)
    if found is None:
        raise SystemExit("the Dockerfile has no CMD in its JSON form")
    command = json.loads(found[1])
    if command[:3] != ["python", "-m", "web.serve"]:
        raise SystemExit(f"the Dockerfile's CMD is {command}, not python -m web.serve")
    return [sys.executable, *command[1:]]


def start_web_server(env: dict, port: int, log_path: Path, *, port_setting: str = "") -> subprocess.Popen:
    """The container's web server (``served_command``: granian with web/serve.py's
    settings) on 127.0.0.1:``port`` (``env`` is its whole environment), output to
    ``log_path``; returns once it answers HTTP. A port something else already listens on
    stops the benchmark, naming ``port_setting`` (the variable that moves it): that server
    would be measured instead of ours."""
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", port)) == 0:
            raise SystemExit(f"port {port} is taken on 127.0.0.1" + (f": set {port_setting}" if port_setting else ""))
    with log_path.open("w") as out:
        server = subprocess.Popen(
            served_command(),
            cwd=REPO_DIR,
            env=env | {"WEB_BIND": f"127.0.0.1:{port}"},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the web server exited with {server.returncode}:\n{log_path.read_text()[-3000:]}")
        try:
            # Any answer: a worker is up (a bare listening socket may have none yet).
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/")
            conn.getresponse().read()
            conn.close()
            return server
        except OSError:
            time.sleep(0.2)
    stop_server(server)
    raise SystemExit(f"the web server did not answer on port {port} within 60 s")


def print_figures(figures: dict) -> None:
    """The benchmark's last line: ``figures`` as one JSON object, with ``"smoke": true``
    under BENCH_SMOKE=1 (figures of the smoke size are no measurement)."""
    print(json.dumps({**figures, "smoke": True} if smoke() else figures), flush=True)


def _interpreter_workload(rows: int = 100_000) -> int:
    """What a request's Python does most: dicts built and read, strings formatted, calls."""
    total = 0
    for number in range(rows):
        row = {"id": number, "name": f"rater{number}", "score": number * 0.5}
        total += len(row["name"]) + int(row["score"]) % 7
    return total


def machine_speed(runs: int = 7) -> dict:
    """The CPU time of a fixed pure-Python workload on this machine (the least of ``runs``),
    reported beside a benchmark's figures: the machines sessions run on differ by up to 2x
    in speed, and a CPU figure per cycle is only comparable with one from a machine of the
    same speed. Smaller is faster; it asserts nothing."""
    times = []
    for _ in range(runs):
        started = time.process_time()
        _interpreter_workload()
        times.append(time.process_time() - started)
    return {"python_workload_ms": round(1000 * min(times), 1), "cores": os.cpu_count()}


def stop_server(process) -> None:
    """Stop a server process (the web server): terminate, and kill it if it does not end in 20 s."""
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far, in MiB (Linux reports KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def shared_files(folder: str, names) -> tuple[Path, str]:
    """(``SHARED_DIR``/``folder`` (default the repository's sibling ``shared``), why it
    cannot be used: "" when every file of ``names`` is there). Under CI (CI=1/true/yes) a
    missing file stops the benchmark: CI must have the shared data."""
    path = Path(os.environ.get("SHARED_DIR") or REPO_DIR.parent / "shared") / folder
    missing = [name for name in names if not (path / name).is_file()]
    if not missing:
        return path, ""
    reason = f"{', '.join(missing)} not found in {path}; set SHARED_DIR"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        raise SystemExit(f"{reason} (CI must have the shared data)")
    return path, reason
