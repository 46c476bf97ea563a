"""Several models' reports as one comparison: flat rows, a text table, CSV. Pure Python.

A row is one figure of one task: section, task, positives (or ratings source), metric,
then per model its value, its 95% interval where the figure carries one (a bootstrap
over queries for the means over queries, see ``correlation`` and ``calibration`` for the
others) and, for a value that could not be computed, why. Models evaluated on the same
split and seed are resampled alike, so their intervals compare like with like.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Mapping

from annotation.core import spreadsheet_csv
from annotation.core.cxc import KINDS
from annotation.evaluation import unavailable
from annotation.evaluation.ranks import RECALL_AT

RANKED = (*(f"R@{k}" for k in RECALL_AT), "R-Precision", "mAP@R")
CSV_COLUMNS = ("section", "task", "positives", "metric", "model", "value", "ci_low", "ci_high")


Figure = tuple[tuple[str, str, str, str], float | None, list | None, str | None]


def _figures(report: dict) -> Iterator[Figure]:
    """((section, task, positives, metric), value, interval or None, why the value is
    None or None) of every figure."""
    for task, sets in report.get("retrieval", {}).items():
        for name, summary in sets.items():
            yield from _ranked("retrieval", task, name, summary)
    for task, summary in report.get("coco_1k", {}).items():
        yield from _ranked("coco_1k", task, "original", summary)
    for kind in KINDS:
        entry = report.get("correlation", {}).get(kind)
        if entry is not None:
            key = ("correlation", kind, entry.get("ratings", ""))
            why = None if entry["mean"] is not None else unavailable.undefined_correlation(entry)
            yield (*key, "spearman_mean"), entry["mean"], entry.get("ci"), why
            yield (*key, "spearman_std"), entry["std"], None, why
    for source, kinds in report.get("calibration", {}).items():
        for kind, entry in kinds.items():
            pr_auc_why = None if entry["pr_auc"] is not None else unavailable.no_positive_pair(entry)
            rho_why = None if entry["spearman"] is not None else unavailable.constant_scores(entry)
            yield ("calibration", kind, source, "pr_auc"), entry["pr_auc"], entry.get("pr_auc_ci"), pr_auc_why
            yield ("calibration", kind, source, "spearman"), entry["spearman"], entry.get("spearman_ci"), rho_why
    yield from _explained(report.get("explain"))
    for task, entry in report.get("own_top_k", {}).items():
        judged_by = "+".join(entry["judged_by"]) or "nothing rated yet"
        metric = f"P@{entry['k']}"
        why = unavailable.top_k_reasons(entry)
        yield ("own_top_k", task, judged_by, metric), entry[metric], entry.get("ci", {}).get(metric), why[metric]
        yield ("own_top_k", task, judged_by, "precision_judged"), entry["precision_judged"], None, why["judged"]
        for count in ("queries_fully_judged", "retrieved", "judged", "unrated"):
            yield ("own_top_k", task, judged_by, count), entry[count], None, None


# The explained failures' figures, in the comparison's order.
EXPLAIN_FIGURES = ("failures", "R@5", "R@10", "R@N", "MRR@5", "MRR@10", "MRR@N", "median_rank")


def _explained(summary: dict | None) -> Iterator[Figure]:
    """The caption-to-corpus ranking's figures, the global mean of each concept metric per
    form (query-agnostic, query-informed) over the failures where it is defined, then the
    adversarial queries' moves and changes per kind of substitution."""
    if summary is None:
        return
    why = unavailable.no_query(summary) if not summary["queries"] else None
    for metric in EXPLAIN_FIGURES:
        value = summary[metric]
        yield ("explain", "caption_to_corpus", "other captions", metric), value, None, why if value is None else None
    for form, metrics in summary["global"].items():
        for metric, entry in metrics.items():
            missing = None if entry["mean"] is not None else unavailable.no_defined_failure(metric, summary)
            yield ("explain", form, "failures", metric), entry["mean"], None, missing
    for kind, effects in summary.get("adversarial", {}).get("kinds", {}).items():
        for count in ("queries", "falls", "stays", "rises"):
            yield ("adversarial", kind, "changed queries", count), effects[count], None, None
        why = None if effects["queries"] else f"no caption has a word of kind {kind}"
        for metric, change in effects["change"].items():
            yield ("adversarial", kind, "changed queries", f"change {metric}"), change, None, why


def _ranked(section: str, task: str, name: str, summary: dict) -> Iterator[Figure]:
    intervals = summary.get("ci", {})
    why = unavailable.no_query(summary) if not summary.get("queries") else None
    for metric in RANKED:
        yield (section, task, name, metric), summary[metric], intervals.get(metric), why
    yield (section, task, name, "median_rank"), summary["median_rank"], None, why


def comparison_rows(reports: Mapping[str, dict]) -> list[dict]:
    """One row per figure any model has: {"section", "task", "positives", "metric",
    "models": {name: {"value", "ci"}}}, in the order the first model that has it gives.
    A value of None comes with "unavailable": why it could not be computed."""
    rows: dict[tuple, dict] = {}
    for model, report in reports.items():
        for key, value, interval, why in _figures(report):
            row = rows.setdefault(
                key, {"section": key[0], "task": key[1], "positives": key[2], "metric": key[3], "models": {}}
            )
            entry = row["models"][model] = {"value": value, "ci": interval}
            if value is None:
                entry["unavailable"] = why or "not computed"
    return list(rows.values())


def _cell(entry: dict | None) -> str:
    if entry is None or entry["value"] is None:
        return "-"
    value = entry["value"]
    text = f"{value:.1f}" if isinstance(value, float) else str(value)
    if entry["ci"]:
        text += f" [{entry['ci'][0]:.1f}, {entry['ci'][1]:.1f}]"
    return text


def format_comparison(rows: list[dict], models: list[str]) -> str:
    """The rows as a text table, one column per model."""
    head = ["section", "task", "positives", "metric", *models]
    body = [
        [r["section"], r["task"], r["positives"], r["metric"], *(_cell(r["models"].get(m)) for m in models)]
        for r in rows
    ]
    table = [head, *body]
    widths = [max(len(line[i]) for line in table) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip() for line in table]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def comparison_csv(rows: list[dict]) -> str:
    """The rows long-form: one line per (figure, model), CSV_COLUMNS. Model names are
    the requester's text and the file opens in spreadsheets: formula-like cells are
    escaped (numbers are written as they are)."""
    out = io.StringIO()
    writer = spreadsheet_csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in rows:
        for model, entry in row["models"].items():
            low, high = entry["ci"] or ("", "")
            value = "" if entry["value"] is None else entry["value"]
            writer.writerow([row["section"], row["task"], row["positives"], row["metric"], model, value, low, high])
    return out.getvalue()
