"""The files of a backup: what of ``DATA_DIR`` and ``EXPORT_DIR`` is copied, copying with
checksums, checking a backup's files against its manifest, and putting them back.

Files are copied after the database's snapshot. What the snapshot refers to was complete
before its row committed and is not changed afterwards: an embedding space's files are
written before its row, an export appears whole by a rename of its staging folder. A
file made after the snapshot is copied too and is referred to by nothing once restored;
one removed before it was reached (an upload whose run ended) is listed in the
manifest's ``skipped``; one that changes while it is copied is copied again, and the
backup fails naming it if it changes again. Left out: hidden ``*.partial`` and ``*.old``
folders (exports being written or replaced) and ``DATA_DIR/sampling/runs`` (the working
folders of running sampling batches, rebuilt when a batch runs).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from annotation.core.errors import BackupError
from annotation.export.manifest import sha256_file

# Subfolders of the backup, one per folder of the installation.
DATA, EXPORTS = "data", "exports"
_SKIPPED_UNDER = {DATA: ("sampling/runs",), EXPORTS: ()}
_BLOCK = 1 << 20


@dataclass(frozen=True)
class Copied:
    """One file as the manifest lists it: its path in the backup, bytes and SHA-256."""

    name: str
    bytes: int
    sha256: str

    def entry(self) -> dict:
        return {"name": self.name, "bytes": self.bytes, "sha256": self.sha256}


def installation_folders() -> dict[str, Path]:
    """``{backup subfolder: the installation's folder}``, resolved."""
    return {DATA: Path(settings.DATA_DIR).resolve(), EXPORTS: Path(settings.EXPORT_DIR).resolve()}


def _walk(root: Path, skipped: tuple[str, ...], others: list[Path]) -> Iterator[Path]:
    """Files under ``root`` in a stable order, relative to it, leaving out the hidden
    staging folders, ``skipped`` subtrees and the other backed-up folders nested in it."""
    if not root.is_dir():
        return
    for folder, subfolders, files in os.walk(root):
        here = Path(folder)
        subfolders[:] = sorted(
            name
            for name in subfolders
            if not (name.startswith(".") and name.endswith((".partial", ".old")))
            and (here / name).relative_to(root).as_posix() not in skipped
            and (here / name) not in others
        )
        for name in sorted(files):
            yield (here / name).relative_to(root)


def copy_with_checksum(source: Path, target: Path) -> tuple[int, str]:
    """Copy ``source`` to ``target`` (created), hashing as it goes; ``(bytes, sha256)``.
    Raises FileNotFoundError when the source is gone."""
    digest = hashlib.sha256()
    size = 0
    with source.open("rb") as reading, target.open("wb") as writing:
        while chunk := reading.read(_BLOCK):
            digest.update(chunk)
            writing.write(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def _stable_copy(source: Path, target: Path) -> tuple[int, str]:
    """Copy a file that must not change meanwhile; a second try, then a BackupError."""
    for _ in range(2):
        before = source.stat()
        size, sha = copy_with_checksum(source, target)
        after = source.stat()
        if before.st_mtime_ns == after.st_mtime_ns and before.st_size == after.st_size == size:
            return size, sha
    raise BackupError(f"{source} changed while it was copied, twice: nothing writes it in place, so look for what does")


def files_copy(staging: Path, step: Callable[[str], None]) -> tuple[list[Copied], list[dict]]:
    """Copy the installation's folders into ``staging/data`` and ``staging/exports``.
    Returns the files copied and the ones skipped (gone before they were reached)."""
    folders = installation_folders()
    copied: list[Copied] = []
    skipped: list[dict] = []
    for sub, root in folders.items():
        others = [other for other in folders.values() if other != root and other.is_relative_to(root)]
        for relative in _walk(root, _SKIPPED_UNDER[sub], others):
            name = f"{sub}/{relative.as_posix()}"
            target = staging / name
            target.parent.mkdir(parents=True, exist_ok=True)
            source = root / relative
            if not source.is_file():
                reason = "removed while the backup ran" if not source.exists() else "not a regular file"
                skipped.append({"name": name, "reason": reason})
                continue
            try:
                size, sha = _stable_copy(source, target)
            except FileNotFoundError:
                target.unlink(missing_ok=True)
                skipped.append({"name": name, "reason": "removed while the backup ran"})
                continue
            except OSError as exc:
                raise BackupError(f"{source} cannot be copied: {exc}") from exc
            copied.append(Copied(name, size, sha))
            step(name)
    return copied, skipped


def file_problems(folder: Path, entries: list[dict]) -> list[str]:
    """Each file of the manifest that is missing from ``folder`` or whose size or SHA-256
    differs from the manifest's."""
    problems = []
    for entry in entries:
        path = folder / entry["name"]
        if not path.is_file():
            problems.append(f"{entry['name']} is missing")
            continue
        size, sha = file_checksum(path)
        if (size, sha) != (entry["bytes"], entry["sha256"]):
            problems.append(
                f"{entry['name']} has {size} bytes, SHA-256 {sha}; the manifest says {entry['bytes']} bytes, "
                f"SHA-256 {entry['sha256']}"
            )
    return problems


def file_checksum(path: Path) -> tuple[int, str]:
    """``(bytes, sha256)`` of a file, read in blocks."""
    return path.stat().st_size, sha256_file(path)


def installation_entries(entries: list[dict]) -> list[dict]:
    """The manifest's entries of files that go back into ``DATA_DIR`` and ``EXPORT_DIR``."""
    return [entry for entry in entries if entry["name"].startswith((f"{DATA}/", f"{EXPORTS}/"))]


def _destination(name: str) -> Path:
    sub, _, relative = name.partition("/")
    return installation_folders()[sub] / relative


def restore_conflicts(entries: list[dict]) -> list[str]:
    """The installation's files that a restore would overwrite with other content (a file
    already there with the backup's content is taken as restored: a restore run again
    after a failure goes on)."""
    conflicts = []
    for entry in entries:
        destination = _destination(entry["name"])
        if destination.exists() and (
            not destination.is_file() or file_checksum(destination) != (entry["bytes"], entry["sha256"])
        ):
            conflicts.append(str(destination))
    return conflicts


def files_restore(folder: Path, entries: list[dict], step: Callable[[str], None]) -> int:
    """Put the backup's files into ``DATA_DIR`` and ``EXPORT_DIR``, each written beside its
    place and renamed onto it once complete and checked. Returns how many were written."""
    written = 0
    for entry in entries:
        destination = _destination(entry["name"])
        if destination.is_file():
            continue  # the same content: restore_conflicts checked it
        destination.parent.mkdir(parents=True, exist_ok=True)
        partial = destination.with_name(f".{destination.name}.partial")
        try:
            if copy_with_checksum(folder / entry["name"], partial) != (entry["bytes"], entry["sha256"]):
                raise BackupError(f"{entry['name']} changed in the backup while it was restored")
            os.replace(partial, destination)
        finally:
            partial.unlink(missing_ok=True)
        written += 1
        step(entry["name"])
    return written
