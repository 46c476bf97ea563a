"""Making a backup: the database's snapshot and dump, then the files, then the manifest,
all in a hidden ``.<name>.<random>.partial`` folder beside the destination that is
renamed onto it once complete: a backup that crashed never looks like one."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import connection
from django.utils import timezone

from annotation.backup import postgres, sqlite
from annotation.backup.files import file_checksum, files_copy, installation_folders
from annotation.backup.manifest import (
    CONSISTENCY,
    FORMAT_NAME,
    FORMAT_VERSION,
    manifest_write,
    secret_key_fingerprint,
)
from annotation.backup.tables import code_schema, schema_differences
from annotation.core.errors import BackupError
from annotation.export.manifest import code_version

# report(stage, message): stages "snapshot" (the database's state is fixed; what commits
# from now on is not in the backup), "copying" (SQLite: pages copied so far, of all),
# "database", "files", "warning", "done".
Report = Callable[[str, str], None]


def _destination_check(destination: Path) -> None:
    if destination.exists() and not destination.is_dir():
        raise BackupError(f"{destination} exists and is not a folder")
    if destination.is_dir() and any(destination.iterdir()):
        raise BackupError(f"{destination} is not empty: a backup goes into a new or empty folder")
    if not destination.parent.is_dir():
        raise BackupError(f"{destination.parent} does not exist")


def backup_create(destination: str | Path, report: Report) -> dict:
    """Write one consistent backup of the installation into the new folder
    ``destination``; returns its manifest. Raises BackupError naming the problem, and
    then leaves nothing behind."""
    destination = Path(destination).expanduser().absolute()
    _destination_check(destination)
    staging = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", suffix=".partial", dir=destination.parent))
    try:
        database = _database_dump(staging, report)
        copied, skipped = files_copy(staging, lambda name: None)
        report("files", f"copied {len(copied)} files of DATA_DIR and EXPORT_DIR ({len(skipped)} gone meanwhile)")
        manifest = {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "created_at": timezone.now().isoformat(),
            "code_version": code_version(),
            "run_mode": settings.RUN_MODE,
            "database": database["database"],
            "schema": database["schema"],
            "secret_key_fingerprint": secret_key_fingerprint(),
            "directories": {sub: str(folder) for sub, folder in installation_folders().items()},
            "consistency": CONSISTENCY,
            "counts": database["counts"],
            "files": [database["file"], *(entry.entry() for entry in copied)],
            "skipped": skipped,
        }
        manifest_write(staging, manifest)
        if destination.is_dir():
            destination.rmdir()
        staging.rename(destination)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    report("done", f"backup written to {destination}")
    return manifest


def _database_dump(staging: Path, report: Report) -> dict:
    """Dump the database into ``staging`` from one snapshot; the manifest's database part,
    schema, counts and the dump's file entry."""
    vendor = connection.vendor
    if vendor == "postgresql":
        with postgres.snapshot() as held:
            pg_dump, dump_version = postgres.dump_tool_check(held.server_version)
            _snapshot_taken(held, report)
            postgres.dump(held, staging / postgres.DUMP_FILE, pg_dump)
        name, details = postgres.DUMP_FILE, {"engine": postgres.ENGINE, "dump_format": "pg_dump custom"}
        details |= {"server_version": held.server_version, "dump_tool_version": dump_version}
    elif vendor == "sqlite":
        with sqlite.snapshot() as held:
            _snapshot_taken(held, report)
            sqlite.dump(held, staging / sqlite.DUMP_FILE, lambda done, total: report("copying", f"{done}/{total}"))
        name, details = sqlite.DUMP_FILE, {"engine": sqlite.ENGINE, "dump_format": "SQLite database file"}
        details |= {"server_version": held.server_version, "dump_tool_version": f"SQLite {held.server_version}"}
    else:
        raise BackupError(f"no backup for a {vendor} database: the app runs on PostgreSQL or SQLite")
    size, sha = file_checksum(staging / name)
    report("database", f"database written to {name} ({size:,} bytes)")
    return {
        "database": {**details, "file": name},
        "schema": held.schema,
        "counts": held.counts,
        "file": {"name": name, "bytes": size, "sha256": sha},
    }


def _snapshot_taken(held, report: Report) -> None:
    rows = sum(held.counts.values())
    report("snapshot", f"database snapshot taken: {len(held.counts)} tables, {rows:,} rows")
    differences = schema_differences(held.schema, code_schema())
    if differences:
        report(
            "warning",
            "the database's migrations differ from this code's, and a restore needs code whose migrations match: "
            + "; ".join(differences),
        )
