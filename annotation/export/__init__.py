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
- :mod:`~annotation.export.jobs`: export jobs (the checked row, the run, files, the zip of them all;
  ``annotation.jobs.dispatch`` starts them).
- :mod:`~annotation.export.archive`: a zip made while it is sent (pure, no Django).
"""

from importlib import import_module

# Names looked up on first use, so that importing a pure module of the package
# (formats, writers, parquet, blocks) does not load the Django-facing ones.
_HOMES = {
    "formats": ("AGREEMENT", "FORMATS", "MANIFEST", "TASKS", "ExportBlock", "ExportError", "ExportFormatError",
                "MEDIA_TYPES", "file_names", "file_stem", "media_type", "parse_formats"),
    "archive": ("zip_chunks",),
    "jobs": ("export_archive", "export_archive_name", "export_file_path", "export_files", "export_job_create",
             "run_export_params"),
    "manifest": ("code_version", "sha256_file"),
    "plan": ("ExportPlan", "export_plan"),
    "run": ("BLOCK_RATINGS", "ExportSummary", "dataset_export"),
    "staging": ("export_staging_remove",),
    "writers": ("open_writers",),
}  # fmt: skip
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = sorted(_MODULE_OF)


def __getattr__(name: str):
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{module}"), name)
