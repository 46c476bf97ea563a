"""What an export is made of: tasks, formats, file names, the block of rated pairs the
writers take, and the errors that name a bad request. Pure (no Django).

The CxC files copy the public release exactly: ``sts_<split>.csv`` with header
``caption1,caption2,agg_score,sampling_method``, ``sis_<split>.csv`` with
``image1,image2,...``, ``sits_<split>.csv`` with ``caption,image,...``; beside each,
``*_raw.csv`` has one row per judgment. JSONL (``<task>_<split>.jsonl``) and Parquet
(``<task>_<split>.parquet``, ``<task>_<split>_raw.parquet``) carry the same content
plus the spread and counts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from annotation.core.cxc import FILE_PREFIX, ITEM_COLUMNS, KINDS
from annotation.core.errors import DomainError
from annotation.quality.aggregation import PairAggregates
from annotation.quality.rater_effects import PairModelScores

TASKS = KINDS
FORMATS = ("cxc", "jsonl", "parquet")
# Written last: a folder holding it holds a complete export.
MANIFEST = "manifest.json"
AGREEMENT = "agreement.json"
RAW_COLUMNS = ("score", "rater_id", "time_on_item_ms")
STATS_COLUMNS = ("mean", "median", "std", "count", "ci95_low", "ci95_high", "positive", "batch_id")
MODEL_COLUMNS = ("model_score", "model_ci95_low", "model_ci95_high")
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
# What a download of each kind of file is sent as. JSONL has no registered type; NDJSON's
# is the common one for one JSON value per line. Parquet's was registered with IANA in 2024.
MEDIA_TYPES = {
    ".csv": "text/csv",
    ".json": "application/json",
    ".jsonl": "application/x-ndjson",
    ".parquet": "application/vnd.apache.parquet",
}


class ExportError(DomainError):
    """An export that cannot be carried out as asked. Nothing was written."""

    code = "export_invalid"


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
    return f"{FILE_PREFIX[task]}_{split}"


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


def media_type(name: str) -> str:
    """The media type a file of an export is downloaded as. Every name an export writes
    ends in a suffix of MEDIA_TYPES; anything else is a programming error."""
    suffix = name[name.rfind(".") :] if "." in name else ""
    if suffix not in MEDIA_TYPES:
        raise ExportFormatError(f"no media type for export file {name!r}")
    return MEDIA_TYPES[suffix]


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
    str), ``score: float64 (m,)``, ``time_on_item_ms: int64 (m,)``. ``model``: the
    rater-effects model's score and interval per pair (None: written as null).
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
    model: PairModelScores | None = None

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
