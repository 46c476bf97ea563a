"""The PostgreSQL bulk path for pairs sends its columns as array literals."""

import numpy as np
import pytest
from django.db import connection

from annotation.serving.pairs import _array_literal

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


def round_trip(values, sql_type):
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT %s::{sql_type}[]", [_array_literal(values)])
        return cursor.fetchone()[0]


def test_ids_and_nulls_come_back_as_sent():
    ids = [1, None, 3, 9_007_199_254_740_993, None]
    assert round_trip(ids, "bigint") == ids


def test_text_with_quotes_backslashes_commas_and_braces_comes_back_as_sent():
    values = ["c2c_isim", 'say "hi"', "back\\slash", "a,b", "{x}", "NULL", "", " padded "]
    assert round_trip(values, "varchar") == values


def test_numpy_integers_are_ids_and_booleans_are_refused():
    assert round_trip([np.int64(7), np.int32(-2)], "bigint") == [7, -2]
    with pytest.raises(TypeError, match="an id must be an integer, not True"):
        _array_literal([1, True])
    with pytest.raises(TypeError):
        _array_literal([1.5])


def test_an_empty_column_is_an_empty_array():
    assert round_trip([], "bigint") == []
