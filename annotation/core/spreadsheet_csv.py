"""The one CSV writer: every CSV file the app writes goes through ``writer`` (the export's
files and its zip, the admin's and researcher's downloads, the participants and approval
lists, the evaluation's comparison). Someone opens each of them in a spreadsheet, so a
text cell whose text begins like a formula is written escaped: opening the file runs
nothing a participant typed into an answer, a platform put into an id or an admin into a
name. ``tests/annotation/core/test_csv_endpoints.py`` walks every endpoint that serves a
CSV with hostile text in each free-text field that reaches it.

The escaping is defusedcsv's: a ' before a text cell that begins with = + - @ | % (and
``|`` inside it escaped), except a plain number such as ``-1.5`` or ``-2``, which stays a
number; numbers (int, float) are written as they are. Cells that begin with a tab or a
carriage return (OWASP's list), which it leaves alone, get the same ' here first.

The CxC files stay byte-identical with the release: their ids never begin like that (the
imports refuse such ids, ``annotation.core.inputs.formula_problem``) and their scores
are non-negative numbers, so the escaping never changes them."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from defusedcsv import csv as defused

# OWASP's formula leads, and defusedcsv's | and %: what a reader of our files may check.
FORMULA_LEADS = ("=", "+", "-", "@", "\t", "\r", "|", "%")
_LEADS_DEFUSEDCSV_MISSES = ("\t", "\r")
# A text cell that can be joined as it is: nothing to quote and no formula lead. Checked
# over a whole column at once (cells joined by \x1f, which no such cell needs), in C.
_JOINER = "\x1f"
_NEEDS_CARE = re.compile(r'[",\r\n]|\x1f[=+\-@|%\t]')


def writer(handle, **options) -> SpreadsheetWriter:
    """A ``csv.writer`` over ``handle`` that escapes formula-like text cells; numbers are
    written as they are. ``options``: the csv module's format parameters."""
    return SpreadsheetWriter(handle, **options)


class SpreadsheetWriter:
    def __init__(self, handle, **options):
        self._handle = handle
        self._inner = defused.writer(handle, **options)
        # The joined fast path writes what the csv module writes in the default dialect.
        self._joinable = set(options) <= {"lineterminator"}
        self._line_end = options.get("lineterminator", "\r\n")

    def writerow(self, row):
        return self._inner.writerow([_lead(cell) for cell in row])

    def writerows(self, rows):
        for row in rows:
            self.writerow(row)

    def write_block(self, rows: Iterable[Sequence], text_columns: Sequence[Sequence[str]]) -> None:
        """Write ``rows`` (a block of a large file): joined directly, several times
        faster than cell by cell and byte-identical, when no cell of ``text_columns``
        needs quoting or escaping. ``text_columns``: every column of text the rows take
        their cells from (the other cells are numbers, or text of digits and a point);
        a caller that leaves one out could write a formula unescaped."""
        if self._joinable and not any(_NEEDS_CARE.search(_JOINER + _JOINER.join(column)) for column in text_columns):
            end = self._line_end
            self._handle.write("".join(",".join(map(str, row)) + end for row in rows))
        else:
            self.writerows(rows)


def _lead(cell):
    if isinstance(cell, str) and cell.startswith(_LEADS_DEFUSEDCSV_MISSES):
        return "'" + cell
    return cell
