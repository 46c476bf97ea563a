"""Reading recorded SQL: statements split and normalized, and what each one acts on.

Pure text work (no Django, no database): the linter's rules (``rules``) ask a statement
for its verb, its table and, for ``ALTER TABLE``, its actions. Only the statement forms a
rule judges are told apart; anything else reads as ``other`` and is never refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sqlparse

# A name as PostgreSQL writes it: plain or double-quoted, maybe schema-qualified.
_NAME = r'(?:"[^"]+"|[A-Za-z_][A-Za-z0-9_$]*)(?:\.(?:"[^"]+"|[A-Za-z_][A-Za-z0-9_$]*))?'

_SUBJECTS = (
    (
        "create table",
        re.compile(
            rf"^CREATE (?:(?:GLOBAL |LOCAL )?(?:TEMP|TEMPORARY|UNLOGGED) )?TABLE (?:IF NOT EXISTS )?({_NAME})", re.I
        ),
    ),
    ("alter table", re.compile(rf"^ALTER TABLE (?:IF EXISTS )?(?:ONLY )?({_NAME})", re.I)),
    (
        "create index",
        re.compile(
            rf"^CREATE (?:UNIQUE )?INDEX (?:CONCURRENTLY )?(?:IF NOT EXISTS )?(?:{_NAME} )?ON (?:ONLY )?({_NAME})", re.I
        ),
    ),
    ("drop index", re.compile(rf"^DROP INDEX (?:CONCURRENTLY )?(?:IF EXISTS )?({_NAME})", re.I)),
    ("trigger", re.compile(rf"^(?:CREATE (?:OR REPLACE )?(?:CONSTRAINT )?|DROP )TRIGGER .*? ON ({_NAME})", re.I)),
    ("update", re.compile(rf"^UPDATE (?:ONLY )?({_NAME})", re.I)),
    ("delete", re.compile(rf"^DELETE FROM (?:ONLY )?({_NAME})", re.I)),
    ("insert", re.compile(rf"^INSERT INTO ({_NAME})", re.I)),
    ("lock", re.compile(rf"^LOCK (?:TABLE )?(?:ONLY )?({_NAME})", re.I)),
    ("rewrite", re.compile(rf"^(?:VACUUM (?:\(.*?FULL.*?\)|FULL)(?: VERBOSE)?|CLUSTER(?: VERBOSE)?) ({_NAME})", re.I)),
    ("reindex", re.compile(rf"^REINDEX (?:\(.*?\) )?TABLE ({_NAME})", re.I)),
)


@dataclass(frozen=True)
class Statement:
    """One SQL statement as a migration ran it. ``text`` is normalized (comments gone,
    whitespace runs one space); ``verb`` one of the ``_SUBJECTS`` names or ``other``;
    ``table`` the unquoted table name it acts on ("" when none is read; for ``drop
    index``, the index's table as the recording looked it up)."""

    text: str
    verb: str
    table: str

    @property
    def concurrently(self) -> bool:
        return bool(re.match(r"^(?:CREATE (?:UNIQUE )?|DROP )INDEX CONCURRENTLY\b", self.text, re.I))


def unquote(name: str) -> str:
    """A table's bare name: quotes and a ``public.`` schema dropped, plain names lower-cased
    (as PostgreSQL folds them)."""
    parts = [part[1:-1] if part.startswith('"') else part.lower() for part in re.findall(r'"[^"]+"|[^.]+', name)]
    if len(parts) == 2 and parts[0] == "public":
        parts = parts[1:]
    return ".".join(parts)


def normalize(sql: str) -> str:
    """``sql`` without comments, its whitespace runs made one space, no final semicolon."""
    text = sqlparse.format(sql, strip_comments=True)
    return re.sub(r"\s+", " ", text).strip().rstrip(";").strip()


def split(sql: str) -> list[str]:
    """The statements of ``sql`` (several may come in one string, dollar-quoted function
    bodies kept whole), each normalized; empty ones dropped."""
    statements = (normalize(part) for part in sqlparse.split(sql))
    return [statement for statement in statements if statement]


def read(text: str, index_tables: dict[str, str] | None = None) -> Statement:
    """The statement ``text`` (normalized) with its verb and table. ``index_tables``: the
    table of each index a ``DROP INDEX`` names, as looked up before it ran."""
    for verb, pattern in _SUBJECTS:
        found = pattern.match(text)
        if found:
            table = unquote(found[1])
            if verb == "drop index":
                table = (index_tables or {}).get(table, "")
            return Statement(text, verb, table)
    return Statement(text, "other", "")


def top_level_parts(text: str, separator: str = ",") -> list[str]:
    """``text`` split at ``separator`` where it stands outside parentheses and quotes."""
    parts, depth, quote, start = [], 0, "", 0
    for position, char in enumerate(text):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == separator and depth == 0:
            parts.append(text[start:position].strip())
            start = position + 1
    parts.append(text[start:].strip())
    return [part for part in parts if part]


def alter_actions(statement: Statement) -> list[str]:
    """The comma-separated actions of an ``ALTER TABLE`` (``ADD COLUMN ...``, ``ALTER
    COLUMN ... TYPE ...``); empty for any other statement."""
    if statement.verb != "alter table":
        return []
    head = re.match(rf"^ALTER TABLE (?:IF EXISTS )?(?:ONLY )?{_NAME} ", statement.text, re.I)
    return top_level_parts(statement.text[head.end() :]) if head else []


def called_functions(expression: str) -> set[str]:
    """Names (lower-case, schema dropped) called in ``expression``: ``clock_timestamp()``,
    ``pg_catalog.random()``; string literals are not read."""
    without_strings = re.sub(r"'(?:[^']|'')*'", "''", expression)
    return {name.split(".")[-1].strip('"').lower() for name in re.findall(rf"({_NAME})\s*\(", without_strings)}


def outside_parentheses(text: str) -> str:
    """``text`` with what stands inside parentheses or quotes left out (``()`` and ``''``
    stay): the statement's top level, where its own clauses are."""
    kept, depth, quote = [], 0, ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
            if not quote:
                kept.append(char)
        elif char in "'\"":
            quote = char
            if depth == 0:
                kept.append(char)
        elif char == "(":
            depth += 1
            if depth == 1:
                kept.append(char)
        elif char == ")":
            depth -= 1
            if depth == 0:
                kept.append(char)
        elif depth == 0:
            kept.append(char)
    return "".join(kept)


def is_backfill(statement: Statement) -> bool:
    """Whether a data statement's time grows with a table: an INSERT that selects its
    rows, an UPDATE or DELETE without a WHERE clause or that reads another table (``FROM``,
    ``USING``, a subquery)."""
    if statement.verb == "insert":
        return bool(re.search(r"\bSELECT\b", statement.text, re.I))
    if statement.verb not in ("update", "delete"):
        return False
    top = outside_parentheses(statement.text)
    joined = re.search(r"\bFROM\b", top[len("DELETE FROM") :] if statement.verb == "delete" else top, re.I)
    return not re.search(r"\bWHERE\b", top, re.I) or bool(
        joined or re.search(r"\bUSING\b|\bSELECT\b", statement.text, re.I)
    )
