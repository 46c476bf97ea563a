"""The explained failures as text tables, one column per model: the caption-to-corpus
ranking's figures and the global means of the concept metrics (``failures``), and the
adversarial queries' effects (``adversarial``). Pure Python over the report's dicts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from annotation.evaluation.explain.failures import FORMS, METRICS

RANKING_ROWS = (
    ("queries", "queries", "{:,}"),
    ("failures", "|F| failures", "{:,}"),
    ("R@5", "Recall@5 %", "{:.1f}"),
    ("R@10", "Recall@10 %", "{:.1f}"),
    ("R@N", "Recall@N %", "{:.1f}"),
    ("MRR@5", "MRR@5", "{:.3f}"),
    ("MRR@10", "MRR@10", "{:.3f}"),
    ("MRR@N", "MRR@N", "{:.3f}"),
    ("median_rank", "median rank", "{:g}"),
)


def _text(value, form: str) -> str:
    return "-" if value is None else form.format(value)


def _table(head: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    rows = [list(head), *(list(line) for line in body)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines = [
        "  ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True)))
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in lines)


def format_explained(summaries: Mapping[str, dict]) -> str:
    """``summaries``: model -> its report's ``explain`` entry. The global table: the
    ranking's figures, then each metric's mean over the failures where it is defined
    (how many those are in brackets), query-agnostic then query-informed."""
    models = list(summaries)
    body = [[label, *(_text(summaries[m][key], form) for m in models)] for key, label, form in RANKING_ROWS]
    for form in FORMS:
        for metric in METRICS:
            cells = []
            for model in models:
                entry = summaries[model]["global"][form][metric]
                cells.append("-" if entry["mean"] is None else f"{entry['mean']:.3f} ({entry['failures']:,})")
            body.append([f"{metric} {form}", *cells])
    threshold = {summaries[m]["size_threshold"] for m in models}
    title = (
        "Explained failures: each caption ranked against every image's other captions "
        f"(T_D {', '.join(f'{t:g}' for t in sorted(threshold))} of the image's area)"
    )
    return title + "\n" + _table(["", *models], body)


ADVERSARIAL_ROWS = (
    ("queries", "changed queries", "{:,}"),
    ("falls", "ground truth falls", "{:,}"),
    ("stays", "ground truth stays", "{:,}"),
    ("rises", "ground truth rises", "{:,}"),
)
ADVERSARIAL_CHANGES = (("R@5", "{:+.1f}"), ("R@10", "{:+.1f}"), ("MRR@5", "{:+.3f}"), ("MRR@10", "{:+.3f}"))


def format_adversarial(summaries: Mapping[str, dict]) -> str:
    """``summaries``: model -> its report's ``explain`` entry with ``adversarial``. Per kind
    of substitution: the queries it changed, the ground truths' moves, the change of
    Recall@K and MRR@K over those queries."""
    models = [m for m in summaries if "adversarial" in summaries[m]]
    kinds = list(summaries[models[0]]["adversarial"]["kinds"])
    body = []
    for kind in kinds:
        entries = [summaries[m]["adversarial"]["kinds"][kind] for m in models]
        body += [[f"{kind}: {label}", *(_text(e[key], form) for e in entries)] for key, label, form in ADVERSARIAL_ROWS]
        body += [
            [f"{kind}: change {key}", *(_text(e["change"][key], form) for e in entries)]
            for key, form in ADVERSARIAL_CHANGES
        ]
    settings = summaries[models[0]]["adversarial"]["settings"]
    pool = "every named colour" if settings["colour_pool"] == "named" else "the captions' colours"
    title = (
        "Adversarial queries: one word changed at a time, re-embedded by the model's own encoder "
        f"(seed {settings['seed']}, colours over {settings['colour_distance']:g} apart, from "
        f"{pool})"
    )
    return title + "\n" + _table(["", *models], body)
