"""Numeric columns of a PostgreSQL query straight into numpy, through ``COPY ... TO STDOUT
(FORMAT binary)``: rows arrive as fixed-width big-endian records that numpy reads in
place, so a million ratings never become Python objects (fetching them as tuples took
several times longer and three times the memory).

The stream is taken whole into an in-memory buffer whose ``write`` is C code: psycopg2
writes once per row, and a Python ``write`` cost more than everything else together.
At CxC scale the buffer is about 100 MiB for the moment the columns are filled from it.

Every column must be 8 bytes wide and never NULL (cast in the query: ``::int8``,
``::float8``); a NULL or another width raises instead of misreading.
"""

from __future__ import annotations

import io

import numpy as np

_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
_HEADER = len(_SIGNATURE) + 8  # flags (int32) and header extension length (int32)
_TRAILER = b"\xff\xff"
# Records converted at a time: bounds the temporary arrays beside the columns.
BLOCK_RECORDS = 100_000


class CopyColumnsError(ValueError):
    """The COPY stream is not the fixed-width, non-NULL rows it was asked for."""


def _record(dtypes: str) -> np.dtype:
    fields = [("count", ">i2")]
    for number, code in enumerate(dtypes):
        fields += [(f"len{number}", ">i4"), (f"c{number}", ">i8" if code == "i" else ">f8")]
    return np.dtype(fields)


def parse_columns(stream: memoryview, dtypes: str) -> list[np.ndarray]:
    """Columns of a whole binary COPY stream of records of ``dtypes`` (one char per
    column: ``"i"`` int64, ``"f"`` float64). Raises CopyColumnsError on anything else."""
    if len(stream) < _HEADER + len(_TRAILER) or bytes(stream[: len(_SIGNATURE)]) != _SIGNATURE:
        raise CopyColumnsError("not a binary COPY stream")
    start = _HEADER + int.from_bytes(stream[_HEADER - 4 : _HEADER], "big")
    record = _record(dtypes)
    body = len(stream) - start - len(_TRAILER)
    if body < 0 or body % record.itemsize or bytes(stream[len(stream) - len(_TRAILER) :]) != _TRAILER:
        raise CopyColumnsError("rows are not the asked columns, each 8 bytes wide and not NULL")
    count = body // record.itemsize
    records = np.frombuffer(stream, dtype=record, count=count, offset=start)
    columns = [np.empty(count, dtype=np.int64 if code == "i" else np.float64) for code in dtypes]
    for low in range(0, count, BLOCK_RECORDS):
        block = records[low : low + BLOCK_RECORDS]
        lengths = np.stack([block[f"len{i}"] for i in range(len(dtypes))])
        if (block["count"] != len(dtypes)).any() or (lengths != 8).any():
            raise CopyColumnsError("a row has a NULL, another column count, or a column not 8 bytes wide")
        for number, column in enumerate(columns):
            column[low : low + block.shape[0]] = block[f"c{number}"]
    return columns


def copy_columns(cursor, sql: str, dtypes: str) -> list[np.ndarray]:
    """Run ``sql`` (a SELECT, parameters already bound) through a binary COPY on a
    psycopg2 ``cursor``; one array per column: int64 for ``"i"``, float64 for ``"f"``."""
    buffer = io.BytesIO()
    cursor.copy_expert(f"COPY ({sql}) TO STDOUT WITH (FORMAT binary)", buffer)
    with buffer.getbuffer() as stream:
        return parse_columns(stream, dtypes)
