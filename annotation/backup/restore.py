"""Restoring a backup into an empty installation. Everything is checked before anything is
written: the manifest (present, readable, this format), the database engine, the schema
version against this code's migrations, ``SECRET_KEY``, that the database has no table,
that no file would be overwritten with other content, the client programs' versions, and
every file's checksum. Then the database (one transaction on PostgreSQL; a new file
renamed into place on SQLite), the files (each renamed into place once complete and
checked), the stored paths when the folders moved, and every table's row count against
the manifest's. A restore that failed part way can be run again: the database is still
empty, and files already in place with the backup's content are kept."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from django.db import connection

from annotation.backup import postgres, sqlite
from annotation.backup.files import (
    file_problems,
    files_restore,
    installation_entries,
    installation_folders,
    restore_conflicts,
)
from annotation.backup.manifest import manifest_read, secret_key_fingerprint
from annotation.backup.relocate import paths_outside, paths_relocate
from annotation.backup.tables import code_schema, count_differences, count_rows, schema_differences
from annotation.core.errors import BackupError

Report = Callable[[str, str], None]
_ENGINES = {"postgresql": postgres, "sqlite": sqlite}
_SHOWN = 8


def _listed(items: list[str]) -> str:
    more = f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else ""
    return "; ".join(items[:_SHOWN]) + more


def _engine(manifest: dict):
    recorded = manifest["database"].get("engine")
    here = connection.vendor
    if recorded != here:
        raise BackupError(
            f"the backup is of a {recorded} database and this installation runs on {here}: restore it where "
            f"RUN_MODE gives {recorded} ({'services' if recorded == 'postgresql' else 'embedded'} mode)"
        )
    return _ENGINES[here]


def restore_check(folder: Path, manifest: dict, *, accept_new_secret_key: bool) -> None:
    """Every refusal, before anything is written (see the module's docstring)."""
    engine = _engine(manifest)
    differences = schema_differences(manifest["schema"], code_schema())
    if differences:
        raise BackupError(
            "the backup's schema version is not this code's: " + _listed(differences) + ". Restore with the "
            "version of the app that made the backup (its code_version is in the manifest), then upgrade"
        )
    if manifest["secret_key_fingerprint"] != secret_key_fingerprint() and not accept_new_secret_key:
        raise BackupError(
            "the backup was made with another SECRET_KEY (fingerprint "
            f"{manifest['secret_key_fingerprint']}, this installation's {secret_key_fingerprint()}): raters' "
            "opaque ids and the export pseudonyms derive from it. Set the SECRET_KEY of the installation that "
            "made the backup, or pass --accept-new-secret-key to restore with this one"
        )
    tables = engine.tables_present()
    if tables:
        raise BackupError(
            f"the database is not empty: it has {len(tables)} tables ({_listed(tables)}). Restore into a new, "
            "empty database (PostgreSQL: dropdb and createdb; SQLite: a SQLITE_PATH with no file yet)"
        )
    conflicts = restore_conflicts(installation_entries(manifest["files"]))
    if conflicts:
        raise BackupError(f"restoring would overwrite files with other content: {_listed(conflicts)}")
    if engine is postgres:
        postgres.restore_tool_check(manifest["database"])
    problems = file_problems(folder, manifest["files"])
    if problems:
        raise BackupError(f"the backup in {folder} does not match its manifest: {_listed(problems)}")


def backup_restore(source: str | Path, report: Report, *, accept_new_secret_key: bool = False) -> dict:
    """Restore the backup in folder ``source`` into this installation's empty database and
    folders; returns its manifest. Raises BackupError naming the first refusal."""
    folder = Path(source).expanduser().absolute()
    manifest = manifest_read(folder)
    restore_check(folder, manifest, accept_new_secret_key=accept_new_secret_key)
    report("checked", f"{folder}: manifest, schema, empty database and {len(manifest['files'])} checksums checked")
    engine = _ENGINES[connection.vendor]
    engine.restore(folder / manifest["database"]["file"])
    report("database", f"database restored from {manifest['database']['file']}")
    written = files_restore(folder, installation_entries(manifest["files"]), lambda name: None)
    report("files", f"{written} files put into DATA_DIR and EXPORT_DIR")
    moved = paths_relocate(manifest["directories"], installation_folders())
    if moved:
        report("paths", f"stored paths of {moved} rows rewritten to this installation's DATA_DIR and EXPORT_DIR")
    _counts_check(manifest["counts"])
    outside = paths_outside(manifest["directories"])
    if outside:
        report("warning", f"files the rows name but the backup does not hold (bring them): {_listed(outside)}")
    report("done", f"restored: {len(manifest['counts'])} tables with the backup's row counts")
    return manifest


def _counts_check(recorded: dict[str, int]) -> None:
    with connection.cursor() as cursor:
        found = count_rows(cursor, list(connection.introspection.table_names(cursor)))
    differences = count_differences(recorded, found)
    if differences:
        raise BackupError(f"the restored database's row counts differ from the backup's: {_listed(differences)}")
