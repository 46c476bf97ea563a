"""The parts of a backup on their own: reading a manifest, the schema and count
comparisons, which files are copied and how they are checked and put back, stored paths
moved to new folders, the client programs' checks, and a backup that fails part way."""

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest

from annotation.backup import postgres
from annotation.backup.files import file_problems, files_copy, files_restore, restore_conflicts
from annotation.backup.manifest import FORMAT_NAME, FORMAT_VERSION, manifest_read
from annotation.backup.relocate import _moved
from annotation.backup.tables import count_differences, schema_differences
from annotation.core.errors import BackupError


def write_manifest(folder: Path, payload) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "manifest.json").write_text(json.dumps(payload))
    return folder


def complete_manifest(**changes) -> dict:
    keys = ("created_at", "database", "schema", "secret_key_fingerprint", "directories", "files", "counts")
    return {"format": FORMAT_NAME, "format_version": FORMAT_VERSION, **{key: {} for key in keys}, **changes}


# --- the manifest -------------------------------------------------------------------------


def test_a_missing_manifest_is_refused_and_an_unfinished_backup_beside_it_named(tmp_path):
    (tmp_path / "nightly").mkdir()
    (tmp_path / ".nightly.x1y2.partial").mkdir()
    with pytest.raises(BackupError, match=r"nightly/manifest.json is missing: .* \(\.nightly\.x1y2\.partial beside"):
        manifest_read(tmp_path / "nightly")


def test_a_manifest_that_is_no_json_is_refused(tmp_path):
    (tmp_path / "manifest.json").write_text('{"format": "cxc-annotate backup", ')
    with pytest.raises(BackupError, match="manifest.json cannot be read: Expecting"):
        manifest_read(tmp_path)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"format": "cxc-annotate export", "format_version": 1}, "not the manifest of a cxc-annotate backup"),
        ([1, 2], r"its format: 'list'"),
        (complete_manifest(format_version=2), "backup format version 2; this code reads version 1"),
    ],
)
def test_a_manifest_of_another_format_or_version_is_refused(tmp_path, payload, message):
    folder = write_manifest(tmp_path / "b", payload)
    assert manifest_read(write_manifest(tmp_path / "good", complete_manifest()))["format_version"] == 1
    with pytest.raises(BackupError, match=message):
        manifest_read(folder)


def test_a_manifest_lacking_a_part_is_refused_naming_it(tmp_path):
    payload = complete_manifest()
    del payload["counts"], payload["schema"]
    with pytest.raises(BackupError, match="lacks schema, counts"):
        manifest_read(write_manifest(tmp_path / "b", payload))


# --- schema and counts --------------------------------------------------------------------


def test_schema_differences_name_both_sides_per_app():
    recorded = {"annotation": "0039_x", "sampling": "0010_y", "old_app": "0001_initial"}
    code = {"annotation": "0040_z", "sampling": "0010_y", "new_app": "0002_w"}
    assert schema_differences(recorded, code) == [
        "annotation: the backup's 0039_x, this code's 0040_z",
        "new_app: the backup's -, this code's 0002_w",
        "old_app: the backup's 0001_initial, this code's -",
    ]
    assert schema_differences(code, code) == []


