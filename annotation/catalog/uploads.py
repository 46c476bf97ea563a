"""Store uploaded files under DATA_DIR/uploads so a background job can read them by path.

Each file gets a folder of its own (a random name) and keeps its own file name, which
the errors about it then name. Every kind of upload has a byte limit (a setting); a
file over it is refused while it streams in and nothing of it is kept. The files of a
run are removed when it ends (``annotation.catalog.upload_cleanup``).
"""

from __future__ import annotations

import re
import shutil
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import TemporaryUploadedFile

from annotation.core.errors import DomainError, UploadTooLarge

# The folder names _new_folder makes; the prune never touches anything else.
FOLDER_NAME = re.compile(r"^[0-9a-f]{32}$")


@dataclass(frozen=True)
class UploadKind:
    """One kind of uploaded file and the setting that bounds its size in bytes."""

    noun: str
    setting: str

    @property
    def limit(self) -> int:
        return getattr(settings, self.setting)

    def refusal(self, name: str, size: int | None = None) -> UploadTooLarge:
        """The error for a file of this kind over the limit (``size``: when known)."""
        limit = self.limit
        what = f"is {human_bytes(size)}, more than" if size is not None else "is larger than"
        return UploadTooLarge(
            f"{name} {what} the {human_bytes(limit)} allowed for {self.noun} uploads (setting {self.setting}={limit})"
        )


KARPATHY = UploadKind("Karpathy JSON", "UPLOAD_MAX_KARPATHY_BYTES")
# The .npy file and its ids file alike.
EMBEDDINGS = UploadKind("embeddings", "UPLOAD_MAX_EMBEDDINGS_BYTES")
PAIR_LIST = UploadKind("pair list", "UPLOAD_MAX_PAIRLIST_BYTES")
OBJECTS = UploadKind("COCO instances JSON", "UPLOAD_MAX_OBJECTS_BYTES")


def human_bytes(size: int) -> str:
    for unit, factor in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= factor:
            return f"{size / factor:.4g} {unit}"
    return f"{size} bytes"


def _new_folder() -> Path:
    folder = uploads_root() / uuid.uuid4().hex
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def uploads_root() -> Path:
    return Path(settings.DATA_DIR) / "uploads"


def upload_paths(run) -> list[str]:
    """The stored uploads a background run (job or batch) reads; never a file a CLI user
    named, which is not ours to remove."""
    return [path for path in run.input_paths() if upload_is_stored(path)]


def upload_is_stored(path: str | Path) -> bool:
    """Whether a path is a file this module stored (not a file a CLI user named)."""
    stored = Path(path).resolve()
    return stored.parent.parent == uploads_root().resolve() and bool(FOLDER_NAME.match(stored.parent.name))


def upload_store(uploaded_file, *, kind: UploadKind, suffix_hint: str = "") -> str:
    """Store a file sent with a request (admin form, API). Returns its stored path.

    Raises UploadTooLarge for a file over the kind's limit, DomainError for a file name
    longer than UPLOAD_MAX_FILENAME_CHARS; nothing is left behind then (nor after any
    other error while writing)."""
    name = Path(uploaded_file.name or f"upload{suffix_hint}").name
    _check_file_name(name)
    if uploaded_file.size is not None and uploaded_file.size > kind.limit:
        raise kind.refusal(name, uploaded_file.size)
    folder = _new_folder()
    target = folder / name
    try:
        if isinstance(uploaded_file, TemporaryUploadedFile):
            # Already on disk in full (the upload handler bounded it): a rename, where
            # the temporary folder is on the same file system, instead of a second copy.
            shutil.move(uploaded_file.temporary_file_path(), target)
            # Temporary files are private to this process; the worker reads this one.
            if settings.FILE_UPLOAD_PERMISSIONS is not None:
                target.chmod(settings.FILE_UPLOAD_PERMISSIONS)
        else:
            _write_bounded(uploaded_file, target, kind=kind, name=name)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return str(target)


def _check_file_name(name: str) -> None:
    # Django cuts uploaded names to 255 characters, but file systems count bytes: 255
    # characters outside ASCII do not fit, and writing the file answered a 500.
    limit = settings.UPLOAD_MAX_FILENAME_CHARS
    if len(name) > limit or len(name.encode()) > 255:
        raise DomainError(
            f"uploaded file name {name[:40]!r}... is {len(name):,} characters ({len(name.encode()):,} bytes); "
            f"the limit is UPLOAD_MAX_FILENAME_CHARS={limit} characters and 255 bytes"
        )


def _write_bounded(uploaded_file, target: Path, *, kind: UploadKind, name: str) -> None:
    written = 0
    with target.open("wb") as out:
        for chunk in uploaded_file.chunks():
            written += len(chunk)
            if written > kind.limit:
                # The declared size was wrong; stop at the limit rather than trust it.
                raise kind.refusal(name)
            out.write(chunk)


def upload_store_all(files: Mapping[str, tuple[object, UploadKind, str]]) -> dict[str, str]:
    """Store several files of one request: {key: (uploaded file, kind, suffix hint)} ->
    {key: stored path}. All or none: when one is refused the others are removed, and the
    DomainError's ``field`` is the refused file's key."""
    stored: dict[str, str] = {}
    key = None
    try:
        for key, (uploaded_file, kind, suffix_hint) in files.items():
            stored[key] = upload_store(uploaded_file, kind=kind, suffix_hint=suffix_hint)
    except BaseException as exc:
        for path in stored.values():
            upload_discard(path)
        if isinstance(exc, DomainError):
            exc.field = key
        raise
    return stored


def upload_check_path(path: str | Path, *, kind: UploadKind) -> None:
    """Refuse a local file (the CLI) over the kind's limit, as an upload would be. A
    missing file is left to the caller, whose own message names it."""
    source = Path(path).expanduser()
    if source.is_file() and source.stat().st_size > kind.limit:
        raise kind.refusal(str(path), source.stat().st_size)


def upload_store_path(path: str | Path, *, kind: UploadKind) -> str:
    """Store a copy of a local file (the CLI), so a worker elsewhere can read it and the
    caller's working folder does not matter. Raises DomainError naming a missing file,
    UploadTooLarge (before copying) for a file over the kind's limit."""
    source = Path(path).expanduser().resolve()
    if not source.is_file():
        raise DomainError(f"{path}: no such file")
    upload_check_path(source, kind=kind)
    folder = _new_folder()
    target = folder / source.name
    try:
        shutil.copyfile(source, target)
    except OSError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise DomainError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    return str(target)


def upload_discard(path: str | Path) -> None:
    """Remove a stored upload and its folder; a path outside the upload folder (a file
    a test or a script passed directly) is left alone."""
    if upload_is_stored(path):
        shutil.rmtree(Path(path).resolve().parent, ignore_errors=True)
