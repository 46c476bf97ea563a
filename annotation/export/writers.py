"""Writers for exported datasets: blocks of rated pairs -> CxC CSV and JSONL files
(Parquet in :mod:`annotation.export.parquet`). Pure (no Django), streaming: each writer
appends one block at a time and never holds more than the block it is given.

The CxC files copy the public release exactly (see :mod:`annotation.export.formats`):
ids as the release writes them, LF line ends, the score rounded to two decimals in
Python's shortest notation (``2.4``, ``5.0``, ``4.99``). Beside each, ``*_raw.csv`` has
one row per judgment: the two ids, the score, the pseudonymous rater id, the time on the
item and the sampling method (ids first and method last, as in the release's files).
Both go through the app's one CSV writer (:mod:`annotation.core.spreadsheet_csv`), whose
escaping never changes an id the imports accept.

JSONL (``<task>_<split>.jsonl``) has one object per pair with its statistics and ratings.
"""

from __future__ import annotations

import math
from json.encoder import encode_basestring as _string
from pathlib import Path

import numpy as np

from annotation.core import spreadsheet_csv
from annotation.core.cxc import ITEM_COLUMNS, METHOD_COLUMN, SCORE_COLUMN
from annotation.export.formats import (
    RAW_COLUMNS,
    BlockWriter,
    ExportBlock,
    file_stem,
    format_score,
)
from annotation.export.parquet import ParquetPairsWriter, ParquetRawWriter


class CxcCsvWriter:
    """``<task>_<split>.csv``: one row per pair, the release's four columns."""

    def __init__(self, folder: Path, task: str, split: str) -> None:
        self.name = f"{file_stem(task, split)}.csv"
        self.rows = 0
        self._handle = (folder / self.name).open("w", encoding="utf-8", newline="")
        self._csv = spreadsheet_csv.writer(self._handle, lineterminator="\n")
        self._csv.writerow([*ITEM_COLUMNS[task], SCORE_COLUMN, METHOD_COLUMN])

    def write(self, block: ExportBlock) -> None:
        scores = [format_score(value) for value in block.stats.agg_score.tolist()]
        rows = zip(block.item1, block.item2, scores, block.sampling_method, strict=True)
        self._csv.write_block(rows, (block.item1, block.item2, block.sampling_method))
        self.rows += block.pairs

    def close(self) -> None:
        self._handle.close()


class CxcRawCsvWriter:
    """``<task>_<split>_raw.csv``: one row per judgment."""

    def __init__(self, folder: Path, task: str, split: str) -> None:
        self.name = f"{file_stem(task, split)}_raw.csv"
        self.rows = 0
        self._handle = (folder / self.name).open("w", encoding="utf-8", newline="")
        self._csv = spreadsheet_csv.writer(self._handle, lineterminator="\n")
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
        self._csv.write_block(rows, (item1, item2, method, set(block.rater_id)))
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
        model = _model_texts(block)
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
                f'"positive": {"true" if positive else "false"}, {model[row]}"batch_id": {batch}, '
                f'"ratings": [{", ".join(rated[bounds[row] : bounds[row + 1]])}]}}'
            )
        if lines:
            self._handle.write("\n".join(lines))
            self._handle.write("\n")
        self.rows += block.pairs

    def close(self) -> None:
        self._handle.close()


def _model_texts(block: ExportBlock) -> list[str]:
    """Per pair the model's three keys as JSON text (each ending in ", ")."""
    if block.model is None:
        return ['"model_score": null, "model_ci95_low": null, "model_ci95_high": null, '] * block.pairs
    return [
        f'"model_score": {score!r}, "model_ci95_low": {low!r}, "model_ci95_high": {high!r}, '
        for score, low, high in zip(
            block.model.score.tolist(), block.model.low.tolist(), block.model.high.tolist(), strict=True
        )
    ]


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
