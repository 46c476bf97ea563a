"""``manifest.json``, the description of a backup that restore checks first: its format
and version, when and by which code it was made, the run mode and database engine with
their versions, the schema version, every file with its size and SHA-256, every table's
row count, and a fingerprint of ``SECRET_KEY``."""

from __future__ import annotations

import json
import os
from pathlib import Path

from django.utils.crypto import salted_hmac

from annotation.core.errors import BackupError

MANIFEST = "manifest.json"
FORMAT_NAME = "cxc-annotate backup"
FORMAT_VERSION = 1
_FINGERPRINT_SALT = "annotation.backup.secret-key-fingerprint"
# What restore reads of a manifest; a manifest without one of them is refused.
_REQUIRED = ("created_at", "database", "schema", "secret_key_fingerprint", "directories", "files", "counts")

CONSISTENCY = (
    "The database is one snapshot: its row counts and schema version here were read in the state the dump holds. "
    "The files were copied after it: what the snapshot refers to was complete when its row committed and is "
    "never changed in place; files made later are copied too and referred to by nothing; files removed before "
    "they were reached are listed in skipped."
)


def secret_key_fingerprint() -> str:
    """An HMAC of a fixed text keyed with SECRET_KEY: equal for equal keys, and telling
    nothing of the key. Opaque ids and export pseudonyms are derived from the key."""
    return salted_hmac(_FINGERPRINT_SALT, "cxc-annotate").hexdigest()[:16]


def manifest_write(folder: Path, payload: dict) -> None:
    """Write ``manifest.json`` into ``folder`` (the last file of a backup) and flush it."""
    path = folder / MANIFEST
    with path.open("w", encoding="utf-8") as handle:
        json.dump(payload, handle, indent=2, ensure_ascii=False)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())


def manifest_read(folder: Path) -> dict:
    """The manifest of the backup in ``folder``; a BackupError naming what is wrong when
    there is none, it cannot be read, or it is of another format or version."""
    path = folder / MANIFEST
    if not folder.is_dir():
        raise BackupError(f"{folder} is not a folder: name the folder `manage.py backup` wrote")
    if not path.is_file():
        unfinished = sorted(folder.parent.glob(f".{folder.name}.*.partial"))
        hint = f" ({unfinished[0].name} beside it is a backup that never finished)" if unfinished else ""
        raise BackupError(f"{path} is missing: {folder} is no complete backup{hint}")
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BackupError(f"{path} cannot be read: {exc}") from exc
    if not isinstance(payload, dict) or payload.get("format") != FORMAT_NAME:
        raise BackupError(f"{path} is not the manifest of a {FORMAT_NAME} (its format: {_format_of(payload)!r})")
    if payload.get("format_version") != FORMAT_VERSION:
        raise BackupError(
            f"{path} is of backup format version {payload.get('format_version')!r}; this code reads version "
            f"{FORMAT_VERSION}: restore with the version of the app that made the backup"
        )
    missing = [key for key in _REQUIRED if key not in payload]
    if missing:
        raise BackupError(f"{path} lacks {', '.join(missing)}")
    return payload


def _format_of(payload) -> object:
    return payload.get("format") if isinstance(payload, dict) else type(payload).__name__
