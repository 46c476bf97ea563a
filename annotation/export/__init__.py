"""Export a rated dataset for researchers: CxC CSV (+ raw), JSONL, Parquet, agreement
and a manifest.

Only complete pairs are exported (``ratings_done == ratings_required``); the manifest
counts the incomplete ones left out. The package's rooms:

- :mod:`~annotation.export.plan`: the checked request, destination rules, the reads.
- :mod:`~annotation.export.run`: :func:`dataset_export`, streaming blocks to the writers.
- :mod:`~annotation.export.staging`: the hidden staging folder and its publication.
- :mod:`~annotation.export.blocks`: per-block aggregation, counts, agreement (pure numpy).
- :mod:`~annotation.export.manifest`: ``manifest.json``, ``agreement.json``, checksums.
- :mod:`~annotation.export.formats`, :mod:`~annotation.export.writers`,
  :mod:`~annotation.export.parquet`: file names and the writers (pure, no Django).
- :mod:`~annotation.export.jobs`: export jobs (start, run, files).
"""

from annotation.export.formats import (
    AGREEMENT,
    FORMATS,
    MANIFEST,
    TASKS,
    ExportBlock,
    ExportError,
    ExportFormatError,
    file_names,
    file_stem,
    parse_formats,
)
from annotation.export.jobs import (
    export_file_path,
    export_files,
    export_job_create,
    export_job_start,
    run_export_params,
)
from annotation.export.manifest import code_version, sha256_file
from annotation.export.plan import ExportPlan, export_plan
from annotation.export.run import BLOCK_RATINGS, ExportSummary, dataset_export
from annotation.export.staging import export_staging_remove
from annotation.export.writers import open_writers

# Selectors kept importable from here until annotation/apis.py imports them from
# annotation.selectors.
from annotation.selectors import export_job_get, export_job_list

__all__ = [
    "AGREEMENT",
    "BLOCK_RATINGS",
    "FORMATS",
    "MANIFEST",
    "TASKS",
    "ExportBlock",
    "ExportError",
    "ExportFormatError",
    "ExportPlan",
    "ExportSummary",
    "code_version",
    "dataset_export",
    "export_file_path",
    "export_files",
    "export_job_create",
    "export_job_get",
    "export_job_list",
    "export_job_start",
    "export_plan",
    "export_staging_remove",
    "file_names",
    "file_stem",
    "open_writers",
    "parse_formats",
    "run_export_params",
    "sha256_file",
]
