"""Kept importable until its importers use :mod:`annotation.export` (annotation/apis.py
imports FORMATS from here). The writers live in annotation.export.formats, .writers and
.parquet."""

from annotation.export.formats import (
    FORMATS,
    ITEM_COLUMNS,
    METHOD_COLUMN,
    RAW_COLUMNS,
    SCORE_COLUMN,
    STATS_COLUMNS,
    TASKS,
    BlockWriter,
    ExportBlock,
    ExportFormatError,
    file_names,
    file_stem,
    format_score,
    parse_formats,
)
from annotation.export.manifest import sha256_file
from annotation.export.parquet import ROW_GROUP_ROWS, ParquetPairsWriter, ParquetRawWriter, pairs_schema, raw_schema
from annotation.export.writers import CxcCsvWriter, CxcRawCsvWriter, JsonlWriter, open_writers

__all__ = [
    "FORMATS",
    "ITEM_COLUMNS",
    "METHOD_COLUMN",
    "RAW_COLUMNS",
    "ROW_GROUP_ROWS",
    "SCORE_COLUMN",
    "STATS_COLUMNS",
    "TASKS",
    "BlockWriter",
    "CxcCsvWriter",
    "CxcRawCsvWriter",
    "ExportBlock",
    "ExportFormatError",
    "JsonlWriter",
    "ParquetPairsWriter",
    "ParquetRawWriter",
    "file_names",
    "file_stem",
    "format_score",
    "open_writers",
    "pairs_schema",
    "parse_formats",
    "raw_schema",
    "sha256_file",
]
