"""CSV files that admins open in a spreadsheet (the rater table, lists of raters): a cell
whose text begins like a formula is written escaped, so opening the file runs nothing a
rater typed into their name. Not for the CxC export files, which stay byte-compatible
with the release (the imports refuse such ids instead, ``annotation.core.inputs``).

The escaping is defusedcsv's (a ' before = + - @ | %); cells that begin with a tab or a
carriage return, which it leaves alone, get the same ' here first."""

from __future__ import annotations

from defusedcsv import csv as defused

_LEADS_DEFUSEDCSV_MISSES = ("\t", "\r")


def writer(handle, **options):
    """A ``csv.writer`` over ``handle`` that escapes formula-like text cells; numbers are
    written as they are."""
    return _Writer(defused.writer(handle, **options))


class _Writer:
    def __init__(self, inner):
        self._inner = inner

    def writerow(self, row):
        return self._inner.writerow([_lead(cell) for cell in row])

    def writerows(self, rows):
        for row in rows:
            self.writerow(row)


def _lead(cell):
    if isinstance(cell, str) and cell.startswith(_LEADS_DEFUSEDCSV_MISSES):
        return "'" + cell
    return cell
