"""Store uploaded files under DATA_DIR/uploads so a background job can read them by path.

Each file gets a folder of its own (a random name) and keeps its own file name, which
the errors about it then name.
"""

import shutil
import uuid
from pathlib import Path

from django.conf import settings

from annotation.errors import DomainError


def _new_folder() -> Path:
    folder = _uploads_root() / uuid.uuid4().hex
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _uploads_root() -> Path:
    return Path(settings.DATA_DIR) / "uploads"


def upload_store(uploaded_file, *, suffix_hint: str = "") -> str:
    """Store a file sent with a request (admin form, API). Returns its stored path.
    Raises DomainError for a file name longer than UPLOAD_MAX_FILENAME_CHARS."""
    name = Path(uploaded_file.name or f"upload{suffix_hint}").name
    _check_file_name(name)
    target = _new_folder() / name
    with target.open("wb") as out:
        for chunk in uploaded_file.chunks():
            out.write(chunk)
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


def upload_store_path(path: str | Path) -> str:
    """Store a copy of a local file (the CLI), so a worker elsewhere can read it and the
    caller's working folder does not matter. Raises DomainError naming a missing file."""
    source = Path(path).expanduser().resolve()
    if not source.is_file():
        raise DomainError(f"{path}: no such file")
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
    stored = Path(path).resolve()
    root = _uploads_root().resolve()
    if stored.parent.parent == root:
        shutil.rmtree(stored.parent, ignore_errors=True)
