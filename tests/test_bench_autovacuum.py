"""The benchmarks do autovacuum's work between phases on a server that runs without it
(benchmarks/_autovacuum.py): by autovacuum's own rules, at their exact thresholds, and
on a real database only the tables those rules pick."""

import os
import sys
import uuid

import psycopg2
import pytest
from psycopg2.extensions import make_dsn

from tests.conftest import REPO_DIR

sys.path.insert(0, str(REPO_DIR / "benchmarks"))
import _autovacuum
from _autovacuum import TableActivity, Thresholds, add, catch_up, command, due, emulating, figures

# Every base and share its own (PostgreSQL's defaults repeat 50 and 0.2), so a rule that
# reads the wrong one moves its threshold: 1,000 rows need 50 + 200 = 250 dead, 1,000 +
# 300 = 1,300 inserted or 70 + 100 = 170 changed.
LIMITS = Thresholds(50, 0.2, 1000, 0.3, 70, 0.1)


def table(rows=1000.0, dead=0, inserted=0, changed=0) -> TableActivity:
    return TableActivity("annotation_goldrating", rows, dead, inserted, changed)


def test_nothing_is_due_at_the_thresholds_themselves():
    assert due(table(dead=250, inserted=1300, changed=170), LIMITS) == (False, False)
    assert command(table(dead=250, inserted=1300, changed=170), LIMITS) is None


def test_one_row_past_a_threshold_makes_it_due():
    assert due(table(dead=251), LIMITS) == (True, False)
    assert due(table(inserted=1301), LIMITS) == (True, False)
    assert due(table(changed=171), LIMITS) == (False, True)


def test_a_table_never_analyzed_counts_as_empty():
    # reltuples -1 (PostgreSQL 14 on): the base counts alone, not a negative share.
    assert due(table(rows=-1, changed=71), LIMITS) == (False, True)
    assert due(table(rows=-1, changed=70), LIMITS) == (False, False)
    assert due(table(rows=-1, dead=51, inserted=1000), LIMITS) == (True, False)


def test_an_insert_threshold_of_zero_still_counts():
    limits = Thresholds(50, 0.2, 0, 0.0, 70, 0.1)
    assert due(table(rows=0, inserted=1), limits) == (True, False)


def test_an_insert_threshold_of_minus_one_turns_the_insert_rule_off():
    limits = Thresholds(50, 0.2, -1, 0.2, 50, 0.1)
    assert due(table(rows=0, inserted=10**6), limits) == (False, False)


def test_the_command_is_the_one_autovacuum_runs():
    both = 'VACUUM (ANALYZE, PARALLEL 0) public."annotation_goldrating"'
    assert command(table(dead=251, changed=171), LIMITS) == both
    assert command(table(dead=251), LIMITS) == 'VACUUM (PARALLEL 0) public."annotation_goldrating"'
    assert command(table(changed=171), LIMITS) == 'ANALYZE public."annotation_goldrating"'


def test_a_phases_work_adds_up_over_rounds_and_reports_per_cycle():
    total = add(add({}, {"vacuumed": 1, "analyzed": 2, "cpu_s": 0.5}), {"vacuumed": 0, "analyzed": 1, "cpu_s": 0.25})
    assert total == {"vacuumed": 1, "analyzed": 3, "cpu_s": 0.75}
    assert figures(total, 1500) == {"autovacuum_emulated": {"vacuumed": 1, "analyzed": 3, "cpu_ms_per_cycle": 0.5}}
    # A server that runs autovacuum itself: catch_up answers None and nothing is reported.
    assert add(total, None) == total
    assert figures(add({}, None), 1500) == {"autovacuum_emulated": None}


def test_the_switch_takes_0_or_1_and_names_itself_otherwise(monkeypatch):
    monkeypatch.delenv("BENCH_EMULATE_AUTOVACUUM", raising=False)
    assert emulating()
    monkeypatch.setenv("BENCH_EMULATE_AUTOVACUUM", "0")
    assert not emulating()
    monkeypatch.setenv("BENCH_EMULATE_AUTOVACUUM", "yes")
    with pytest.raises(SystemExit, match="BENCH_EMULATE_AUTOVACUUM must be 0 or 1"):
        emulating()


@pytest.fixture
def scratch_database(settings):
    """A database of its own (catch_up connects anew and vacuums, outside any test
    transaction), dropped afterwards; its DSN and an autocommit connection to it."""
    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        pytest.skip("autovacuum is PostgreSQL's")
    database = settings.DATABASES["default"]
    server = {key.lower(): database[key] for key in ("HOST", "PORT", "USER", "PASSWORD") if database.get(key)}
    name = f"cxc_autovacuum_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    admin = psycopg2.connect(dbname="postgres", **server)
    admin.autocommit = True
    try:
        with admin.cursor() as cursor:
            cursor.execute("SELECT current_setting('autovacuum'), current_setting('server_version_num')::int")
            setting, version = cursor.fetchone()
            if setting == "on":
                pytest.skip("this server runs autovacuum itself: catch_up leaves its work to it")
            if version < 150000:
                pytest.skip("the test flushes statistics with pg_stat_force_next_flush(), PostgreSQL 15 on")
            cursor.execute(f'CREATE DATABASE "{name}"')
        try:
            yield make_dsn(**server, dbname=name)
        finally:
            with admin.cursor() as cursor:
                cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        admin.close()