def test_count_differences_name_each_table():
    assert count_differences({"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 5, "d": 0}) == [
        "b: 2 in the backup, 5 restored",
        "c: 3 in the backup, no such table restored",
        "d: no such table in the backup, 0 restored",
    ]


# --- files --------------------------------------------------------------------------------


@pytest.fixture
def folders(settings, tmp_path):
    data, exports = tmp_path / "var" / "data", tmp_path / "var" / "data" / "exports"
    settings.DATA_DIR, settings.EXPORT_DIR = data, exports
    for name, text in {
        "embeddings/demo/text.npy": "vectors",
        "uploads/0123/pairs.csv": "a,b",
        "sampling/runs/batch-1-x/vectors.npy": "working copy",
        "sampling/ivf.npy": "kept",
        "exports/export-1/sts_val.csv": "csv",
        "exports/.export-2.job2.abc.partial/sts_val.csv": "half-written",
        "exports/.export-1.abc.old/sts_val.csv": "replaced",
    }.items():
        (data / name).parent.mkdir(parents=True, exist_ok=True)
        (data / name).write_text(text)
    return data, exports


def test_files_copied_leave_out_staging_folders_and_sampling_runs_and_copy_nested_folders_once(folders, tmp_path):
    staging = tmp_path / "staging"
    copied, skipped = files_copy(staging, lambda name: None)
    assert [entry.name for entry in copied] == [
        "data/embeddings/demo/text.npy",
        "data/sampling/ivf.npy",
        "data/uploads/0123/pairs.csv",
        "exports/export-1/sts_val.csv",
    ]
    assert skipped == []
    assert (staging / "data/embeddings/demo/text.npy").read_text() == "vectors"
    assert copied[0].entry() == {
        "name": "data/embeddings/demo/text.npy",
        "bytes": 7,
        "sha256": hashlib.sha256(b"vectors").hexdigest(),
    }


def test_a_file_that_is_no_regular_file_is_skipped_and_listed(folders, tmp_path):
    data, _ = folders
    os.mkfifo(data / "uploads" / "0123" / "a-fifo")
    _copied, skipped = files_copy(tmp_path / "staging", lambda name: None)
    assert skipped == [{"name": "data/uploads/0123/a-fifo", "reason": "not a regular file"}]
    assert stat.S_ISFIFO((data / "uploads" / "0123" / "a-fifo").stat().st_mode)


def test_file_problems_name_missing_and_changed_files(folders, tmp_path):
    staging = tmp_path / "staging"
    copied, _ = files_copy(staging, lambda name: None)
    entries = [entry.entry() for entry in copied]
    assert file_problems(staging, entries) == []
    (staging / "data/uploads/0123/pairs.csv").unlink()
    (staging / "data/sampling/ivf.npy").write_text("kepT")
    problems = file_problems(staging, entries)
    assert problems[0].startswith("data/sampling/ivf.npy has 4 bytes, SHA-256 ")
    assert "the manifest says 4 bytes" in problems[0]
    assert problems[1] == "data/uploads/0123/pairs.csv is missing"


def test_files_restore_writes_into_the_folders_and_keeps_what_is_there_already(folders, settings, tmp_path):
    staging = tmp_path / "staging"
    copied, _ = files_copy(staging, lambda name: None)
    entries = [entry.entry() for entry in copied]
    settings.DATA_DIR, settings.EXPORT_DIR = tmp_path / "new" / "data", tmp_path / "new" / "exports"
    (tmp_path / "new" / "data" / "sampling").mkdir(parents=True)
    (tmp_path / "new" / "data" / "sampling" / "ivf.npy").write_text("kept")
    assert restore_conflicts(entries) == []
    assert files_restore(staging, entries, lambda name: None) == 3
    assert (tmp_path / "new" / "exports" / "export-1" / "sts_val.csv").read_text() == "csv"
    assert files_restore(staging, entries, lambda name: None) == 0
    (tmp_path / "new" / "data" / "sampling" / "ivf.npy").write_text("other")
    assert restore_conflicts(entries) == [str(tmp_path / "new" / "data" / "sampling" / "ivf.npy")]
    assert not list((tmp_path / "new").rglob("*.partial"))


# --- stored paths -------------------------------------------------------------------------


def test_stored_paths_under_an_old_folder_move_to_the_new_one_and_nothing_else_does():
    moves = [("/srv/old/data", "/var/lib/cxc/data"), ("/srv/old", "/var/lib/cxc/x")]
    assert _moved("/srv/old/data/embeddings/a.npy", moves) == "/var/lib/cxc/data/embeddings/a.npy"
    assert _moved("/srv/old/data", moves) == "/var/lib/cxc/data"
    assert _moved("/srv/old/database", moves) == "/var/lib/cxc/x/database"
    assert _moved("/srv/older/a", moves) == "/srv/older/a"
    assert _moved({"out": "/srv/old/data/x", "n": 3, "files": ["/srv/old/data/y", "z"]}, moves) == {
        "out": "/var/lib/cxc/data/x",
        "n": 3,
        "files": ["/var/lib/cxc/data/y", "z"],
    }


# --- PostgreSQL's client programs ---------------------------------------------------------


def test_a_missing_pg_dump_is_named_with_how_to_get_it(settings, tmp_path):
    settings.BACKUP_PG_BIN_DIR = str(tmp_path)
    with pytest.raises(BackupError, match=rf"pg_dump is not in BACKUP_PG_BIN_DIR={tmp_path}: install PostgreSQL"):
        postgres.tool("pg_dump")


def fake_tool(folder: Path, name: str, version: str) -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\necho '{name} (PostgreSQL) {version} (Debian {version}-1)'\n")
    path.chmod(0o755)


def test_a_pg_dump_older_than_the_server_is_refused(settings, tmp_path):
    settings.BACKUP_PG_BIN_DIR = str(tmp_path)
    fake_tool(tmp_path, "pg_dump", "14.11")
    with pytest.raises(BackupError, match=r"pg_dump 14.11 cannot dump PostgreSQL 15.20: install .* major version 15"):
        postgres.dump_tool_check("15.20")
    fake_tool(tmp_path, "pg_dump", "16.2")
    assert postgres.dump_tool_check("15.20") == (tmp_path / "pg_dump", "16.2")


# --- a backup that fails part way ---------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_backup_that_fails_part_way_leaves_nothing_behind(monkeypatch, settings, tmp_path):
    from annotation.backup import create

    settings.DATA_DIR, settings.EXPORT_DIR = tmp_path / "var" / "data", tmp_path / "var" / "exports"
    backups = tmp_path / "backups"
    backups.mkdir()
    stages = []

    def disk_full(staging, step):
        assert (staging / "database.dump").stat().st_size > 0
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(create, "files_copy", disk_full)
    with pytest.raises(OSError, match="No space left"):
        create.backup_create(backups / "nightly", lambda stage, message: stages.append(stage))
    assert stages == ["snapshot", "database"]
    assert list(backups.iterdir()) == []


def test_a_backup_goes_into_a_new_or_empty_folder_only(tmp_path):
    from annotation.backup.create import backup_create

    (tmp_path / "nightly").mkdir()
    (tmp_path / "nightly" / "manifest.json").write_text("{}")
    with pytest.raises(BackupError, match="nightly is not empty: a backup goes into a new or empty folder"):
        backup_create(tmp_path / "nightly", lambda stage, message: None)
    with pytest.raises(BackupError, match="nightly/manifest.json exists and is not a folder"):
        backup_create(tmp_path / "nightly" / "manifest.json", lambda stage, message: None)
