"""Helpers for benchmarks: a fresh PostgreSQL database each run, and peak memory."""

from __future__ import annotations

import os
import resource
import sys
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


def fresh_database(name: str) -> str:
    """Drop and create database ``name`` on the server of DATABASE_URL; return its URL.

    Benchmarks never touch the developer's or the tests' databases.
    """
    from psycopg2 import sql

    base = _server_url()
    admin = admin_connection(base)
    with admin.cursor() as cursor:
        cursor.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        cursor.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
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


def stop_server(process) -> None:
    """Stop a server process (gunicorn): terminate, and kill it if it does not end in 20 s."""
    import subprocess

    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far, in MiB (Linux reports KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
