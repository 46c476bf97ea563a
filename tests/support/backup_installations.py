"""Installations of the app for the backup tests, each in processes of its own: a new
database (a PostgreSQL database made for it on the tests' server, or a new SQLite file)
and its own DATA_DIR and EXPORT_DIR, driven through ``manage.py`` as an operator does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse, urlunparse

from tests.conftest import REPO_DIR

ENGINES = ("postgresql", "sqlite")
SECRET_KEY = "backup-tests-secret-key"
_OWN = ("DATABASE_URL", "RUN_MODE", "SQLITE_PATH", "VAR_DIR", "DATA_DIR", "EXPORT_DIR", "SECRET_KEY")


@dataclass
class Installation:
    engine: str
    folder: Path
    secret_key: str = SECRET_KEY
    database: str = ""
    env: dict = field(default_factory=dict)

    @property
    def data_dir(self) -> Path:
        return self.folder / "data"

    @property
    def export_dir(self) -> Path:
        return self.folder / "exports"

    def manage(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO_DIR,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def result(self, code: str, timeout: float = 600) -> dict:
        """Run ``code`` in ``manage.py shell``; the dict it printed with
        ``tests.support.backup_campaign.printed``."""
        done = self.manage("shell", "-v", "0", "-c", code, timeout=timeout)
        assert done.returncode == 0, done.stderr[-4000:]
        (line,) = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
        return json.loads(line.removeprefix("RESULT "))

    def sql(self, statement: str) -> None:
        """Run one statement on the installation's database, outside the app."""
        if self.engine == "sqlite":
            import sqlite3

            with sqlite3.connect(self.folder / "db.sqlite3") as db:
                db.execute(statement)
            return
        import psycopg2

        with psycopg2.connect(self.env["DATABASE_URL"]) as db, db.cursor() as cursor:
            cursor.execute(statement)

    def tables(self) -> list[str]:
        """The tables of the installation's database, read outside the app."""
        if self.engine == "sqlite":
            import sqlite3

            path = self.folder / "db.sqlite3"
            if not path.exists():
                return []
            with sqlite3.connect(path) as db:
                return [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        import psycopg2

        with psycopg2.connect(self.env["DATABASE_URL"]) as db, db.cursor() as cursor:
            cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
            return [row[0] for row in cursor.fetchall()]

    def files(self) -> list[str]:
        """The files in the installation's DATA_DIR and EXPORT_DIR."""
        folders = (self.data_dir, self.export_dir)
        return sorted(str(path) for folder in folders for path in folder.rglob("*") if path.is_file())

    def drop(self) -> None:
        if self.database:
            _admin_execute(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')


def _server_url() -> str:
    return os.environ["DATABASE_URL"]


def _admin_execute(statement: str) -> None:
    from scripts.probe_services import admin_connection

    admin = admin_connection(_server_url())
    try:
        with admin.cursor() as cursor:
            cursor.execute(statement)
    finally:
        admin.close()


def installation(engine: str, folder: Path, *, secret_key: str = SECRET_KEY) -> Installation:
    """A new, empty installation under ``folder``: no table in its database, no file in its
    folders (``migrate`` it to use it as a live one)."""
    folder.mkdir(parents=True, exist_ok=True)
    env = {name: value for name, value in os.environ.items() if name not in _OWN}
    env |= {
        "SECRET_KEY": secret_key,
        "CELERY_TASK_ALWAYS_EAGER": "true",
        "VAR_DIR": str(folder / "var"),
        "DATA_DIR": str(folder / "data"),
        "EXPORT_DIR": str(folder / "exports"),
    }
    made = Installation(engine=engine, folder=folder, secret_key=secret_key, env=env)
    if engine == "sqlite":
        env |= {"RUN_MODE": "embedded", "SQLITE_PATH": str(folder / "db.sqlite3")}
        return made
    base = urlparse(_server_url())
    made.database = f"{base.path.lstrip('/')}_backup_{uuid.uuid4().hex[:8]}"
    _admin_execute(f'CREATE DATABASE "{made.database}"')
    env |= {"RUN_MODE": "services", "DATABASE_URL": urlunparse(base._replace(path=f"/{made.database}"))}
    return made
