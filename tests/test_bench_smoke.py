"""`make bench-smoke` (scripts/bench_smoke.py) reports a benchmark as failed when it exits
non-zero, hangs, or its last line is not one JSON object; stand-in commands play the
benchmarks, none of the real ones runs. And benchmarks/_common's smoke switch."""

import json
import sys
import time
from pathlib import Path

import pytest

from scripts import bench_smoke
from tests.conftest import REPO_DIR


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


STAND_INS = {
    # A real benchmark's shape: progress lines, then its figures; it sees BENCH_SMOKE=1.
    "bench-good": python(
        "import json, os; print('loaded 10 pairs'); print('a note', file=__import__('sys').stderr); "
        "print(json.dumps({'seconds': 0.1, 'smoke': os.environ['BENCH_SMOKE'] == '1'}))"
    ),
    "bench-no-json": python("print('{\"seconds\": 0.1}'); print('done')"),
    "bench-exits-3": python("import sys; print('{\"seconds\": 0.1}'); sys.exit(3)"),
    "bench-traceback": python("print('loading'); raise RuntimeError('the generator broke')"),
    "bench-a-list": python("print('[1, 2]')"),
    "bench-nan": python("print('{\"p95_ms\": NaN}')"),
    "bench-silent": python("pass"),
}


def test_each_failing_benchmark_is_named_and_the_good_one_passes(tmp_path):
    lines = []
    summary = bench_smoke.run_all(
        list(STAND_INS), command_for=STAND_INS.__getitem__, timeout=60, log_dir=tmp_path, echo=lines.append
    )
    assert summary["failed"] == [name for name in STAND_INS if name != "bench-good"]
    assert set(summary["seconds"]) == set(STAND_INS)
    assert json.loads(lines[-1]) == summary, "the last line is the summary object"
    verdicts = {line.split()[0]: line for line in lines if line.startswith("bench-") and " s  " in line}
    assert verdicts["bench-good"].endswith("ok")
    assert "FAILED: last line is not JSON" in verdicts["bench-no-json"]
    assert "FAILED: exit status 3" in verdicts["bench-exits-3"]
    assert "FAILED: exit status 1" in verdicts["bench-traceback"]
    assert "FAILED: last line is JSON but no object" in verdicts["bench-a-list"]
    assert "FAILED: last line is not JSON (NaN is not JSON)" in verdicts["bench-nan"]
    assert "FAILED: no output" in verdicts["bench-silent"]
    assert any("the generator broke" in line for line in lines), "a failure shows the tail of its stderr"
    assert (tmp_path / "bench-good.stdout.log").read_text().endswith('"smoke": true}\n')
    assert (tmp_path / "bench-good.stderr.log").read_text() == "a note\n"


def test_a_benchmark_that_does_not_end_is_stopped_and_failed(tmp_path):
    marker = tmp_path / "still-running"
    child = tmp_path / "child.py"
    child.write_text(f"import time\ntime.sleep(3)\nopen({str(marker)!r}, 'w').close()\n")
    # The stand-in starts a child (as make starts Python, and Python the web server), then hangs.
    code = f"import subprocess, sys, time; subprocess.Popen([sys.executable, {str(child)!r}]); time.sleep(60)"
    outcome = bench_smoke.run_one("bench-hangs", python(code), {"PATH": "/usr/bin:/bin"}, timeout=1)
    assert not outcome.ok and outcome.problem == "no end within 1 s (stopped)"
    assert outcome.seconds < 30
    time.sleep(3.5)
    assert not marker.exists(), "the benchmark's own children are ended with it"


@pytest.mark.parametrize(
    ("returncode", "stdout", "ok"),
    [
        (0, 'progress\n{"a": 1}\n', True),
        (0, '{"a": 1}\n\n', True),  # trailing blank lines aside
        (0, '{"a": 1}\nprogress\n', False),
        (2, '{"a": 1}\n', False),
        (0, '{"a": Infinity}\n', False),
        (0, '"text"\n', False),
        (0, "", False),
    ],
)
def test_the_check_of_a_finished_benchmark(returncode, stdout, ok):
    assert (bench_smoke.last_line_problem(returncode, stdout) == "") is ok


def test_every_bench_target_of_the_makefile_is_run_but_the_runner_itself_and_the_peers(tmp_path):
    targets = bench_smoke.benchmark_targets(REPO_DIR / "Makefile")
    assert "bench-smoke" not in targets and "bench-peer" not in targets
    assert {"bench-import", "bench-queue", "bench-ui", "bench-field-cxc", "bench-sampling-1m"} <= set(targets)
    assert len(targets) == len(set(targets))
    makefile = tmp_path / "Makefile"
    makefile.write_text("bench-a: x\n\tcmd\nbench-b : x\nbench-peer: x\nbench-smoke: x\n# bench-c: no\n")
    assert bench_smoke.benchmark_targets(makefile) == ["bench-a", "bench-b"]


