"""The two JSON files that describe an export: ``agreement.json`` (rater agreement) and
``manifest.json`` (what was exported and left out, batch configurations, scoring rules,
checksums of every file, code version), and how they are written."""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
import tomllib
from collections.abc import Mapping
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from annotation.export.blocks import ExportAgreement, ExportCounts
from annotation.export.formats import TASKS
from annotation.export.plan import ExportPlan, incomplete_counts, retired_counts, sampling_batches
from annotation.models import RatingExclusion
from annotation.quality.aggregation import CONFIDENCE, POSITIVE_THRESHOLDS

FORMAT_NAME = "cxc-annotate export"
FORMAT_VERSION = 1


def sha256_file(path: Path, block_size: int = 1 << 20) -> str:
    """Hex SHA-256 of a file, read in blocks (flat memory)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(block_size):
            digest.update(chunk)
    return digest.hexdigest()


def files_checksum(folder: Path, files: list[dict]) -> None:
    """Add ``bytes`` and ``sha256`` to each entry of ``files`` (``name`` relative to ``folder``)."""
    for entry in files:
        path = folder / entry["name"]
        entry["bytes"] = path.stat().st_size
        entry["sha256"] = sha256_file(path)


def json_write(path: Path, payload: dict) -> None:
    """Write ``payload`` as indented UTF-8 JSON, a statistic that does not exist as null."""
    with path.open("w", encoding="utf-8") as handle:
        json.dump(_json_safe(payload), handle, indent=2, ensure_ascii=False, allow_nan=False)
        handle.write("\n")


def _json_safe(value):
    """NaN has no JSON spelling: a statistic that does not exist is written as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(item) for item in value]
    return value


def agreement_payload(agreement: ExportAgreement, pseudonyms: Mapping[int, str]) -> dict:
    """The content of ``agreement.json``; raters appear under their pseudonyms, sorted."""
    raters = {
        task: [
            {
                "rater_id": pseudonyms[summary.rater],
                "ratings": summary.ratings,
                "compared": summary.compared,
                "loo_correlation": summary.loo_correlation,
                "mean_bias": summary.mean_bias,
                "median_time_ms": summary.median_time_ms,
            }
            for summary in sorted(summaries, key=lambda s: pseudonyms[s.rater])
        ]
        for task, summaries in agreement.raters(TASKS).items()
    }
    return {
        "definitions": {
            "alpha_interval": "Krippendorff's alpha, interval metric, over complete pairs",
            "loo_correlation": "Pearson r of a rater's scores with the mean of the other raters on the same pairs",
            "mean_bias": "mean of (rater's score - mean of the other raters on the same pair)",
            "median_time_ms": "median time on item of the rater's exported ratings",
        },
        "by_task": agreement.by_task(TASKS),
        "by_batch": agreement.by_batch(),
        "raters": raters,
    }


def manifest_payload(
    *,
    plan: ExportPlan,
    counts: ExportCounts,
    agreement: ExportAgreement,
    pairs: int,
    ratings: int,
    files: list[dict],
    not_written: list[dict],
    exclusions: list[dict],
    rater_model: dict | None = None,
) -> dict:
    """The content of ``manifest.json`` for an export of ``pairs`` pairs and ``ratings``
    ratings whose files (with checksums) are ``files``; ``not_written``: the splits and
    tasks that got no files, with the reason; ``exclusions``: ``exclusion_entries``."""
    split_names = [split.name for split in plan.splits]
    by_split = {
        split: {
            task: {**counts.total(split=split, task=task), "methods": counts.by_method(split=split, task=task)}
            for task in TASKS
        }
        for split in split_names
    }
    batches = _batch_entries(plan, counts)
    return {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "dataset": plan.dataset.name,
        "splits": split_names,
        "formats": plan.formats,
        "created_at": timezone.now().isoformat(),
        "code_version": code_version(),
        "scoring": {
            "scale": [0, 5],
            "agg_score": "mean of the pair's ratings, rounded to two decimals",
            "positive_thresholds": POSITIVE_THRESHOLDS,
            "positive": "agg_score >= the task's threshold",
            "std": "sample standard deviation (ddof=1)",
            "interval": f"{CONFIDENCE:.0%} Student t interval of the mean",
            "rater_id": "HMAC-SHA256 pseudonym of the rater, stable across exports of this dataset",
            "exported_pairs": "complete pairs only: every required rating present",
            "valid_ratings": "ratings an admin excluded, or restored after a top-up had replaced them "
            "(superseded), are in no file; each pair holds exactly its required number of valid ratings",
            "pair_order": "each pair's items in the order it was sampled or uploaded",
            "model_score": "JSONL and Parquet: the rater-effects model's posterior mean of the pair and its "
            "95% interval (model_ci95_low, model_ci95_high); see rater_model",
        },
        "rater_model": rater_model,
        "totals": {"pairs": pairs, "ratings": ratings},
        "counts": by_split,
        "left_out": incomplete_counts(plan),
        "retired": retired_counts(plan),
        "batches": batches,
        "agreement": agreement.by_task(TASKS),
        "files": files,
        "not_written": not_written,
        "exclusions": exclusions,
    }


