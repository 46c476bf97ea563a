"""bench-peer's figures of a phase (benchmarks/bench_peer.py ``Side.figures``): the
autovacuum work done before it (benchmarks/_autovacuum.py) is reported beside the CPU
for every store kept in PostgreSQL, null where none was done (the saturation phases get
none; Label Studio's full run died at its end on one), and not at all for a store
outside PostgreSQL."""

import sys

import pytest

from tests.conftest import REPO_DIR

sys.path.insert(0, str(REPO_DIR / "benchmarks"))
from _load import Stats
from bench_peer import Side

CPU = {"web_s": 1.0, "db_s": 2.0, "db_live_s": 2.0, "db_sampled_s": 1.5, "client_s": 0.5}


def side(database: str | None, record: dict) -> Side:
    stats = Stats()
    stats.cycles = 1000
    found = Side("peer", app=None, keys=[], meter=None, port=0, database=database)
    found.phases["u8"] = {"stats": stats, "seconds": 10.0, "cpu": CPU, "raters": 8, **record}
    return found


def test_a_phase_with_autovacuum_work_reports_it_beside_its_cpu():
    figures = side("cxc_ls", {"upkeep": {"vacuumed": 2, "analyzed": 3, "cpu_s": 0.5}}).figures("u8")
    assert figures["autovacuum_emulated"] == {"vacuumed": 2, "analyzed": 3, "cpu_ms_per_cycle": 0.5}
    assert figures["cpu_ms_per_cycle"] == pytest.approx(3.0)  # web + PostgreSQL, without that work


def test_a_phase_of_a_store_in_postgresql_without_any_reports_null():
    assert side("cxc_ls", {}).figures("u8")["autovacuum_emulated"] is None


def test_a_store_outside_postgresql_has_no_such_figure():
    assert "autovacuum_emulated" not in side(None, {}).figures("u8")


def test_a_store_whose_backends_were_not_polled_reports_its_phase_end_reading_alone():
    found = side("cxc_ours", {})
    found.phases["u8"]["cpu"] = {**CPU, "db_s": 2.0, "db_sampled_s": None}
    figures = found.figures("u8")
    assert figures["db_cpu_ms_per_cycle_sampled"] is None
    assert figures["db_cpu_ms_per_cycle_live"] == pytest.approx(2.0)
    assert figures["cpu_ms_per_cycle"] == pytest.approx(3.0)
