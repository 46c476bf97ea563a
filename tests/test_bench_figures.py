"""scripts/bench_figures.py keeps a benchmark's last line as docs/figures/NAME.json and
renders docs/benchmarks-latest.md from those files; the committed page is what render
gives, so it cannot go stale. Pure: no database, no benchmark runs."""

import io
import json

import pytest

from scripts import bench_figures
from tests.conftest import REPO_DIR

SAMPLE_OUTPUT = """\
filling 10,000 open slots
phase 10k_u8: 3 rounds
{"10k_u8": {"raters": 8, "cycles_per_s": 712.1, "p95_ms": 4.83, "errors": 0, "flow": "split|page"}, \
"machine": {"python_workload_ms": 30.7}, "ok": true, "none": null, "runs": [1.5, {"s": 2}], "empty": {}}

"""


def test_a_recorded_run_renders_as_one_table(tmp_path):
    path = bench_figures.record("queue", SAMPLE_OUTPUT, figures_dir=tmp_path)
    assert path == tmp_path / "queue.json"
    assert json.loads(path.read_text())["10k_u8"]["cycles_per_s"] == 712.1
    page = bench_figures.render_text(tmp_path)
    assert page.startswith(bench_figures.HEADER)
    assert page.endswith(
        "## queue\n\nPrinted by `make bench-queue`.\n\n"
        "| figure | value |\n"
        "| --- | --- |\n"
        "| `10k_u8.raters` | 8 |\n"
        "| `10k_u8.cycles_per_s` | 712.1 |\n"
        "| `10k_u8.p95_ms` | 4.83 |\n"
        "| `10k_u8.errors` | 0 |\n"
        "| `10k_u8.flow` | split\\|page |\n"
        "| `machine.python_workload_ms` | 30.7 |\n"
        "| `ok` | true |\n"
        "| `none` | null |\n"
        "| `runs.0` | 1.5 |\n"
        "| `runs.1.s` | 2 |\n"
        "| `empty` | {} |\n"
    )


def test_benchmarks_render_in_name_order_and_an_unknown_name_as_it_is(tmp_path):
    bench_figures.record("queue", '{"a": 1}', figures_dir=tmp_path)
    bench_figures.record("my-own", '{"b": 2.50}', figures_dir=tmp_path)
    page = bench_figures.render_text(tmp_path)
    assert page.index("## my-own\n\n| figure") < page.index("## queue\n\nPrinted by")
    assert "| `b` | 2.5 |" in page


@pytest.mark.parametrize(
    ("name", "output", "problem"),
    [
        ("queue", "", "no output"),
        ("queue", '{"a": 1}\nprogress\n', "the last line is not JSON"),
        ("queue", '{"p95_ms": NaN}', "NaN is not JSON"),
        ("queue", "[1, 2]", "JSON but no object"),
        ("queue", '{"seconds": 0.1, "smoke": true}', "smoke"),
        ("queue", '{"skipped": "no shared data"}', "skipped: no shared data"),
        ("Queue", '{"a": 1}', "is no name"),
        ("../queue", '{"a": 1}', "is no name"),
    ],
)
def test_what_is_refused(tmp_path, name, output, problem):
    with pytest.raises(bench_figures.FiguresError, match=problem):
        bench_figures.record(name, output, figures_dir=tmp_path)
    assert not list(tmp_path.iterdir()), "nothing is written"


def test_the_committed_page_is_what_render_gives():
    figures = REPO_DIR / "docs" / "figures"
    assert sorted(figures.glob("*.json")), "the documentation's figures are recorded"
    committed = (REPO_DIR / "docs" / "benchmarks-latest.md").read_text()
    assert committed == bench_figures.render_text(figures), (
        "docs/benchmarks-latest.md is stale: run `python scripts/bench_figures.py render`"
    )


def test_every_recorded_name_is_a_benchmark_the_makefile_has():
    makefile = (REPO_DIR / "Makefile").read_text()
    for path in (REPO_DIR / "docs" / "figures").glob("*.json"):
        command = bench_figures.COMMANDS.get(path.stem)
        assert command, f"{path.name}: no command known for it"
        target = command.split()[1]
        assert f"\n{target}:" in makefile, f"{path.name}: {target} is no Makefile target"


def test_the_command_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(bench_figures, "REPO_DIR", tmp_path)
    monkeypatch.setattr(bench_figures, "FIGURES_DIR", tmp_path / "figures")
    monkeypatch.setattr(bench_figures, "PAGE", tmp_path / "latest.md")
    monkeypatch.setattr("sys.stdin", io.StringIO('progress\n{"seconds": 1.0}\n'))
    assert bench_figures.main(["record", "import"]) == 0
    assert json.loads((tmp_path / "figures" / "import.json").read_text()) == {"seconds": 1.0}
    assert bench_figures.main(["check"]) == 1, "no page yet"
    assert bench_figures.main(["render"]) == 0
    assert bench_figures.main(["check"]) == 0
    assert "| `seconds` | 1.0 |" in (tmp_path / "latest.md").read_text()
    monkeypatch.setattr("sys.stdin", io.StringIO('{"seconds": 0.1, "smoke": true}\n'))
    assert bench_figures.main(["record", "import"]) == 1
    assert "measure nothing" in capsys.readouterr().err
    assert bench_figures.main(["render", "extra"]) == 2
