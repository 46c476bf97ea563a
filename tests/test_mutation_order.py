"""The order of a mutant's tests under `make mutation` (tests/support/mutation_mode.py): the
function's recent killers first, then the rest by their whole time in the clean run."""

import json
from types import SimpleNamespace

import pytest

from tests.support import mutation_mode

FUNCTION = "annotation.quality.quiz.x_quiz_answer"


@pytest.fixture
def order_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(mutation_mode, "ORDER_DIR", tmp_path)
    monkeypatch.setattr(mutation_mode, "_whole_times", {})
    return tmp_path


def items(*nodeids):
    return [SimpleNamespace(nodeid=nodeid) for nodeid in nodeids]


def report(nodeid, *, failed=False, duration=0.5):
    return SimpleNamespace(nodeid=nodeid, failed=failed, duration=duration)


def test_the_clean_run_records_whole_times_and_a_mutant_runs_its_killers_first(order_dir, monkeypatch):
    monkeypatch.setenv("MUTANT_UNDER_TEST", "")
    for phase_duration in (0.1, 2.0, 0.3):  # set-up, call, teardown
        mutation_mode.pytest_runtest_logreport(report("t::slow", duration=phase_duration))
    mutation_mode.pytest_runtest_logreport(report("t::fast", duration=0.2))
    mutation_mode.pytest_runtest_logreport(report("t::middle", duration=1.0))
    mutation_mode.pytest_sessionfinish(session=None)
    assert json.loads((order_dir / "whole-times.json").read_text()) == pytest.approx(
        {"t::slow": 2.4, "t::fast": 0.2, "t::middle": 1.0}
    )

    monkeypatch.setenv("MUTANT_UNDER_TEST", f"{FUNCTION}__mutmut_3")
    session = items("t::slow", "t::middle", "t::fast")
    mutation_mode.order_for_the_mutant(session)
    assert [item.nodeid for item in session] == ["t::fast", "t::middle", "t::slow"]

    mutation_mode.pytest_runtest_logreport(report("t::middle", failed=False))
    mutation_mode.pytest_runtest_logreport(report("t::slow", failed=True))
    monkeypatch.setenv("MUTANT_UNDER_TEST", f"{FUNCTION}__mutmut_4")
    mutation_mode.order_for_the_mutant(session)
    assert [item.nodeid for item in session] == ["t::slow", "t::fast", "t::middle"]
    assert (order_dir / "whole-times.json").read_text().count("slow") == 1, "a mutant's session records no times"


def test_the_latest_killer_comes_first_and_another_functions_killers_do_not_count(order_dir, monkeypatch):
    monkeypatch.setenv("MUTANT_UNDER_TEST", f"{FUNCTION}__mutmut_1")
    mutation_mode.pytest_runtest_logreport(report("t::a", failed=True))
    mutation_mode.pytest_runtest_logreport(report("t::b", failed=True))
    monkeypatch.setenv("MUTANT_UNDER_TEST", "annotation.quality.quiz.x_quiz_state__mutmut_1")
    mutation_mode.pytest_runtest_logreport(report("t::c", failed=True))

    monkeypatch.setenv("MUTANT_UNDER_TEST", f"{FUNCTION}__mutmut_2")
    session = items("t::c", "t::a", "t::b")
    mutation_mode.order_for_the_mutant(session)
    assert [item.nodeid for item in session] == ["t::b", "t::a", "t::c"]


def test_outside_a_mutant_the_order_is_left_alone(order_dir, monkeypatch):
    monkeypatch.setenv("MUTANT_UNDER_TEST", "stats")
    session = items("t::b", "t::a")
    mutation_mode.order_for_the_mutant(session)
    assert [item.nodeid for item in session] == ["t::b", "t::a"]
