"""Numeric columns of a PostgreSQL query straight into numpy, through ``COPY ... TO STDOUT
(FORMAT binary)``: rows arrive as fixed-width big-endian records that numpy reads in
blocks as they stream, so a million ratings never become Python objects (fetching them
as tuples took several times longer and three times the memory).

Every column must be 8 bytes wide and never NULL (cast in the query: ``::int8``,
``::float8``); a NULL or another width raises instead of misreading.
"""

from __future__ import annotations

import numpy as np

_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
_HEADER = len(_SIGNATURE) + 8  # flags (int32) and header extension length (int32)
_TRAILER = b"\xff\xff"
# Bytes parsed at a time: bounds the buffer beside the growing columns.
BLOCK_BYTES = 8 << 20


class CopyColumnsError(ValueError):
    """The COPY stream is not the fixed-width, non-NULL rows it was asked for."""


class _ColumnSink:
    """A file-like ``write`` target for psycopg2's ``copy_expert`` that parses whole
    records of ``dtypes`` (one numpy dtype char per column, ``"i"`` int64 or ``"f"``
    float64) block by block into lists of column arrays."""

    def __init__(self, dtypes: str):
        fields = [("count", ">i2")]
        for number, code in enumerate(dtypes):
            fields += [(f"len{number}", ">i4"), (f"c{number}", ">i8" if code == "i" else ">f8")]
        self.record = np.dtype(fields)
        self.columns = len(dtypes)
        self.parts: list[list[np.ndarray]] = [[] for _ in dtypes]
        self.buffer = bytearray()
        self.header_seen = False

    def write(self, data: bytes) -> int:
        self.buffer += data
        if len(self.buffer) >= BLOCK_BYTES:
            self._parse()
        return len(data)

    def _parse(self) -> None:
        if not self.header_seen:
            if len(self.buffer) < _HEADER:
                return
            if bytes(self.buffer[: len(_SIGNATURE)]) != _SIGNATURE:
                raise CopyColumnsError("not a binary COPY stream")
            extension = int.from_bytes(self.buffer[_HEADER - 4 : _HEADER], "big")
            del self.buffer[: _HEADER + extension]
            self.header_seen = True
        whole = len(self.buffer) // self.record.itemsize
        if not whole:
            return
        size = whole * self.record.itemsize
        # A copy, so the buffer can shrink: numpy views would pin it.
        records = np.frombuffer(bytes(self.buffer[:size]), dtype=self.record)
        del self.buffer[:size]
        lengths = np.stack([records[f"len{i}"] for i in range(self.columns)])
        if (records["count"] != self.columns).any() or (lengths != 8).any():
            raise CopyColumnsError("a row has a NULL, another column count, or a column not 8 bytes wide")
        for number in range(self.columns):
            self.parts[number].append(records[f"c{number}"].astype(records.dtype[f"c{number}"].newbyteorder("=")))

    def finish(self) -> list[np.ndarray]:
        self._parse()
        if not self.header_seen or bytes(self.buffer) != _TRAILER:
            raise CopyColumnsError("the COPY stream ended in the middle of a row")
        return [np.concatenate(parts) if parts else np.zeros(0) for parts in self.parts]


def copy_columns(cursor, sql: str, dtypes: str) -> list[np.ndarray]:
    """Run ``sql`` (a SELECT, parameters already bound) through a binary COPY on a
    psycopg2 ``cursor``; one array per column: int64 for ``"i"``, float64 for ``"f"``."""
    sink = _ColumnSink(dtypes)
    cursor.copy_expert(f"COPY ({sql}) TO STDOUT WITH (FORMAT binary)", sink)
    columns = sink.finish()
    return [
        column.astype(np.int64 if code == "i" else np.float64, copy=False)
        for column, code in zip(columns, dtypes, strict=True)
    ]