def _run(dsn: str, *statements: str) -> None:
    """Each statement in its own transaction; then the backend's counts are flushed to
    the statistics (at most once a second otherwise) before this returns."""
    connection = psycopg2.connect(dsn)
    connection.autocommit = True
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)
        cursor.execute("SELECT pg_stat_force_next_flush()")  # flushed as it goes idle, before answering
    connection.close()


def _analyzed_and_vacuumed(dsn: str) -> dict[str, tuple[bool, bool]]:
    connection = psycopg2.connect(dsn)
    with connection.cursor() as cursor:
        cursor.execute("SELECT relname, last_analyze IS NOT NULL, last_vacuum IS NOT NULL FROM pg_stat_user_tables")
        found = {name: (analyzed, vacuumed) for name, analyzed, vacuumed in cursor.fetchall()}
    connection.close()
    return found


# PostgreSQL's default thresholds (the server's, read by catch_up): vacuum past 50 + 20 %
# dead rows (or 1,000 + 20 % inserted), analyze past 50 + 10 % changed rows.
TABLES = (
    "CREATE TABLE grown (id int PRIMARY KEY)",
    "CREATE TABLE quiet (id int PRIMARY KEY)",
    "CREATE TABLE thinned (id int PRIMARY KEY)",
    "CREATE TABLE emptied (id int PRIMARY KEY)",
    "INSERT INTO grown SELECT generate_series(1, 200)",  # 200 changed > 50: analyze
    "INSERT INTO quiet SELECT generate_series(1, 40)",  # 40 changed: nothing
    "INSERT INTO thinned SELECT generate_series(1, 300)",
    "INSERT INTO emptied SELECT generate_series(1, 100)",
    "ANALYZE thinned, emptied",
    # 90 changed > 50 + 30: analyze; 90 dead < 50 + 60, and < 50 + 42 once analyzed at 210 rows.
    "DELETE FROM thinned WHERE id <= 90",
    "DELETE FROM emptied",  # 100 dead > 50 + 20: vacuum; 100 changed > 50 + 10: analyze
)


@pytest.mark.postgres
def test_on_a_real_database_only_the_tables_past_a_threshold_are_done(scratch_database):
    _run(scratch_database, *TABLES)
    done = catch_up(scratch_database)
    assert (done["vacuumed"], done["analyzed"]) == (1, 3)
    assert done["cpu_s"] > 0
    state = _analyzed_and_vacuumed(scratch_database)
    assert state == {
        "grown": (True, False),
        "quiet": (False, False),
        "thinned": (True, False),
        "emptied": (True, True),
    }
    # Done: nothing is due again until the tables change.
    assert catch_up(scratch_database) == {"vacuumed": 0, "analyzed": 0, "cpu_s": pytest.approx(0, abs=0.05)}


@pytest.mark.postgres
def test_on_a_server_that_runs_autovacuum_nothing_is_done(scratch_database, monkeypatch):
    _run(scratch_database, *TABLES)
    monkeypatch.setattr(_autovacuum, "server_runs_it", lambda cursor: True)
    assert catch_up(scratch_database) is None
    state = _analyzed_and_vacuumed(scratch_database)
    assert state["grown"] == (False, False)  # analyzed by catch_up otherwise
    assert state["emptied"] == (True, False)  # its ANALYZE in TABLES; vacuumed by catch_up otherwise


def test_bench_cycle_measures_in_blocks_with_the_catch_up_between_them(monkeypatch):
    """bench-cycle's measured cycles run in blocks of BENCH_BLOCK, every cycle in one, with
    autovacuum's work before each only while emulating it."""
    import bench_cycle

    monkeypatch.setattr(bench_cycle, "BLOCK", 500)
    assert bench_cycle.blocks(3_000) == [500] * 6
    assert bench_cycle.blocks(1_234) == [500, 500, 234]
    calls, done = [], {"vacuumed": 1, "analyzed": 0}
    monkeypatch.setattr(bench_cycle, "catch_up", lambda dsn: calls.append(dsn) or done)

    class Connection:
        settings_dict = {"NAME": "cxc_bench_cycle_page"}

    class Raters:
        tokens = ["a", "b", "c"]
        cycled: list[int] = []

        def cycles(self, count):
            self.cycled.append(count)

    raters = Raters()
    monkeypatch.setattr(bench_cycle, "EMULATE_AUTOVACUUM", False)
    assert bench_cycle.catch_up_between_blocks(Connection(), raters) is None
    monkeypatch.setattr(bench_cycle, "EMULATE_AUTOVACUUM", True)
    assert bench_cycle.catch_up_between_blocks(Connection(), raters) == done
    assert calls and calls[0].endswith("cxc_bench_cycle_page")
    assert raters.cycled == []  # nothing analyzed: the plans stand
    done["analyzed"] = 2
    bench_cycle.catch_up_between_blocks(Connection(), raters)
    assert raters.cycled == [3]  # planned again, a cycle per rater, before the measured block
