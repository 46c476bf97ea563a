"""Why a figure of a report has no value, in words a reader of the comparison can act
on. Pure Python: each function takes the summary the figure belongs to (as ``report``,
``calibration`` and ``topk`` write them) and names what was missing.
"""

from __future__ import annotations


def _plural(count: int, one: str, many: str) -> str:
    return f"{count:,} {one if count == 1 else many}"


def no_query(summary: dict) -> str:
    """A retrieval summary without a query that has a positive."""
    return f"no query has a positive among its {_plural(summary.get('candidates', 0), 'candidate', 'candidates')}"


def undefined_correlation(entry: dict) -> str:
    """A bootstrap correlation whose every sample left rho undefined."""
    return (
        f"Spearman's rho is undefined in all {_plural(entry.get('samples', 0), 'sample', 'samples')}: "
        "the human or the model scores are constant"
    )


def no_positive_pair(entry: dict) -> str:
    """A calibration entry without a positive pair (no precision-recall curve)."""
    threshold = entry.get("positive_at")
    at = f" (a mean score of {threshold:g} or more)" if threshold is not None else ""
    return f"none of the {_plural(entry['pairs'], 'rated pair', 'rated pairs')} is a positive{at}"


def constant_scores(entry: dict) -> str:
    """A calibration entry whose Spearman is undefined."""
    if entry["pairs"] < 2:
        return f"{_plural(entry['pairs'], 'rated pair', 'rated pairs')}: a correlation needs two at least"
    return f"the human or the model scores are constant over the {entry['pairs']:,} rated pairs"


def top_k_reasons(entry: dict) -> dict[str, str | None]:
    """Why the own top-k's P@k ("P@<k>") and precision over judged items ("judged") are
    missing (None for a figure that has its value)."""
    k, metric = entry["k"], f"P@{entry['k']}"
    rated = f"{entry['judged']:,} of {entry['retrieved']:,} retrieved items rated"
    return {
        metric: None
        if entry[metric] is not None
        else f"none of the {_plural(entry['queries'], 'query', 'queries')} has all {k} retrieved items rated ({rated})",
        "judged": None
        if entry["precision_judged"] is not None
        else f"none of the {_plural(entry['retrieved'], 'retrieved item', 'retrieved items')} is rated yet",
    }


# Why each concept metric can be undefined for a failure.
_UNDEFINED = {
    "CA": "its image has no annotated object",
    "NCS": "one of the two images has no concept the other lacks",
    "CE": "the two images share no concept",
    "SD": "the two images share no concept, or an image's size is unknown",
    "SD_binary": "the two images share no concept, or an image's size is unknown",
}
_METRIC_NAMES = {"SD_binary": "binary SD"}


def no_defined_failure(metric: str, summary: dict) -> str:
    """A concept metric's global mean without a failure where the metric is defined."""
    if not summary["failures"]:
        return "the model failed no query"
    why = _UNDEFINED.get(metric, "it is undefined there")
    return (
        f"{_METRIC_NAMES.get(metric, metric)} is undefined in all "
        f"{_plural(summary['failures'], 'failure', 'failures')}: in each, {why} (the query-informed form "
        "keeps only the objects the query names)"
    )
