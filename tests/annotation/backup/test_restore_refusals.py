"""``manage.py restore`` refuses, naming the mismatch, and writes nothing: a folder without
a manifest, a file whose checksum is not the manifest's, a database that is not empty, a
schema version that is not this code's, another database engine, another SECRET_KEY
(unless told to accept it), a file in the way. On PostgreSQL and on the embedded SQLite
mode, against one backup of a rated campaign made by ``manage.py backup``. (A manifest
that cannot be read or is of another format: tests/annotation/backup/test_backup_parts.py.)"""

import json
import shutil
from pathlib import Path

import pytest

from tests.support.backup_installations import SECRET_KEY, installation

ENGINE_PARAMS = [pytest.param("postgresql", marks=pytest.mark.postgres), "sqlite"]
# One worker builds each engine's backup once for the whole module (not once per worker).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("backup-refusals")]


@pytest.fixture(scope="module", params=ENGINE_PARAMS)
def made_backup(request, tmp_path_factory) -> tuple[str, Path]:
    """(engine, folder) of a backup of a rated campaign with files in both folders."""
    engine = request.param
    folder = tmp_path_factory.mktemp(f"backup-{engine}")
    live = installation(engine, folder / "live")
    try:
        assert live.manage("migrate", "--no-input", "-v", "0").returncode == 0
        live.result(
            "from tests.support.backup_campaign import campaign_populate, printed; campaign_populate(); printed({})"
        )
        made = live.manage("backup", str(folder / "backup"))
        assert made.returncode == 0, made.stderr[-3000:]
    finally:
        live.drop()
    return engine, folder / "backup"


@pytest.fixture
def backup_copy(made_backup, tmp_path) -> tuple[str, Path]:
    """A copy of the backup that a test may tamper with."""
    engine, folder = made_backup
    copy = tmp_path / "backup"
    shutil.copytree(folder, copy)
    return engine, copy


@pytest.fixture
def restore_into(tmp_path):
    """``restore_into(engine, folder, *options, secret_key=...)``: the completed ``manage.py
    restore`` into a new installation, and the installation (dropped after the test)."""
    made = []

    def restore(engine: str, backup: Path, *options: str, secret_key: str = SECRET_KEY, prepare=None):
        target = installation(engine, tmp_path / f"target-{len(made)}", secret_key=secret_key)
        made.append(target)
        if prepare is not None:
            prepare(target)
        return target.manage("restore", str(backup), *options), target

    yield restore
    for target in made:
        target.drop()


def refused(done, target, *phrases: str) -> None:
    """The restore failed with a message holding every phrase, and left the target's
    folders without a file (and its database as it was)."""
    assert done.returncode != 0, done.stdout
    for phrase in phrases:
        assert phrase in done.stderr, done.stderr
    assert target.files() == []


def manifest_edit(folder: Path, change) -> None:
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text())
    change(manifest)
    path.write_text(json.dumps(manifest))


def test_a_folder_without_its_manifest_is_refused(backup_copy, restore_into):
    engine, folder = backup_copy
    (folder / "manifest.json").unlink()
    done, target = restore_into(engine, folder)
    refused(done, target, f"{folder / 'manifest.json'} is missing", "no complete backup")
    assert target.tables() == []


def test_a_file_whose_checksum_differs_is_refused_and_named(backup_copy, restore_into):
    engine, folder = backup_copy
    (vectors,) = folder.glob("data/embeddings/*/text-16.npy")
    with vectors.open("ab") as handle:
        handle.write(b"\0")
    done, target = restore_into(engine, folder)
    name = vectors.relative_to(folder).as_posix()
    refused(done, target, "does not match its manifest", f"{name} has {vectors.stat().st_size} bytes")
    assert target.tables() == []


def test_a_damaged_database_file_is_refused_and_named(backup_copy, restore_into):
    engine, folder = backup_copy
    database = folder / ("database.dump" if engine == "postgresql" else "database.sqlite3")
    data = bytearray(database.read_bytes())
    data[len(data) // 2] ^= 0xFF
    database.write_bytes(bytes(data))
    done, target = restore_into(engine, folder)
    refused(done, target, f"{database.name} has {len(data)} bytes, SHA-256")
    assert target.tables() == []


def test_a_database_that_is_not_empty_is_refused_naming_its_tables(backup_copy, restore_into):
    engine, folder = backup_copy
    done, target = restore_into(engine, folder, prepare=lambda t: t.sql("CREATE TABLE leftover (x integer)"))
    refused(done, target, "the database is not empty: it has 1 tables (leftover)")
    assert target.tables() == ["leftover"]


def test_another_schema_version_is_refused_naming_both(backup_copy, restore_into):
    engine, folder = backup_copy
    code = json.loads((folder / "manifest.json").read_text())["schema"]["annotation"]
    manifest_edit(folder, lambda m: m["schema"].update(annotation="0001_initial"))
    done, target = restore_into(engine, folder)
    refused(done, target, f"annotation: the backup's 0001_initial, this code's {code}")


def test_a_backup_of_the_other_engine_is_refused(backup_copy, restore_into):
    engine, folder = backup_copy
    other = "sqlite" if engine == "postgresql" else "postgresql"
    manifest_edit(folder, lambda m: m["database"].update(engine=other))
    done, target = restore_into(engine, folder)
    refused(done, target, f"the backup is of a {other} database and this installation runs on {engine}")


def test_another_secret_key_is_refused_unless_accepted(backup_copy, restore_into):
    engine, folder = backup_copy
    done, target = restore_into(engine, folder, secret_key="another-secret-key")
    refused(done, target, "the backup was made with another SECRET_KEY", "--accept-new-secret-key")
    done, target = restore_into(engine, folder, "--accept-new-secret-key", secret_key="another-secret-key")
    assert done.returncode == 0, done.stderr
    assert "done: restored:" in done.stdout
    assert len(target.files()) == len(json.loads((folder / "manifest.json").read_text())["files"]) - 1


def test_a_restore_run_again_keeps_the_files_already_restored(backup_copy, restore_into):
    """A restore whose file step failed can be run again into an empty database: the files
    already in place with the backup's content are kept, the others written."""
    engine, folder = backup_copy
    done, first = restore_into(engine, folder)
    assert done.returncode == 0, done.stderr
    done, second = restore_into(engine, folder, prepare=lambda t: shutil.copytree(first.data_dir, t.data_dir))
    assert done.returncode == 0, done.stderr
    exports = [path for path in first.files() if Path(path).is_relative_to(first.export_dir)]
    assert f"files: {len(exports)} files put into DATA_DIR and EXPORT_DIR" in done.stdout
    assert [Path(p).relative_to(second.folder) for p in second.files()] == [
        Path(p).relative_to(first.folder) for p in first.files()
    ]


def test_a_file_in_the_way_with_other_content_is_refused_and_named(backup_copy, restore_into):
    engine, folder = backup_copy
    (vectors,) = folder.glob("data/embeddings/*/text-16.npy")
    relative = vectors.relative_to(folder / "data")

    def put_other_file(target):
        (target.data_dir / relative).parent.mkdir(parents=True)
        (target.data_dir / relative).write_bytes(b"other")

    done, target = restore_into(engine, folder, prepare=put_other_file)
    assert done.returncode != 0
    assert f"restoring would overwrite files with other content: {target.data_dir / relative}" in done.stderr
    assert target.tables() == []
