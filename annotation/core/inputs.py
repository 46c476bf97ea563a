"""Checks shared by everything that reads input from outside (URLs, uploaded files),
made before any value reaches the database. No Django.

PostgreSQL cannot hold a NUL character in text (psycopg2 refuses to send one), and its
integer columns end at 64 bits; SQLite accepts both, so these checks must come first,
or the same bad input would be a 500 on one database and stored on the other.
"""

from __future__ import annotations

import re

# The range of PostgreSQL's bigint (and of Django's BigIntegerField and BigAutoField).
BIGINT_MIN = -(2**63)
BIGINT_MAX = 2**63 - 1

# C0 control characters and DEL: no name, id or parameter in a URL has one.
_URL_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def nul_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored (it holds a NUL character), or None when it can."""
    position = text.find("\x00")
    if position < 0:
        return None
    return f"has a NUL character (U+0000) at character {position + 1}, which stored text cannot hold"


def url_control_problem(text: str) -> str | None:
    """Why ``text`` (a decoded URL path or query value) is refused: it holds a control
    character. None when it has none."""
    match = _URL_CONTROL.search(text)
    if match is None:
        return None
    return f"has the control character U+{ord(match.group()):04X} at character {match.start() + 1}"


def bigint_problem(value: int) -> str | None:
    """Why the whole number ``value`` cannot be stored as a 64-bit id, or None."""
    if BIGINT_MIN <= value <= BIGINT_MAX:
        return None
    return f"is {value}, outside the 64-bit range a stored number can hold ({BIGINT_MIN:,} to {BIGINT_MAX:,})"


# What a spreadsheet reads as the start of a formula (OWASP's list: = + - @, and tab and
# carriage return, after which some spreadsheets look again).
FORMULA_LEADS = ("=", "+", "-", "@", "\t", "\r")


def formula_problem(text: str) -> str | None:
    """Why ``text`` cannot be an id or file name that a CSV file carries unchanged (a
    spreadsheet would run it as a formula), or None when it can."""
    if text.startswith(FORMULA_LEADS):
        return (
            f"begins with {text[0]!r}, which spreadsheets read as the start of a formula; "
            f"ids and file names may not begin with {' '.join(map(repr, FORMULA_LEADS))}"
        )
    return None
