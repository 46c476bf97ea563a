"""The explained failures of a finished evaluation job, a page at a time: read from its
``failures.csv``, one model's rows sorted by rank or by a concept metric, each with the
two images' addresses (the researcher page shows them side by side). Django side.

A metric's undefined values (an empty cell) sort last either way.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass

from annotation.catalog.selectors import dataset_get
from annotation.core.errors import NotFound
from annotation.evaluation.explain.failures import FAILURE_COLUMNS, FORMS, METRICS
from annotation.evaluation.explained import FAILURES
from annotation.evaluation.jobs import evaluation_file_path
from annotation.models import Image, Job
from annotation.serving.shapes import image_url

SORTS = ("rank", *(f"{form}_{metric}" for form in FORMS for metric in METRICS))
NUMBERS = frozenset(SORTS)
PAGE_MAX = 200


class FailuresRequestError(NotFound):
    """A page asked of a model the job did not explain."""


@dataclass(frozen=True)
class FailurePage:
    count: int
    models: list[str]
    rows: list[dict]


def _number(text: str) -> float | None:
    return None if text == "" else float(text)


def _sort_key(column: str, descending: bool):
    def key(row: dict) -> tuple:
        value = row[column]
        if value is None:
            return (1, 0.0)
        return (0, -value if descending else value)

    return key


def failures_page(*, job: Job, model: str | None, sort: str, descending: bool, offset: int, limit: int) -> FailurePage:
    """``limit`` failures of ``model`` (the job's first model with failures when None)
    from ``offset`` on, sorted by ``sort`` (one of SORTS; ties in query order)."""
    path = evaluation_file_path(job=job, name=FAILURES)
    by_model: dict[str, list[dict]] = {}
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle)
        if tuple(next(reader, ())) != FAILURE_COLUMNS:
            raise NotFound(f"{FAILURES} of evaluation job #{job.id} has other columns than this version writes")
        for cells in reader:
            row = dict(zip(FAILURE_COLUMNS, cells, strict=True))
            by_model.setdefault(cells[0], []).append({k: _number(v) if k in NUMBERS else v for k, v in row.items()})
    if model is not None and model not in by_model:
        raise FailuresRequestError(f"evaluation job #{job.id} has no failures of model {model!r}")
    rows = by_model.get(model or next(iter(by_model), ""), [])
    rows.sort(key=_sort_key(sort, descending))
    page = rows[offset : offset + limit]
    for row in page:
        for column in ("rank", *(f"{form}_{metric}" for form in FORMS for metric in ("CE", "SD_binary"))):
            row[column] = None if row[column] is None else int(row[column])
    _with_image_urls(job, page)
    return FailurePage(count=len(rows), models=list(by_model), rows=page)


def _with_image_urls(job: Job, rows: list[dict]) -> None:
    dataset = dataset_get(name=job.params["dataset"])
    keys = {row[side] for row in rows for side in ("truth_image", "retrieved_image")}
    paths = dict(Image.objects.filter(dataset=dataset, key__in=keys).values_list("key", "file_path"))
    for row in rows:
        for side in ("truth_image", "retrieved_image"):
            key = row[side]
            row[f"{side}_url"] = (
                image_url(
                    dataset=dataset.name,
                    images_root=dataset.images_root,
                    image_url_prefix=dataset.image_url_prefix,
                    key=key,
                    file_path=paths[key],
                )
                if key in paths
                else None
            )
