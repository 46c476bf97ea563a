"""Parquet writers for exported datasets: ``<task>_<split>.parquet`` (one row per pair)
and ``<task>_<split>_raw.parquet`` (one row per judgment). Pure (no Django), streaming:
blocks are gathered into row groups of at least ``ROW_GROUP_ROWS`` rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from annotation.core.cxc import ITEM_COLUMNS, METHOD_COLUMN, SCORE_COLUMN
from annotation.export.formats import ExportBlock, file_stem

# Rows per Parquet row group (at least; a block is never split).
ROW_GROUP_ROWS = 65_536


def pairs_schema(task: str) -> pa.Schema:
    first, second = ITEM_COLUMNS[task]
    return pa.schema(
        [
            (first, pa.string()),
            (second, pa.string()),
            (SCORE_COLUMN, pa.float64()),
            (METHOD_COLUMN, pa.string()),
            ("mean", pa.float64()),
            ("median", pa.float64()),
            ("std", pa.float64()),
            ("count", pa.int32()),
            ("ci95_low", pa.float64()),
            ("ci95_high", pa.float64()),
            ("positive", pa.bool_()),
            ("model_score", pa.float64()),
            ("model_ci95_low", pa.float64()),
            ("model_ci95_high", pa.float64()),
            ("batch_id", pa.int64()),
        ]
    )


def raw_schema(task: str) -> pa.Schema:
    first, second = ITEM_COLUMNS[task]
    return pa.schema(
        [
            (first, pa.string()),
            (second, pa.string()),
            ("score", pa.float64()),
            ("rater_id", pa.string()),
            ("time_on_item_ms", pa.int64()),
            (METHOD_COLUMN, pa.string()),
        ]
    )


def _floats(values: np.ndarray) -> pa.Array:
    # Parquet has real nulls: a statistic that does not exist is null, not NaN.
    return pa.array(values, type=pa.float64(), mask=np.isnan(values))


def _model_columns(block: ExportBlock) -> list[pa.Array]:
    if block.model is None:
        return [pa.nulls(block.pairs, type=pa.float64())] * 3
    return [pa.array(values, type=pa.float64()) for values in (block.model.score, block.model.low, block.model.high)]


class _RowGroupBuffer:
    """Collects small Arrow tables and writes them as row groups of at least
    ``ROW_GROUP_ROWS`` rows, so row groups stay readable-sized whatever the block size
    while memory holds at most one row group of compact Arrow columns."""

    def __init__(self, path: Path, schema: pa.Schema) -> None:
        self._writer = pq.ParquetWriter(path, schema, compression="zstd")
        self._pending: list[pa.Table] = []
        self._pending_rows = 0

    def add(self, table: pa.Table) -> None:
        self._pending.append(table)
        self._pending_rows += table.num_rows
        if self._pending_rows >= ROW_GROUP_ROWS:
            self._flush()

    def _flush(self) -> None:
        if self._pending:
            self._writer.write_table(pa.concat_tables(self._pending), row_group_size=max(self._pending_rows, 1))
        self._pending, self._pending_rows = [], 0

    def close(self) -> None:
        try:
            self._flush()
        finally:
            self._writer.close()


class _ParquetTableWriter:
    """One Parquet file of an export: a subclass names its file ``<stem><suffix>``, gives
    its schema, how many rows a block adds and the block's columns in schema order."""

    suffix: str

    def __init__(self, folder: Path, task: str, split: str) -> None:
        self.name = f"{file_stem(task, split)}{self.suffix}"
        self.rows = 0
        self._schema = self.schema(task)
        self._writer = _RowGroupBuffer(folder / self.name, self._schema)

    @staticmethod
    def schema(task: str) -> pa.Schema:
        raise NotImplementedError

    @staticmethod
    def block_rows(block: ExportBlock) -> int:
        raise NotImplementedError

    @staticmethod
    def columns(block: ExportBlock) -> list[pa.Array]:
        raise NotImplementedError

    def write(self, block: ExportBlock) -> None:
        rows = self.block_rows(block)
        if not rows:
            return
        self._writer.add(pa.Table.from_arrays(self.columns(block), schema=self._schema))
        self.rows += rows

    def close(self) -> None:
        self._writer.close()


class ParquetPairsWriter(_ParquetTableWriter):
    """``<task>_<split>.parquet``: one row per pair."""

    suffix = ".parquet"
    schema = staticmethod(pairs_schema)

    @staticmethod
    def block_rows(block: ExportBlock) -> int:
        return block.pairs

    @staticmethod
    def columns(block: ExportBlock) -> list[pa.Array]:
        stats = block.stats
        return [
            pa.array(block.item1, type=pa.string()),
            pa.array(block.item2, type=pa.string()),
            pa.array(stats.agg_score, type=pa.float64()),
            pa.array(block.sampling_method, type=pa.string()),
            pa.array(stats.mean, type=pa.float64()),
            pa.array(stats.median, type=pa.float64()),
            _floats(stats.std),
            pa.array(stats.count, type=pa.int32()),
            _floats(stats.ci_low),
            _floats(stats.ci_high),
            pa.array(stats.positive, type=pa.bool_()),
            *_model_columns(block),
            pa.array(block.batch_id, type=pa.int64()),
        ]


class ParquetRawWriter(_ParquetTableWriter):
    """``<task>_<split>_raw.parquet``: one row per judgment."""

    suffix = "_raw.parquet"
    schema = staticmethod(raw_schema)

    @staticmethod
    def block_rows(block: ExportBlock) -> int:
        return block.ratings

    @staticmethod
    def columns(block: ExportBlock) -> list[pa.Array]:
        at = pa.array(block.pair_index, type=pa.int64())
        return [
            pa.array(block.item1, type=pa.string()).take(at),
            pa.array(block.item2, type=pa.string()).take(at),
            pa.array(block.score, type=pa.float64()),
            pa.array(block.rater_id, type=pa.string()),
            pa.array(block.time_on_item_ms, type=pa.int64()),
            pa.array(block.sampling_method, type=pa.string()).take(at),
        ]
