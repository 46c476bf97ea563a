"""Exclusion and undo racing with claims and submits keep every pair at exactly N valid
ratings from N distinct raters, on PostgreSQL and on the embedded SQLite mode."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from tests.support.exclusion_race import race

REPO = Path(__file__).resolve().parents[3]


def assert_clean(report: dict, *, pairs: int) -> None:
    assert report["hung_threads"] == 0, report
    assert report["errors"] == [], report
    assert report["problems"] == [], report
    assert report["acknowledged_missing"] == 0, report
    assert report["valid_from_excluded"] == 0, report
    assert report["pairs"] == pairs and report["pairs_incomplete"] == 0, report
    assert report["exclusions"] >= 5 and report["ratings_excluded"] + report["ratings_superseded"] > 0, report


@pytest.mark.postgres
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_thirty_raters_and_an_excluding_admin_leave_every_pair_at_n_on_postgres():
    assert connection.vendor == "postgresql"
    report = race(raters=30, pairs=80, per_pair=5, rounds=15)
    print(report)
    assert_clean(report, pairs=80)


@pytest.mark.slow
def test_the_same_race_on_the_embedded_sqlite_mode(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "RUN_MODE")}
    env |= {
        "RUN_MODE": "embedded",
        "SQLITE_PATH": str(tmp_path / "db.sqlite3"),
        "VAR_DIR": str(tmp_path / "var"),
        "SECRET_KEY": "embedded-test",
    }
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "--no-input", "-v", "0"], cwd=REPO, env=env, check=True)
    script = (
        "from tests.support.exclusion_race import race_json; print(race_json(raters=6, pairs=12, per_pair=3, rounds=8))"
    )
    done = subprocess.run(
        [*manage, "shell", "-v", "0", "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("RACE ")]
    report = json.loads(line.removeprefix("RACE "))
    print(report)
    assert_clean(report, pairs=12)
