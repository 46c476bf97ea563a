"""A backup taken while raters rate restores, into a new database and new folders, the
campaign as it was at the backup's snapshot: the same export byte for byte, the same row
count in every table, the same files; on PostgreSQL and on the embedded SQLite mode.
Each installation runs in processes of its own, through ``manage.py`` as an operator
runs it (tests/support/backup_installations.py, tests/support/backup_campaign.py)."""

import json
from pathlib import Path

import pytest

from annotation.backup.files import file_checksum
from tests.support.backup_campaign import AFTER_SNAPSHOT
from tests.support.backup_installations import installation

ENGINE_PARAMS = [pytest.param("postgresql", marks=pytest.mark.postgres), "sqlite"]


def files_under(folder: Path) -> dict[str, tuple[int, str]]:
    return {
        path.relative_to(folder).as_posix(): file_checksum(path) for path in sorted(folder.rglob("*")) if path.is_file()
    }


def assert_same_export(reference: Path, restored: Path) -> None:
    """Every file byte for byte, but the manifest's time of writing and its own checksum
    entry (which follow from it)."""
    names = sorted(path.name for path in reference.iterdir())
    assert names == sorted(path.name for path in restored.iterdir())
    assert len(names) > 5, names
    for name in names:
        if name == "manifest.json":
            continue
        assert (reference / name).read_bytes() == (restored / name).read_bytes(), name
    before, after = (json.loads((folder / "manifest.json").read_text()) for folder in (reference, restored))
    before.pop("created_at"), after.pop("created_at")
    assert before == after


@pytest.mark.slow
@pytest.mark.parametrize("database_engine", ENGINE_PARAMS)
def test_a_backup_taken_while_raters_rate_restores_the_campaign_of_its_snapshot(database_engine, tmp_path):
    live = installation(database_engine, tmp_path / "live")
    target = installation(database_engine, tmp_path / "restored")
    try:
        migrated = live.manage("migrate", "--no-input", "-v", "0")
        assert migrated.returncode == 0, migrated.stderr[-3000:]
        backup, reference = tmp_path / "backup", tmp_path / "reference-export"
        report = live.result(
            "from tests.support.backup_campaign import backup_under_rating, printed; "
            f"printed(backup_under_rating({str(backup)!r}, {str(reference)!r}))"
        )
        print(json.dumps({key: report[key] for key in ("marks", "live_ratings", "errors")}))
        assert report["errors"] == [] and report["hung_threads"] == 0

        restored = target.manage("restore", str(backup))
        assert restored.returncode == 0, restored.stderr[-3000:]
        state = target.result(
            "from tests.support.backup_campaign import restored_state, printed; "
            f"printed(restored_state({str(tmp_path / 'restored-export')!r}))"
        )
    finally:
        live.drop()
        target.drop()

    # The raters stored ratings after the snapshot while the backup ran: none of them is
    # in it, and every table counts what it counted when the raters were held.
    marks, counts = report["marks"], report["reference"]["counts"]
    assert marks["snapshot"] == report["reference"]["acknowledged"]
    assert marks["done"] >= marks["snapshot"] + AFTER_SNAPSHOT
    assert report["live_ratings"] >= counts["annotation_rating"] + AFTER_SNAPSHOT
    assert report["manifest_counts"] == counts
    assert state["counts"] == counts
    assert_same_export(reference, tmp_path / "restored-export")
    # The files came back whole, and the restored rows name them in their new place.
    assert files_under(live.data_dir) == files_under(target.data_dir)
    assert files_under(live.export_dir) == files_under(target.export_dir)
    assert all(Path(path).is_relative_to(target.data_dir) and Path(path).is_file() for path in state["space_files"])
