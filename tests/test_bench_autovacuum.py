"""The benchmarks do autovacuum's work between phases on a server that runs without it
(benchmarks/_autovacuum.py): by autovacuum's own rules, at their exact thresholds, and
on a real database only the tables those rules pick."""

import os
import sys
import uuid

import psycopg2
import pytest

from tests.conftest import REPO_DIR

sys.path.insert(0, str(REPO_DIR / "benchmarks"))
from _autovacuum import TableActivity, Thresholds, add, catch_up, command, due, emulating, figures

# PostgreSQL's defaults: 50 + 20 % dead, 1,000 + 20 % inserted, 50 + 10 % changed.
DEFAULTS = Thresholds(50, 0.2, 1000, 0.2, 50, 0.1)


def table(rows=1000.0, dead=0, inserted=0, changed=0) -> TableActivity:
    return TableActivity("annotation_goldrating", rows, dead, inserted, changed)


def test_nothing_is_due_at_the_thresholds_themselves():
    # 1,000 rows: vacuum past 250 dead or 1,200 inserted, analyze past 150 changed.
    assert due(table(dead=250, inserted=1200, changed=150), DEFAULTS) == (False, False)
    assert command(table(dead=250, inserted=1200, changed=150), DEFAULTS) is None


def test_one_row_past_a_threshold_makes_it_due():
    assert due(table(dead=251), DEFAULTS) == (True, False)
    assert due(table(inserted=1201), DEFAULTS) == (True, False)
    assert due(table(changed=151), DEFAULTS) == (False, True)


def test_a_table_never_analyzed_counts_as_empty():
    # reltuples -1 (PostgreSQL 14 on): the base counts alone, not a negative share.
    assert due(table(rows=-1, changed=51), DEFAULTS) == (False, True)
    assert due(table(rows=-1, changed=50), DEFAULTS) == (False, False)


def test_an_insert_threshold_of_minus_one_turns_the_insert_rule_off():
    limits = Thresholds(50, 0.2, -1, 0.2, 50, 0.1)
    assert due(table(rows=0, inserted=10**6), limits) == (False, False)


def test_the_command_is_the_one_autovacuum_runs():
    assert command(table(dead=251, changed=151), DEFAULTS) == 'VACUUM (ANALYZE) public."annotation_goldrating"'
    assert command(table(dead=251), DEFAULTS) == 'VACUUM public."annotation_goldrating"'
    assert command(table(changed=151), DEFAULTS) == 'ANALYZE public."annotation_goldrating"'


def test_a_phases_work_adds_up_over_rounds_and_reports_per_cycle():
    total = add(add({}, {"vacuumed": 1, "analyzed": 2, "cpu_s": 0.5}), {"vacuumed": 0, "analyzed": 1, "cpu_s": 0.25})
    assert total == {"vacuumed": 1, "analyzed": 3, "cpu_s": 0.75}
    assert figures(total, 1500) == {"autovacuum_emulated": {"vacuumed": 1, "analyzed": 3, "cpu_ms_per_cycle": 0.5}}


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
    with admin.cursor() as cursor:
        cursor.execute("SHOW autovacuum")
        if cursor.fetchone()[0] == "on":
            admin.close()
            pytest.skip("this server runs autovacuum itself: catch_up leaves its work to it")
        cursor.execute(f'CREATE DATABASE "{name}"')
    dsn = " ".join(f"{key}={value}" for key, value in {**server, "dbname": name}.items())
    try:
        yield dsn
    finally:
        with admin.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
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


@pytest.mark.postgres
def test_on_a_real_database_only_the_tables_past_a_threshold_are_done(scratch_database):
    _run(
        scratch_database,
        "CREATE TABLE grown (id int PRIMARY KEY)",
        "CREATE TABLE quiet (id int PRIMARY KEY)",
        "CREATE TABLE churned (id int PRIMARY KEY)",
        "INSERT INTO grown SELECT generate_series(1, 200)",  # 200 changed > 50 + 0: analyze
        "INSERT INTO quiet SELECT generate_series(1, 40)",  # 40 changed: below 50, nothing
        "INSERT INTO churned SELECT generate_series(1, 300)",
        "ANALYZE churned",
        "DELETE FROM churned WHERE id <= 150",  # 150 dead > 50 + 0.2 x 300: vacuum; 150 > 80: analyze
    )
    done = catch_up(scratch_database)
    assert (done["vacuumed"], done["analyzed"]) == (1, 2)
    assert done["cpu_s"] >= 0
    state = _analyzed_and_vacuumed(scratch_database)
    assert state["grown"] == (True, False)
    assert state["quiet"] == (False, False)
    assert state["churned"] == (True, True)
    # Done: nothing is due again until the tables change.
    assert catch_up(scratch_database) == {"vacuumed": 0, "analyzed": 0, "cpu_s": pytest.approx(0, abs=0.05)}
