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


def fresh_database(name: str) -> str:
    """Drop and create database ``name`` on the server of DATABASE_URL; return its URL.

    Benchmarks never touch the developer's or the tests' databases.
    """
    import psycopg2
    from psycopg2 import sql

    base = os.environ.get("DATABASE_URL") or ""
    if not base.startswith("postgres"):
        raise SystemExit("benchmarks need PostgreSQL: set DATABASE_URL (make bench-* sets it)")
    parts = urlparse(base)
    admin = psycopg2.connect(
        host=parts.hostname,
        port=parts.port or 5432,
        user=parts.username or "postgres",
        password=parts.password,
        dbname="postgres",
    )
    admin.autocommit = True
    with admin.cursor() as cursor:
        cursor.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        cursor.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    admin.close()
    return urlunparse(parts._replace(path=f"/{name}"))


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


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far, in MiB (Linux reports KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
