"""The hot-path SQL names only tables and columns the models have, and spells none of
them by hand: every name comes from the models' ``_meta``, quoted. Needs no database
(rendering only asks the connection how it quotes)."""

from __future__ import annotations

import re

import pytest
from django.db import connection

from annotation.serving import sql_text, statements

QUOTED = re.compile(r'"([^"]+)"')
PARAMETER = re.compile(r"%\((\w+)\)s")


def model_names() -> tuple[set[str], set[str]]:
    """(tables, columns) of the models the statements read and write."""
    tables = {model._meta.db_table for model in sql_text.TABLES.values()}
    columns = {field.column for model in sql_text.TABLES.values() for field in model._meta.concrete_fields}
    return tables, columns


@pytest.mark.parametrize("statement", statements.all_statements(), ids=lambda s: s.name)
def test_every_quoted_name_is_a_model_table_or_column(statement):
    tables, columns = model_names()
    quoted = set(QUOTED.findall(statement.sql))
    assert quoted, "the statement quotes no names"
    assert quoted <= tables | columns, quoted - (tables | columns)
    assert {"annotation_ratingslot", "id"} <= quoted


@pytest.mark.parametrize("statement", statements.all_statements(), ids=lambda s: s.name)
def test_no_table_or_column_is_spelled_by_hand(statement):
    tables, columns = model_names()
    bare = PARAMETER.sub(" ", QUOTED.sub(" ", statement.sql))
    spelled = set(re.findall(r"\b[a-z_]+\b", bare)) & (tables | columns)
    assert not spelled, f"{statement.name} names {sorted(spelled)} without _meta"


def test_statement_parameters_match_their_sql():
    names = [statement.name for statement in statements.all_statements()]
    assert len(names) == len(set(names)), names
    for statement in statements.all_statements():
        assert set(PARAMETER.findall(statement.sql)) == {name for name, _ in statement.params}, statement.name
        statement.positional()  # raises when a parameter is missing from params


def test_an_unknown_field_fails_loudly():
    from django.core.exceptions import FieldDoesNotExist

    with pytest.raises(FieldDoesNotExist):
        sql_text.render_sql("SELECT s.{slot.no_such_field} FROM {slot} s")
    assert sql_text.render_sql("{slot}.{slot.pair}") == (
        f"{connection.ops.quote_name('annotation_ratingslot')}.{connection.ops.quote_name('pair_id')}"
    )
