"""Decide where the tests run and print shell exports for scripts/test.

PostgreSQL and Redis at TEST_DATABASE_URL / TEST_REDIS_URL (defaults: this machine's
127.0.0.1 services). When one does not answer:
- with REQUIRE_SERVICES=1 (CI) the run fails at once, naming the service;
- otherwise the tests run on the embedded SQLite mode and every test that needs the
  missing service is skipped with that reason, and this is printed loudly.
"""

import os
import shlex
import socket
import sys
from urllib.parse import urlparse

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/cxc_annotate"
DEFAULT_REDIS = "redis://127.0.0.1:6379/15"


def reachable(url: str, default_port: int) -> str:
    """Return '' if something accepts connections at the URL's host:port, else why not."""
    parts = urlparse(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or default_port
    try:
        with socket.create_connection((host, port), timeout=2):
            return ""
    except OSError as exc:
        return f"{host}:{port} ({exc.strerror or exc})"


def admin_connection(url: str):
    """An autocommit connection to the server's ``postgres`` maintenance database, for
    creating and dropping databases (they cannot be changed from inside themselves)."""
    import psycopg2

    parts = urlparse(url)
    admin = psycopg2.connect(
        host=parts.hostname,
        port=parts.port or 5432,
        user=parts.username or "postgres",
        password=parts.password,
        dbname="postgres",
    )
    admin.autocommit = True
    return admin


def ensure_database(url: str) -> None:
    """Create the named database if it is missing (pytest makes its own test_ copy of it,
    but makemigrations --check and the benchmarks connect to the named one)."""
    from psycopg2 import sql

    name = urlparse(url).path.lstrip("/")
    admin = admin_connection(url)
    with admin.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
        if cursor.fetchone() is None:
            cursor.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    admin.close()


def main() -> int:
    db_url = os.environ.get("TEST_DATABASE_URL", DEFAULT_DB)
    redis_url = os.environ.get("TEST_REDIS_URL", DEFAULT_REDIS)
    required = os.environ.get("REQUIRE_SERVICES", "") == "1"
    db_down = reachable(db_url, 5432)
    redis_down = reachable(redis_url, 6379)
    missing = []
    if db_down:
        missing.append(f"PostgreSQL at {db_down}")
    if redis_down:
        missing.append(f"Redis at {redis_down}")
    if missing and required:
        print(f"REQUIRE_SERVICES=1 but not reachable: {'; '.join(missing)}", file=sys.stderr)
        return 1
    exports = {
        "SECRET_KEY": "tests-only-secret-key",
        "CELERY_TASK_ALWAYS_EAGER": "true",
        "TEST_REDIS_URL": redis_url,
        "REDIS_URL": redis_url,
    }
    if db_down:
        exports.update({"RUN_MODE": "embedded", "DATABASE_URL": "", "TESTS_WITHOUT_POSTGRES": db_down})
        print(
            f"*** PostgreSQL not reachable at {db_down}: tests run on SQLite and PostgreSQL tests are SKIPPED",
            file=sys.stderr,
        )
    else:
        ensure_database(db_url)
        exports.update({"RUN_MODE": "services", "DATABASE_URL": db_url})
    if redis_down:
        exports["TESTS_WITHOUT_REDIS"] = redis_down
        print(f"*** Redis not reachable at {redis_down}: Celery worker tests are SKIPPED", file=sys.stderr)
    for name, value in exports.items():
        print(f"export {name}={shlex.quote(value)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
