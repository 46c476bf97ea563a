"""How the tests run under `make mutation` (scripts/mutation.py): tests/conftest.py takes
these fixtures and hooks only when MUTATION_TEST_DATABASE is set.

mutmut runs a fresh pytest session for every mutant, several at once. pytest-django's own
set-up would create or migrate a test database each time, which alone would take longer
than the mutant's tests, and sessions running side by side must not share one database
(a transactional test empties every table at its end). So scripts/mutation.py migrates one
template database and clones it into MUTATION_DB_SLOTS slots; each session takes the first
free slot (an flock held for the session, released by the kernel if the worker is killed)
and points the connection at it.

mutmut runs one test selection; tests marked ``sql_paths`` run in it once per SQL path
(see pytest_generate_tests).
"""

import fcntl
import json
import os
from pathlib import Path

import pytest

TEMPLATE = os.environ.get("MUTATION_TEST_DATABASE", "")
SLOTS = int(os.environ.get("MUTATION_DB_SLOTS", "1"))
LOCK_DIR = Path(os.environ.get("MUTATION_LOCK_DIR", "."))


def slot_name(template: str, number: int) -> str:
    return f"{template}_{number}"


def _claim_slot():
    """The number of a free slot and the open lock file that holds it."""
    LOCK_DIR.mkdir(parents=True, exist_ok=True)
    for number in range(1, SLOTS + 1):
        handle = open(LOCK_DIR / f"db-slot-{number}.lock", "w")  # noqa: SIM115 (held for the session)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        return number, handle
    raise RuntimeError(f"all {SLOTS} mutation test databases are in use: more workers than MUTATION_DB_SLOTS")


def _reclone_if_dirty(connection, name: str) -> None:
    """A worker killed in the middle of a transactional test leaves its rows behind; the
    next session on that slot starts again from the template rather than from those rows."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT EXISTS (SELECT 1 FROM auth_user)")
        dirty = cursor.fetchone()[0]
    if not dirty:
        return
    connection.close()
    quote = connection.ops.quote_name
    with connection._nodb_cursor() as cursor:
        cursor.execute(f"DROP DATABASE {quote(name)} WITH (FORCE)")
        cursor.execute(f"CREATE DATABASE {quote(name)} TEMPLATE {quote(TEMPLATE)}")


@pytest.fixture(scope="session")
def django_db_setup(django_test_environment, django_db_blocker):
    """Replaces pytest-django's fixture of the same name: no creation, no migrations."""
    from django.db import connections

    number, handle = _claim_slot()
    name = slot_name(TEMPLATE, number)
    connection = connections["default"]
    connection.close()
    connection.settings_dict["NAME"] = name
    try:
        with django_db_blocker.unblock():
            _reclone_if_dirty(connection, name)
        yield
    finally:
        with django_db_blocker.unblock():
            connections.close_all()
        handle.close()


def pytest_generate_tests(metafunc):
    """Tests marked ``sql_paths`` run once per SQL path (the test command runs their files a
    second time with SQL_PATHS=portable instead, which mutmut cannot do), so a mutant of the
    ORM path meets the tests too. Tests taking the ``engine`` fixture choose their path."""
    if metafunc.definition.get_closest_marker("sql_paths") and "engine" not in metafunc.fixturenames:
        # A direct parameter: pytest accepts it for a name in the fixture closure, and
        # _sql_path_switch reads it. (An indirect one on a name the closure lacks gives
        # the test ids but never runs the fixture.)
        metafunc.fixturenames.append(SQL_PATH_PARAMETER)
        metafunc.parametrize(SQL_PATH_PARAMETER, ["postgres", "portable"])


SQL_PATH_PARAMETER = "sql_path"


@pytest.fixture(autouse=True)
def _sql_path_switch(request):
    """Sets SQL_PATHS for a test that pytest_generate_tests gave a SQL path."""
    callspec = getattr(request.node, "callspec", None)
    path = callspec.params.get(SQL_PATH_PARAMETER) if callspec else None
    if path is None:
        yield
        return
    settings = request.getfixturevalue("settings")
    settings.SQL_PATHS = path
    yield


# The order of a mutant's tests. mutmut runs them fastest first by their call phase alone
# and stops at the first failure; most of a test's time here is its set-up (rows made, the
# transactional flush), and the test that kills a function's mutants is often late in
# that order. So the clean run records each test's whole time, a failing test is recorded
# as a killer of the mutant's function, and a session runs the function's recent killers
# first (mutmut tests one function's mutants one after another), then the rest by whole time.
ORDER_DIR = Path(os.environ.get("MUTATION_ORDER_DIR", "."))
KILLERS_KEPT = 5
_whole_times: dict[str, float] = {}


def _function_under_test() -> str | None:
    """The mutated function's name, e.g. ``annotation.quality.quiz.x_quiz_answer``."""
    mutant = os.environ.get("MUTANT_UNDER_TEST", "")
    return mutant.partition("__mutmut_")[0] if "__mutmut_" in mutant else None


def _killers_file(function: str) -> Path:
    return ORDER_DIR / "killers" / function


def _recent_killers(function: str) -> list[str]:
    try:
        lines = _killers_file(function).read_text().split()
    except FileNotFoundError:
        return []
    return list(dict.fromkeys(reversed(lines)))[:KILLERS_KEPT]


def order_for_the_mutant(items: list) -> None:
    """Puts the items in the order described above (in place)."""
    function = _function_under_test()
    if function is None:
        return
    try:
        whole_times = json.loads((ORDER_DIR / "whole-times.json").read_text())
    except FileNotFoundError:
        whole_times = {}
    rank = {nodeid: place for place, nodeid in enumerate(_recent_killers(function))}
    items.sort(key=lambda item: (rank.get(item.nodeid, KILLERS_KEPT), whole_times.get(item.nodeid, 0.0)))


def pytest_runtest_logreport(report):
    function = _function_under_test()
    if os.environ.get("MUTANT_UNDER_TEST") == "":  # the clean run, in mutmut's own process
        _whole_times[report.nodeid] = _whole_times.get(report.nodeid, 0.0) + report.duration
    elif function is not None and report.failed:
        path = _killers_file(function)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as killers:  # one short line: appends of two workers do not mix
            killers.write(report.nodeid + "\n")


def pytest_sessionfinish(session):
    if os.environ.get("MUTANT_UNDER_TEST") == "" and _whole_times:  # the clean run
        ORDER_DIR.mkdir(parents=True, exist_ok=True)
        (ORDER_DIR / "whole-times.json").write_text(json.dumps(_whole_times))
