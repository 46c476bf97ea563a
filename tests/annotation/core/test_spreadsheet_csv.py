"""The one CSV writer: which cells it escapes and which it leaves (numbers stay numbers),
its joined fast path byte-identical with writing cell by cell, and no other CSV writer in
the app's code. Pure: no database."""

from __future__ import annotations

import ast
import csv
import io
import random
from pathlib import Path

import pytest

from annotation.core import spreadsheet_csv

REPO = Path(__file__).resolve().parents[3]
APP_FOLDERS = ("annotation", "sampling", "frontend", "config", "web")


def written(*rows, **options) -> str:
    out = io.StringIO()
    spreadsheet_csv.writer(out, lineterminator="\n", **options).writerows(rows)
    return out.getvalue()


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("=1+2", "'=1+2"),
        ("+1+2", "'+1+2"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1+2", "'\t=1+2"),
        ("\r=1+2", "'\r=1+2"),
        ("%0A=1", "'%0A=1"),
        ("|calc", "'\\|calc"),
        ("-1.5", "-1.5"),  # a number in text stays a number
        ("-2", "-2"),
        (-0.25, "-0.25"),
        (-3, "-3"),
        ("a=b", "a=b"),
        ("", ""),
    ],
)
def test_a_cell_that_begins_like_a_formula_is_escaped_and_a_number_is_not(cell, expected):
    assert written([cell, "x"]) == f"{expected},x\n"


def test_the_joined_block_is_byte_identical_with_the_cell_by_cell_writer():
    generator = random.Random(7)
    alphabet = 'ab1_:.=+-@ ,"\n\t|%'
    for _ in range(300):
        texts = ["".join(generator.choice(alphabet) for _ in range(generator.randint(0, 6))) for _ in range(4)]
        numbers = [generator.choice([1, 0.5, 2.25, 4000, 5.0]) for _ in range(4)]
        rows = list(zip(texts, numbers, strict=True))
        block, plain = io.StringIO(), io.StringIO()
        spreadsheet_csv.writer(block, lineterminator="\n").write_block(rows, (texts,))
        spreadsheet_csv.writer(plain, lineterminator="\n").writerows(rows)
        assert block.getvalue() == plain.getvalue(), rows


def test_a_block_with_a_formula_cell_is_escaped_even_without_anything_to_quote():
    out = io.StringIO()
    rows = [("COCO_val2014:sentid:1", "2.5"), ("@SUM(1+1)", "3.0")]
    spreadsheet_csv.writer(out, lineterminator="\n").write_block(rows, ([row[0] for row in rows],))
    assert list(csv.reader(io.StringIO(out.getvalue()))) == [["COCO_val2014:sentid:1", "2.5"], ["'@SUM(1+1)", "3.0"]]


def _csv_writers(path: Path) -> list[str]:
    """Where ``path`` makes a CSV writer or imports one other than the one module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Attribute) and node.attr in ("writer", "DictWriter"):
            if isinstance(node.value, ast.Name) and node.value.id in ("csv", "defused", "defusedcsv"):
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: {node.value.id}.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("csv", "defusedcsv"):
            names = [alias.name for alias in node.names]
            if node.module.startswith("defusedcsv") or {"writer", "DictWriter"} & set(names):
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: from {node.module} import {', '.join(names)}")
    return found


def test_no_csv_is_written_but_through_the_one_writer():
    one = REPO / "annotation" / "core" / "spreadsheet_csv.py"
    offenders = [
        found
        for folder in APP_FOLDERS
        for path in sorted((REPO / folder).rglob("*.py"))
        if path != one and "migrations" not in path.parts
        for found in _csv_writers(path)
    ]
    assert offenders == [], "write CSV through annotation.core.spreadsheet_csv.writer"