def test_a_benchmark_left_to_the_tests_is_run_there_and_still_runs_by_name():
    known = bench_smoke.benchmark_targets(REPO_DIR / "Makefile")
    assert set(bench_smoke.RUN_BY_TESTS) <= set(known)
    assert bench_smoke.default_targets(["bench-a", "bench-adaptive", "bench-b"]) == ["bench-a", "bench-b"]
    for test_file, script in bench_smoke.RUN_BY_TESTS.values():
        test_text = (REPO_DIR / test_file).read_text()
        assert Path(script).name in test_text and "subprocess.run(" in test_text, test_file
        assert (REPO_DIR / script).is_file(), script


def test_the_smoke_environment_keeps_what_the_caller_set():
    queue = bench_smoke.smoke_env("bench-queue", {"BENCH_SMOKE": "0"})
    assert queue == {"BENCH_SMOKE": "1", "BENCH_FIRST_PORT": "8161"}
    env = bench_smoke.smoke_env("bench-queue", {"BENCH_FIRST_PORT": "9000", "BENCH_SIZES": "10k"})
    assert env == {"BENCH_SMOKE": "1", "BENCH_FIRST_PORT": "9000", "BENCH_SIZES": "10k"}
    assert bench_smoke.smoke_env("bench-ui", {}) == {"BENCH_SMOKE": "1"}


def test_an_unknown_benchmark_is_refused(capsys):
    assert bench_smoke.main(["bench-nothing"]) == 2
    assert "unknown benchmark(s) bench-nothing" in capsys.readouterr().err


def test_bench_smoke_takes_0_or_1_and_sized_picks_the_size(monkeypatch):
    from benchmarks import _common

    monkeypatch.delenv("BENCH_ROWS", raising=False)
    for text, smoke in (("", False), ("0", False), ("1", True)):
        monkeypatch.setenv("BENCH_SMOKE", text)
        assert _common.smoke() is smoke
        assert _common.sized("BENCH_ROWS", 10_000, 200) == (200 if smoke else 10_000)
    monkeypatch.setenv("BENCH_ROWS", "300")
    assert _common.sized("BENCH_ROWS", 10_000, 200) == 300, "the variable wins over both sizes"
    monkeypatch.setenv("BENCH_SMOKE", "yes")
    with pytest.raises(SystemExit, match="BENCH_SMOKE='yes' is neither 0 nor 1"):
        _common.smoke()
    monkeypatch.setenv("BENCH_SMOKE", "1")
    monkeypatch.setenv("BENCH_ROWS", "many")
    with pytest.raises(SystemExit, match="BENCH_ROWS='many' is not a whole number"):
        _common.sized("BENCH_ROWS", 10_000, 200)


def _interval_stand_in(log_dir, name: str, seconds: float) -> list[str]:
    """A benchmark that records when it ran (start and end on the monotonic clock)."""
    path = log_dir / f"{name}.interval"
    return python(
        f"import json, time; start = time.monotonic(); time.sleep({seconds}); "
        f"open({str(path)!r}, 'w').write(json.dumps([start, time.monotonic()])); print('{{}}')"
    )


def _intervals(log_dir, names):
    return {name: json.loads((log_dir / f"{name}.interval").read_text()) for name in names}


def _overlap(first, second) -> bool:
    return first[0] < second[1] and second[0] < first[1]


def test_two_lanes_run_benchmarks_side_by_side_but_never_two_exclusive_ones(tmp_path):
    names = ["bench-a", "bench-heavy-1", "bench-heavy-2", "bench-b"]
    commands = {name: _interval_stand_in(tmp_path, name, 1.0) for name in names}
    lines = []
    summary = bench_smoke.run_all(
        names,
        command_for=commands.__getitem__,
        timeout=60,
        echo=lines.append,
        jobs=3,
        exclusive=frozenset({"bench-heavy-1", "bench-heavy-2"}),
    )
    assert summary["failed"] == [] and list(summary["seconds"]) == names, "the summary keeps the given order"
    assert summary["jobs"] == 3 and summary["wall_s"] < summary["total_s"]
    ran = _intervals(tmp_path, names)
    assert not _overlap(ran["bench-heavy-1"], ran["bench-heavy-2"]), "two exclusive benchmarks ran at once"
    assert _overlap(ran["bench-a"], ran["bench-heavy-1"]), "a lane waited although a benchmark could start"
    assert ran["bench-b"][0] < ran["bench-a"][1], "the third lane waited for heavy-2 instead of taking bench-b"


def test_one_job_runs_them_one_after_another(tmp_path):
    names = ["bench-a", "bench-b"]
    commands = {name: _interval_stand_in(tmp_path, name, 0.3) for name in names}
    bench_smoke.run_all(names, command_for=commands.__getitem__, timeout=60, echo=lambda line: None, jobs=1)
    ran = _intervals(tmp_path, names)
    assert not _overlap(ran["bench-a"], ran["bench-b"])
