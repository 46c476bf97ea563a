"""PostgreSQL's half of a backup: one snapshot, read by the backup's own counts and by
``pg_dump`` alike, and ``pg_restore`` into an empty database.

The snapshot is a ``REPEATABLE READ, READ ONLY`` transaction on a connection of its own
whose snapshot is exported (``pg_export_snapshot()``) and handed to ``pg_dump
--snapshot``: the row counts and the schema version the manifest records are read in the
very state the dump holds, whatever commits meanwhile. The client programs are PATH's or
those in ``BACKUP_PG_BIN_DIR``; their major version must be at least the server's.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import connection

from annotation.backup.tables import count_rows, latest_applied
from annotation.core.errors import BackupError

DUMP_FILE = "database.dump"
ENGINE = "postgresql"
# Tables of every schema but the server's own.
_USER_TABLES = """
    SELECT n.nspname, c.relname, n.nspname = current_schema()
    FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'p') AND n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%'
    ORDER BY 1, 2
"""
# Connection parameters that are Django's or psycopg's, not libpq's.
_NOT_LIBPQ = {"cursor_factory", "context", "prepare_threshold", "password"}


@dataclass(frozen=True)
class Snapshot:
    """A held snapshot: its id for ``pg_dump --snapshot``, what was read in it."""

    snapshot_id: str
    counts: dict[str, int]
    schema: dict[str, str]
    server_version: str


def tool(name: str) -> tuple[Path, str, int]:
    """``(path, version, major)`` of client program ``name`` (pg_dump, pg_restore); a
    BackupError saying how to get it when it is missing."""
    folder = settings.BACKUP_PG_BIN_DIR
    found = (Path(folder) / name) if folder else (Path(p) if (p := shutil.which(name)) else None)
    if found is None or not found.is_file():
        where = f"in BACKUP_PG_BIN_DIR={folder}" if folder else "on PATH"
        raise BackupError(
            f"{name} is not {where}: install PostgreSQL's client programs of the server's major version "
            f"(Debian: apt-get install postgresql-client) or set BACKUP_PG_BIN_DIR to their folder"
        )
    shown = subprocess.run([str(found), "--version"], capture_output=True, text=True, timeout=30, check=False)
    match = re.search(r"\(PostgreSQL\) (\d+)(\.\d+)?", shown.stdout)
    if shown.returncode != 0 or match is None:
        raise BackupError(f"{found} --version did not say its PostgreSQL version: {shown.stdout or shown.stderr}")
    return found, match.group(0).removeprefix("(PostgreSQL) "), int(match.group(1))


def major(version: str) -> int:
    """The major version of a PostgreSQL version such as ``15.20``."""
    return int(version.split(".")[0])


def _conninfo() -> str:
    """The database as a libpq connection string, without the password (the programs get
    it from PGPASSWORD, out of sight of ``ps``)."""
    params = connection.get_connection_params()
    parts = []
    for key, value in params.items():
        if key in _NOT_LIBPQ or value is None or not isinstance(value, (str, int)):
            continue
        text = str(value).replace("\\", "\\\\").replace("'", "\\'")
        parts.append(f"{key}='{text}'")
    return " ".join(parts)


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    password = connection.settings_dict.get("PASSWORD")
    if password:
        env["PGPASSWORD"] = password
    return env


def _run(command: list[str], what: str) -> None:
    done = subprocess.run(command, env=_environment(), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BackupError(f"{what} failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")


def user_tables(cursor) -> dict[str, bool]:
    """``{name: in the current schema}`` of every table outside the server's schemas; a
    table of another schema is named ``schema.table``."""
    cursor.execute(_USER_TABLES)
    return {(name if current else f"{schema}.{name}"): current for schema, name, current in cursor.fetchall()}


def server_version(cursor) -> str:
    cursor.execute("SHOW server_version")
    return cursor.fetchone()[0].split()[0]


@contextmanager
def snapshot() -> Iterator[Snapshot]:
    """Hold one exported snapshot while the caller dumps it; the counts of every table of
    the current schema and the latest migration per app are read in it."""
    raw = connection.get_new_connection(connection.get_connection_params())
    try:
        raw.set_session(isolation_level="REPEATABLE READ", readonly=True)
        with raw.cursor() as cursor:
            cursor.execute("SELECT pg_export_snapshot()")
            snapshot_id = cursor.fetchone()[0]
            tables = [name for name, current in user_tables(cursor).items() if current]
            yield Snapshot(
                snapshot_id=snapshot_id,
                counts=count_rows(cursor, tables),
                schema=latest_applied(cursor),
                server_version=server_version(cursor),
            )
        raw.rollback()
    finally:
        raw.close()


def dump_tool_check(server: str) -> tuple[Path, str]:
    """pg_dump's path and version; refused when it is older than the server (it then
    refuses the server itself, less clearly)."""
    path, version, tool_major = tool("pg_dump")
    if tool_major < major(server):
        raise BackupError(
            f"pg_dump {version} cannot dump PostgreSQL {server}: install the client programs of major version "
            f"{major(server)} or later and point BACKUP_PG_BIN_DIR at them"
        )
    return path, version


def dump(held: Snapshot, path: Path, pg_dump: Path) -> None:
    """Write the held snapshot to ``path`` in pg_dump's custom format (compressed; pg_restore
    reads it table by table)."""
    _run([str(pg_dump), "--format=custom", f"--snapshot={held.snapshot_id}", f"--file={path}", _conninfo()], "pg_dump")


def restore_tool_check(recorded: dict) -> str:
    """pg_restore's version, refused when it is older than the pg_dump that wrote the
    archive, or when this server is older than the one dumped."""
    _, version, tool_major = tool("pg_restore")
    dumped_with = recorded["dump_tool_version"]
    if tool_major < major(dumped_with):
        raise BackupError(
            f"pg_restore {version} may not read an archive of pg_dump {dumped_with}: install the client programs "
            f"of major version {major(dumped_with)} or later and point BACKUP_PG_BIN_DIR at them"
        )
    with connection.cursor() as cursor:
        here = server_version(cursor)
    if major(here) < major(recorded["server_version"]):
        raise BackupError(
            f"the backup is of PostgreSQL {recorded['server_version']} and this server is PostgreSQL {here}: "
            f"restore onto PostgreSQL {major(recorded['server_version'])} or later"
        )
    return version


def tables_present() -> list[str]:
    with connection.cursor() as cursor:
        return sorted(user_tables(cursor))


def restore(path: Path) -> None:
    """Load the archive into this (empty) database in one transaction: a failure leaves it
    empty. Objects are owned by the restoring user, whatever role owned them before."""
    pg_restore, _, _ = tool("pg_restore")
    _run(
        [
            str(pg_restore),
            "--single-transaction",
            "--exit-on-error",
            "--no-owner",
            "--no-privileges",
            f"--dbname={_conninfo()}",
            str(path),
        ],
        "pg_restore",
    )
    connection.close()
