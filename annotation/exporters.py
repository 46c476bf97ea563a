"""Writers for exported datasets: blocks of rated pairs -> CxC CSV, JSONL and Parquet.
Pure (no Django), streaming: each writer appends one block at a time and never holds
more than the block it is given.

The CxC files copy the public release exactly: ``sts_<split>.csv`` with header
``caption1,caption2,agg_score,sampling_method``, ``sis_<split>.csv`` with
``image1,image2,...``, ``sits_<split>.csv`` with ``caption,image,...``; ids as the
release writes them, LF line ends, the score rounded to two decimals in Python's
shortest notation (``2.4``, ``5.0``, ``4.99``). Beside each, ``*_raw.csv`` has one row
per judgment: the two ids, the score, the pseudonymous rater id, the time on the item
and the sampling method (ids first and method last, as in the release's files).

JSONL (``<task>_<split>.jsonl``, one object per pair with its ratings) and Parquet
(``<task>_<split>.parquet`` per pair, ``<task>_<split>_raw.parquet`` per judgment)
carry the same content plus the spread and counts.
"""

from __future__ import annotations

import csv
import hashlib
import math
import re
from dataclasses import dataclass
from json.encoder import encode_basestring as _string
from pathlib import Path
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from annotation.aggregation import PairAggregates

TASKS = ("STS", "SIS", "SITS")
FORMATS = ("cxc", "jsonl", "parquet")
# Column names of the two items, per task, exactly as the public release's headers.
ITEM_COLUMNS: dict[str, tuple[str, str]] = {
    "STS": ("caption1", "caption2"),
    "SIS": ("image1", "image2"),
    "SITS": ("caption", "image"),
}
SCORE_COLUMN = "agg_score"
METHOD_COLUMN = "sampling_method"
RAW_COLUMNS = ("score", "rater_id", "time_on_item_ms")
STATS_COLUMNS = ("mean", "median", "std", "count", "ci95_low", "ci95_high", "positive", "batch_id")
# Rows per Parquet row group (at least; a block is never split).
ROW_GROUP_ROWS = 65_536
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class ExportFormatError(ValueError):
    """An export request the writers cannot carry out (unknown format, task or split name)."""


def parse_formats(text_or_list: str | list[str] | tuple[str, ...]) -> list[str]:
    """``"cxc,jsonl"`` or ``["cxc", "jsonl"]`` -> ``["cxc", "jsonl"]`` (order of FORMATS,
    no repeats). Raises ExportFormatError naming an unknown or missing format."""
    parts = text_or_list.split(",") if isinstance(text_or_list, str) else list(text_or_list)
    wanted = {part.strip().lower() for part in parts if part.strip()}
    if not wanted:
        raise ExportFormatError(f"give at least one format: {', '.join(FORMATS)}")
    unknown = sorted(wanted - set(FORMATS))
    if unknown:
        raise ExportFormatError(f"unknown export format {unknown[0]!r}; choose from {', '.join(FORMATS)}")
    return [name for name in FORMATS if name in wanted]


def file_stem(task: str, split: str) -> str:
    """``sts_val`` for (STS, val). Raises ExportFormatError for a split name that is not
    safe as part of a file name."""
    if task not in ITEM_COLUMNS:
        raise ExportFormatError(f"unknown task {task!r}; expected one of {', '.join(TASKS)}")
    if not _SAFE_NAME.match(split):
        raise ExportFormatError(f"split name {split!r} cannot be part of a file name")
    return f"{task.lower()}_{split}"


def file_names(task: str, split: str, formats: list[str]) -> list[str]:
    """The files one task and split produce in the given formats, in writing order."""
    stem = file_stem(task, split)
    names = []
    if "cxc" in formats:
        names += [f"{stem}.csv", f"{stem}_raw.csv"]
    if "jsonl" in formats:
        names.append(f"{stem}.jsonl")
    if "parquet" in formats:
        names += [f"{stem}.parquet", f"{stem}_raw.parquet"]
    return names


def format_score(value: float) -> str:
    """A rounded score as the release writes it: Python's shortest float text."""
    return repr(float(value))