def exclusion_entries(plan: ExportPlan, pseudonyms) -> list[dict]:
    """The dataset's exclusions, oldest first: the rater's pseudonym (``pseudonyms``: a
    callable covering a set of rater ids, returning the mapping), how many ratings it
    excluded, why, its window and what became of it (undone: restored or superseded)."""
    rows = list(RatingExclusion.objects.filter(dataset=plan.dataset).order_by("created_at", "id"))
    names = pseudonyms({row.rater_id for row in rows})
    return [
        {
            "rater_id": names[row.rater_id],
            "ratings_excluded": row.ratings_excluded,
            "reason": row.reason,
            "window_start": row.window_start.isoformat() if row.window_start else None,
            "window_end": row.window_end.isoformat() if row.window_end else None,
            "created_at": row.created_at.isoformat(),
            "state": row.state,
            "undone_at": row.undone_at.isoformat() if row.undone_at else None,
            "ratings_restored": row.ratings_restored,
            "ratings_superseded": row.ratings_superseded,
        }
        for row in rows
    ]


def _batch_entries(plan: ExportPlan, counts: ExportCounts) -> list[dict]:
    """The configuration of each sampling batch of the exported splits, with the pairs of
    it this export holds, sorted by batch id."""
    entries = [
        {
            "id": batch.id,
            "split": batch.split.name,
            "source": batch.source,
            "methods": batch.methods,
            "k": batch.k,
            "spaces": batch.spaces,
            "ratings_per_pair": batch.ratings_per_pair,
            # Adaptive N (null: exactly ratings_per_pair): each pair's final N is its "count".
            "ratings_max": batch.ratings_max,
            "adaptive_half_width": batch.adaptive_half_width,
            "adaptive_budget": batch.adaptive_budget,
            "seed": batch.seed,
            "cocaption_pairs": batch.cocaption_pairs,
            "upload_repeats": batch.upload_repeats,
            "priority": batch.priority,
            "status": batch.status,
            "pairs_per_method": batch.pairs_per_method,
            # model_topk: the models, spaces and directions audited.
            "audit": batch.audit or None,
            "created_at": batch.created_at.isoformat(),
            "exported": counts.of_batch(batch.id),
        }
        for batch in sampling_batches(plan)
    ]
    entries.sort(key=lambda entry: entry["id"])
    return entries


def code_version() -> dict:
    """The project version (pyproject.toml) and, when the code runs from a git checkout,
    the commit and whether the working tree had changes. ``None`` where unknown."""
    base = Path(settings.BASE_DIR)
    version = None
    pyproject = base / "pyproject.toml"
    if pyproject.is_file():
        with pyproject.open("rb") as handle:
            version = tomllib.load(handle).get("project", {}).get("version")
    commit, dirty = None, None
    try:
        head = subprocess.run(
            ["git", "-C", str(base), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=False
        )
        if head.returncode == 0:
            commit = head.stdout.strip()
            status = subprocess.run(
                ["git", "-C", str(base), "status", "--porcelain", "--untracked-files=no"],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
            dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired):
        commit = None
    return {"version": version, "git_commit": commit, "git_dirty": dirty}
