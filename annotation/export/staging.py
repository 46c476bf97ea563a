"""The staging folder of an export: files are written into a hidden folder beside the
destination, renamed onto it only when everything is complete, so a failed export leaves
nothing under the final names."""

from __future__ import annotations

import glob
import os
import shutil
import tempfile
from pathlib import Path

from annotation.export.plan import destination_check


def staging_prefix(out: Path, job_id: int | None) -> str:
    # The job id in the name lets a dead job's folder be told from that of a job writing
    # to the same destination now.
    return f".{out.name}." if job_id is None else f".{out.name}.job{job_id}."


def staging_create(out: Path, job_id: int | None) -> Path:
    """A new, empty staging folder ``.<name>.[job<id>.]<random>.partial`` beside ``out``
    (whose parent must exist), readable as the final folder will be."""
    staging = Path(tempfile.mkdtemp(prefix=staging_prefix(out, job_id), suffix=".partial", dir=out.parent))
    try:
        os.chmod(staging, 0o755)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return staging


def export_staging_remove(*, out_dir: str | Path, job_id: int) -> list[Path]:
    """Remove the staging folders export job ``job_id`` left half-written in ``out_dir``'s
    parent when its process died (the final folder only ever appears complete).
    Returns them."""
    out = Path(out_dir).expanduser().resolve()
    if not out.parent.is_dir():
        return []
    left = sorted(out.parent.glob(f"{glob.escape(staging_prefix(out, job_id))}*.partial"))
    for folder in left:
        shutil.rmtree(folder, ignore_errors=True)
    return left


def publish(staging: Path, out: Path, overwrite: bool) -> None:
    """Move the finished staging folder onto ``out`` (a rename: all files appear at once)."""
    destination_check(out, overwrite)
    if not out.exists():
        staging.rename(out)
        return
    if not any(out.iterdir()):
        out.rmdir()
        staging.rename(out)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.parent))
    old.rmdir()
    out.rename(old)
    try:
        staging.rename(out)
    except BaseException:
        old.rename(out)
        raise
    shutil.rmtree(old, ignore_errors=True)