@dataclass(frozen=True)
class ExportBlock:
    """A run of complete pairs of one task and split, with their ratings.

    Per pair, length n: ``item1``, ``item2`` (external ids in the task's column order),
    ``sampling_method`` (lists of str), ``batch_id: int64 (n,)``, ``stats`` (aggregates
    over the pair's ratings). Per rating, length m, grouped by pair in pair order:
    ``pair_index: int64 (m,)`` (the pair's row), ``rater_id`` (list of pseudonymous
    str), ``score: float64 (m,)``, ``time_on_item_ms: int64 (m,)``.
    """

    item1: list[str]
    item2: list[str]
    sampling_method: list[str]
    batch_id: np.ndarray
    stats: PairAggregates
    pair_index: np.ndarray
    rater_id: list[str]
    score: np.ndarray
    time_on_item_ms: np.ndarray

    @property
    def pairs(self) -> int:
        return len(self.item1)

    @property
    def ratings(self) -> int:
        return len(self.rater_id)


class BlockWriter(Protocol):
    name: str
    rows: int

    def write(self, block: ExportBlock) -> None: ...

    def close(self) -> None: ...


_NEEDS_QUOTING = re.compile(r'[",\r\n]')


def _plain(*columns) -> bool:
    """True when no text field needs CSV quoting: such rows are joined directly (several
    times faster than the csv module, and byte-identical to what it writes for them)."""
    return not any(_NEEDS_QUOTING.search("".join(column)) for column in columns)


class CxcCsvWriter:
    """``<task>_<split>.csv``: one row per pair, the release's four columns."""

    def __init__(self, folder: Path, task: str, split: str) -> None:
        self.name = f"{file_stem(task, split)}.csv"
        self.rows = 0
        self._handle = (folder / self.name).open("w", encoding="utf-8", newline="")
        self._csv = csv.writer(self._handle, lineterminator="\n")
        self._csv.writerow([*ITEM_COLUMNS[task], SCORE_COLUMN, METHOD_COLUMN])

    def write(self, block: ExportBlock) -> None:
        scores = [format_score(value) for value in block.stats.agg_score.tolist()]
        rows = zip(block.item1, block.item2, scores, block.sampling_method, strict=True)
        if _plain(block.item1, block.item2, block.sampling_method):
            self._handle.write("".join(f"{a},{b},{score},{method}\n" for a, b, score, method in rows))
        else:
            self._csv.writerows(rows)
        self.rows += block.pairs

    def close(self) -> None:
        self._handle.close()


class CxcRawCsvWriter:
    """``<task>_<split>_raw.csv``: one row per judgment."""

    def __init__(self, folder: Path, task: str, split: str) -> None:
        self.name = f"{file_stem(task, split)}_raw.csv"
        self.rows = 0
        self._handle = (folder / self.name).open("w", encoding="utf-8", newline="")
        self._csv = csv.writer(self._handle, lineterminator="\n")
        self._csv.writerow([*ITEM_COLUMNS[task], *RAW_COLUMNS, METHOD_COLUMN])

    def write(self, block: ExportBlock) -> None:
        at = block.pair_index.tolist()
        item1, item2, method = block.item1, block.item2, block.sampling_method
        rows = zip(
            [item1[i] for i in at],
            [item2[i] for i in at],
            [repr(value) for value in block.score.tolist()],
            block.rater_id,
            block.time_on_item_ms.tolist(),
            [method[i] for i in at],
            strict=True,
        )
        if _plain(item1, item2, method, set(block.rater_id)):
            self._handle.write("".join(f"{a},{b},{score},{rater},{ms},{m}\n" for a, b, score, rater, ms, m in rows))
        else:
            self._csv.writerows(rows)
        self.rows += block.ratings

    def close(self) -> None:
        self._handle.close()


def _json_number(value: float) -> str:
    # JSON has no NaN: a statistic that does not exist (one rating) is null.
    return "null" if math.isnan(value) else repr(value)


