"""The embedded mode's half of a backup: SQLite's online backup API, from a read
transaction held on a connection of its own, so the copy, its row counts and its schema
version are one state while the app goes on writing (WAL: writers do not wait for a
reader, and a reader keeps its snapshot); restore copies the backup into a new file and
renames it onto ``SQLITE_PATH``."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

from django.db import connection

from annotation.backup.tables import count_rows, latest_applied
from annotation.core.errors import BackupError

DUMP_FILE = "database.sqlite3"
ENGINE = "sqlite"
# Pages copied per step of the online backup; the reader's snapshot holds across steps.
PAGES_PER_STEP = 1024


@dataclass(frozen=True)
class Snapshot:
    """A held read transaction and what was read in it."""

    source: sqlite3.Connection
    counts: dict[str, int]
    schema: dict[str, str]
    server_version: str


def database_path() -> Path:
    """The SQLite file of the default database; an in-memory database has none to copy."""
    name = str(connection.settings_dict["NAME"])
    if name == ":memory:" or "mode=memory" in name:
        raise BackupError(f"the database {name!r} lives in memory: there is no file to back up or restore into")
    return Path(name)


def _tables(cursor) -> list[str]:
    cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
    return [row[0] for row in cursor.fetchall()]


@contextmanager
def snapshot() -> Iterator[Snapshot]:
    """Open a read transaction on the database file and read every table's count and the
    latest migration per app in it; the copy is made from the same transaction."""
    path = database_path()
    if not path.is_file():
        raise BackupError(f"the database file {path} does not exist")
    source = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    try:
        source.execute("BEGIN")
        with closing(source.cursor()) as cursor:
            tables = _tables(cursor)
            held = Snapshot(
                source=source,
                counts=count_rows(cursor, tables),
                schema=latest_applied(cursor),
                server_version=sqlite3.sqlite_version,
            )
        yield held
        source.execute("COMMIT")
    finally:
        source.close()


def dump(held: Snapshot, path: Path, step: Callable[[int, int], None]) -> None:
    """Copy the held snapshot into the new file ``path`` page by page (``step(done,
    total)`` after each step), then make it a single self-contained file (no WAL)."""

    def progress(status: int, remaining: int, total: int) -> None:
        step(total - remaining, total)

    with closing(sqlite3.connect(path)) as target:
        held.source.backup(target, pages=PAGES_PER_STEP, progress=progress)
        target.execute("PRAGMA journal_mode=DELETE")


def tables_present() -> list[str]:
    path = database_path()
    if not path.exists():
        return []
    with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=30)) as target:
        return _tables(target.cursor())


def restore(backup_file: Path) -> None:
    """Copy the backup into a new file beside ``SQLITE_PATH``, check it, and rename it onto
    that path (an empty file there is replaced, with its WAL)."""
    path = database_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    connection.close()
    partial = path.with_name(f".{path.name}.partial")
    partial.unlink(missing_ok=True)
    try:
        backup_uri = f"{backup_file.resolve().as_uri()}?mode=ro"
        with closing(sqlite3.connect(backup_uri, uri=True)) as source, closing(sqlite3.connect(partial)) as target:
            source.backup(target)
            verdict = target.execute("PRAGMA integrity_check").fetchone()[0]
        if verdict != "ok":
            raise BackupError(f"{backup_file} fails SQLite's integrity check: {verdict}")
        for leftover in (path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            leftover.unlink(missing_ok=True)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
