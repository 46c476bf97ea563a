"""The evaluation report as text tables shaped like the CxC paper's."""

from __future__ import annotations

import math
from collections.abc import Sequence

from annotation.core.cxc import KINDS, POSITIVE_THRESHOLDS, SIS, SITS, STS
from annotation.evaluation.compare import comparison_rows, format_comparison
from annotation.evaluation.correlation import BOTH_ITEMS, FIRST_COLUMN
from annotation.evaluation.ranks import RECALL_AT

HEAD = "".join(f"R@{k}".rjust(6) for k in RECALL_AT) + "med r".rjust(8)


def format_report(report: dict) -> str:
    """The report (as ``evaluate`` returns it) as text: the items and ratings read, the
    retrieval tables, the correlation table, then the tasks not evaluated and why. The
    explained failures have a table of their own (``explain.tables``)."""
    lines = _heading(report) + _retrieval_tables(report["retrieval"])
    if report["correlation"]:
        lines += _correlation_table(report["correlation"], report["settings"])
    more = [
        row
        for row in comparison_rows({"value": report})
        if row["section"] not in ("explain", "adversarial")
        and (
            (row["section"] != "correlation" and row["metric"] not in ("R@1", "R@5", "R@10", "median_rank"))
            or row["section"] == "coco_1k"
        )
    ]
    if more:
        lines += ["", "More figures (value [95% bootstrap interval over queries]):"]
        lines += [format_comparison(more, ["value"])]
    if report["skipped"]:
        lines += ["", "Not evaluated:"]
        lines += [f"  {task}: {why}" for task, why in report["skipped"].items()]
    return "\n".join(lines)


def _heading(report: dict) -> list[str]:
    title = f"CxC evaluation of split {report['split']!r}"
    if report.get("dataset"):
        title += f" of dataset {report['dataset']!r}"
    items = report["items"]
    lines = [f"{title}: {items['images']} images, {items['captions']} captions, {report['spaces']} spaces"]
    for kind, entry in report["ratings"].items():
        if entry.get("file"):
            used = entry.get("rows_used")
            extra = f", {used} used, {entry['rows_left_out']} outside the split" if entry.get("rows_left_out") else ""
            lines.append(f"  {kind}: {entry['rows']} rated rows from {entry['file']}{extra}")
    return lines


def _retrieval_tables(retrieval: dict) -> list[str]:
    lines: list[str] = []
    if "image_to_text" in retrieval or "text_to_image" in retrieval:
        lines += _retrieval_table(
            retrieval,
            ("Image -> Text", "image_to_text"),
            ("Text -> Image", "text_to_image"),
            [
                ("original", "original pairs"),
                ("cxc", f"CxC (+ SITS >= {POSITIVE_THRESHOLDS[SITS]:g})"),
                ("audited", f"audited (+ SITS >= {POSITIVE_THRESHOLDS[SITS]:g})"),
            ],
        )
    if "text_to_text" in retrieval or "image_to_image" in retrieval:
        lines += _retrieval_table(
            retrieval,
            (f"Text -> Text (STS >= {POSITIVE_THRESHOLDS[STS]:g})", "text_to_text"),
            (f"Image -> Image (SIS >= {POSITIVE_THRESHOLDS[SIS]:g})", "image_to_image"),
            [("cxc", "CxC"), ("audited", "audited")],
        )
    return lines


def _retrieval_table(
    retrieval: dict, left: tuple[str, str], right: tuple[str, str], variants: Sequence[tuple[str, str]]
) -> list[str]:
    """Two tasks side by side: ``left``/``right`` are (title, task); one row per variant
    (name, label) that either task has."""
    lines = ["", f"{'':24}{left[0]:<27}  {right[0]}", f"{'positives':24}{HEAD:<27}  {HEAD}"]
    for name, label in variants:
        a = retrieval.get(left[1], {}).get(name)
        b = retrieval.get(right[1], {}).get(name)
        if a is None and b is None:
            continue
        lines.append(f"{label:24}{_retrieval_cells(a):<27}  {_retrieval_cells(b)}")
    return lines


def _correlation_table(correlation: dict, settings: dict) -> list[str]:
    cells, intervals = [], []
    for kind in KINDS:
        entry = correlation.get(kind)
        if entry is None or entry["mean"] is None:
            cells.append("-".rjust(16))
        else:
            cells.append(f"{entry['mean']:.1f} ± {entry['std']:.1f}".rjust(16))
        ci = (entry or {}).get("ci")
        intervals.append((f"[{ci[0]:.1f}, {ci[1]:.1f}]" if ci else "").rjust(16))
    return [
        "",
        f"Spearman x 100 with human scores (mean ± std over {settings['samples']} samples, seed {settings['seed']}; "
        f"{_QUERIES_FROM[settings.get('bootstrap_queries', FIRST_COLUMN)]})",
        "".join(kind.rjust(16) for kind in KINDS),
        "".join(cells),
        *(
            ["".join(intervals) + "  (95% interval: the central 95% of the samples)"]
            if "".join(intervals).strip()
            else []
        ),
    ]


_QUERIES_FROM = {
    BOTH_ITEMS: "queries: both items of a rated row",
    FIRST_COLUMN: "queries: the first column of a rated row",
}


def _cell(value: float | None, width: int = 6) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-".rjust(width)
    return f"{value:.1f}".rjust(width)


def _retrieval_cells(entry: dict | None) -> str:
    if entry is None:
        return "".join("-".rjust(6) for _ in RECALL_AT) + "-".rjust(8)
    return "".join(_cell(entry[f"R@{k}"]) for k in RECALL_AT) + _cell(entry["median_rank"], 8)