class JsonlWriter:
    """``<task>_<split>.jsonl``: one object per pair with its statistics and ratings."""

    def __init__(self, folder: Path, task: str, split: str) -> None:
        self.name = f"{file_stem(task, split)}.jsonl"
        self.rows = 0
        self._columns = tuple(_string(column) for column in ITEM_COLUMNS[task])
        self._handle = (folder / self.name).open("w", encoding="utf-8", newline="\n")

    def write(self, block: ExportBlock) -> None:
        stats = block.stats
        first, second = self._columns
        bounds = np.searchsorted(block.pair_index, np.arange(block.pairs + 1)).tolist()
        raters, scores, times = block.rater_id, block.score.tolist(), block.time_on_item_ms.tolist()
        columns = zip(
            block.item1,
            block.item2,
            stats.agg_score.tolist(),
            block.sampling_method,
            stats.mean.tolist(),
            stats.median.tolist(),
            stats.std.tolist(),
            stats.count.tolist(),
            stats.ci_low.tolist(),
            stats.ci_high.tolist(),
            stats.positive.tolist(),
            block.batch_id.tolist(),
            strict=True,
        )
        # Lines are formatted directly (twice as fast as json.dumps per record): strings go
        # through the json module's escaping, numbers are finite floats (repr) or ints.
        quoted = {rater: _string(rater) for rater in set(raters)}
        rated = [
            f'{{"rater_id": {quoted[rater]}, "score": {score!r}, "time_on_item_ms": {ms}}}'
            for rater, score, ms in zip(raters, scores, times, strict=True)
        ]
        lines = []
        for row, (item1, item2, agg, method, mean, median, std, count, low, high, positive, batch) in enumerate(
            columns
        ):
            lines.append(
                f"{{{first}: {_string(item1)}, {second}: {_string(item2)}, "
                f'"{SCORE_COLUMN}": {agg!r}, "{METHOD_COLUMN}": {_string(method)}, '
                f'"mean": {mean!r}, "median": {median!r}, "std": {_json_number(std)}, "count": {count}, '
                f'"ci95_low": {_json_number(low)}, "ci95_high": {_json_number(high)}, '
                f'"positive": {"true" if positive else "false"}, "batch_id": {batch}, '
                f'"ratings": [{", ".join(rated[bounds[row] : bounds[row + 1]])}]}}'
            )
        if lines:
            self._handle.write("\n".join(lines))
            self._handle.write("\n")
        self.rows += block.pairs

    def close(self) -> None:
        self._handle.close()


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


class ParquetPairsWriter:
    """``<task>_<split>.parquet``: one row per pair."""

    def __init__(self, folder: Path, task: str, split: str) -> None:
        self.name = f"{file_stem(task, split)}.parquet"
        self.rows = 0
        self._schema = pairs_schema(task)
        self._writer = _RowGroupBuffer(folder / self.name, self._schema)

    def write(self, block: ExportBlock) -> None:
        if not block.pairs:
            return
        stats = block.stats
        table = pa.Table.from_arrays(
            [
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
                pa.array(block.batch_id, type=pa.int64()),
            ],
            schema=self._schema,
        )
        self._writer.add(table)
        self.rows += block.pairs

    def close(self) -> None:
        self._writer.close()


class ParquetRawWriter:
    """``<task>_<split>_raw.parquet``: one row per judgment."""

    def __init__(self, folder: Path, task: str, split: str) -> None:
        self.name = f"{file_stem(task, split)}_raw.parquet"
        self.rows = 0
        self._schema = raw_schema(task)
        self._writer = _RowGroupBuffer(folder / self.name, self._schema)

    def write(self, block: ExportBlock) -> None:
        if not block.ratings:
            return
        at = pa.array(block.pair_index, type=pa.int64())
        table = pa.Table.from_arrays(
            [
                pa.array(block.item1, type=pa.string()).take(at),
                pa.array(block.item2, type=pa.string()).take(at),
                pa.array(block.score, type=pa.float64()),
                pa.array(block.rater_id, type=pa.string()),
                pa.array(block.time_on_item_ms, type=pa.int64()),
                pa.array(block.sampling_method, type=pa.string()).take(at),
            ],
            schema=self._schema,
        )
        self._writer.add(table)
        self.rows += block.ratings

    def close(self) -> None:
        self._writer.close()


def open_writers(folder: Path, task: str, split: str, formats: list[str]) -> list[BlockWriter]:
    """Open the writers of one task and split in ``folder``, in :func:`file_names` order.
    The caller closes them (also on failure)."""
    classes: list[type] = []
    if "cxc" in formats:
        classes += [CxcCsvWriter, CxcRawCsvWriter]
    if "jsonl" in formats:
        classes.append(JsonlWriter)
    if "parquet" in formats:
        classes += [ParquetPairsWriter, ParquetRawWriter]
    writers: list[BlockWriter] = []
    try:
        for cls in classes:
            writers.append(cls(folder, task, split))
    except BaseException:
        for writer in writers:
            writer.close()
        raise
    return writers


def sha256_file(path: Path, block_size: int = 1 << 20) -> str:
    """Hex SHA-256 of a file, read in blocks (flat memory)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(block_size):
            digest.update(chunk)
    return digest.hexdigest()
