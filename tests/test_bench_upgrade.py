"""bench-upgrade's rollback: by default back to before the fifth-last migration that touches
a hot table, or the last BENCH_UPGRADE_N; never past one that cannot be unapplied
(benchmarks/bench_upgrade.py ``rollback_target``). Pure: no database."""

import sys

import pytest

from tests.conftest import REPO_DIR

sys.path.insert(0, str(REPO_DIR / "benchmarks"))
import bench_upgrade


def migrations(*specs: str) -> list[dict]:
    """``"0007h"``: 0007 touches a hot table; ``"0008x"``: 0008 cannot be unapplied."""
    return [
        {
            "migration": f"annotation.{spec[:4]}",
            "hot_tables": ["annotation_rating"] if "h" in spec else [],
            "reversible": "x" not in spec,
        }
        for spec in specs
    ]


def test_by_default_back_to_before_the_fifth_last_touching_a_hot_table():
    chain = migrations("0001h", "0002h", "0003", "0004h", "0005h", "0006", "0007h", "0008h", "0009")
    assert bench_upgrade.rollback_target(chain, None) == (
        "0001",
        ["0002", "0003", "0004", "0005", "0006", "0007", "0008", "0009"],
    )


def test_bench_upgrade_n_rolls_back_that_many():
    chain = migrations("0001h", "0002", "0003", "0004")
    assert bench_upgrade.rollback_target(chain, 2) == ("0002", ["0003", "0004"])
    assert bench_upgrade.rollback_target(chain, 10) == ("0001", ["0002", "0003", "0004"])


def test_never_past_a_migration_that_cannot_be_unapplied(capsys):
    chain = migrations("0001h", "0002h", "0003hx", "0004h", "0005h", "0006h")
    assert bench_upgrade.rollback_target(chain, None) == ("0003", ["0004", "0005", "0006"])
    assert "0003 cannot be unapplied" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="nothing to roll back"):
        bench_upgrade.rollback_target(migrations("0001", "0002x"), 1)
