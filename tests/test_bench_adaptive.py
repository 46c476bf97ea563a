"""bench-adaptive (benchmarks/bench_adaptive.py) at a tiny size: the same seed twice gives
the same JSON, byte for byte, but for the "timings" key, which holds every wall-clock
figure; every grid entry has its intervals over the seeds. The intervals' arithmetic
(benchmarks/_adaptive_data.py) needs no database."""

import json
import os
import subprocess
import sys
import uuid

import numpy as np
import pytest
from django.db import connection

from tests.conftest import REPO_DIR, SHARED_DIR, skip_or_fail

sys.path.insert(0, str(REPO_DIR / "benchmarks"))
from _adaptive_data import T_975, mean_interval

TINY = {
    "BENCH_SMOKE": "1",
    "ADAPTIVE_PAIRS": "12",
    "ADAPTIVE_RATERS": "10",
    "ADAPTIVE_SEEDS": "2",
    "ADAPTIVE_SEED": "3",
    "ADAPTIVE_REFIT_EVERY": "15",
    "ADAPTIVE_FIT_PAIRS": "500",
    "ADAPTIVE_GRID": "0.8",
}


def test_a_mean_over_seeds_has_students_interval():
    mean, low, high = mean_interval([1.0, 2.0, 3.0])
    assert mean == 2.0
    assert high - mean == pytest.approx(mean - low)
    assert high - mean == pytest.approx(T_975[1] * 1.0 / np.sqrt(3))  # sd 1, two degrees of freedom
    assert mean_interval([0.5]) == (0.5, 0.5, 0.5)


def run_bench(database: str) -> dict:
    settings = connection.settings_dict
    server = f"postgres://{settings['USER']}@{settings['HOST']}:{settings['PORT']}/{settings['NAME']}"
    env = {**os.environ, **TINY, "BENCH_DATABASE": database, "DATABASE_URL": server, "SHARED_DIR": str(SHARED_DIR)}
    done = subprocess.run(
        [sys.executable, str(REPO_DIR / "benchmarks" / "bench_adaptive.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.postgres
@pytest.mark.slow
@pytest.mark.django_db
def test_the_same_seed_gives_the_same_figures():
    if connection.vendor != "postgresql":
        pytest.skip("the benchmark runs on PostgreSQL")
    if not (SHARED_DIR / "cxc" / "sts_val.csv").is_file():
        skip_or_fail(f"{SHARED_DIR}/cxc is absent")
    database = f"{connection.settings_dict['NAME']}_bench_{uuid.uuid4().hex[:6]}"[:63]
    first, second = run_bench(database), run_bench(database)
    assert "skipped" not in first, first
    timings = first.pop("timings"), second.pop("timings")
    assert all(timing["copies_s"] and "fit_s" in timing for timing in timings)
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    assert [(entry["task"], entry["seeds"]) for entry in first["grid"]] == [("STS", 2), ("SIS", 2), ("SITS", 2)]
    for entry in first["grid"]:
        low, high = entry["saved_ci"]
        assert low <= entry["saved"] <= high
        assert entry["rmse_adaptive_hi"] == entry["rmse_adaptive_ci"][1] >= entry["rmse_adaptive"]
        assert {"saved_vs_model", "rmse_fixed5_model_ci", "rmse_fixed5_mean_ci", "meets_bar"} <= entry.keys()
