"""The explained failures of a finished evaluation job, a page at a time: read from its
``failures.csv``, one model's rows sorted by rank, by a concept metric or by the crowd's
mean review score, each with the two images' addresses (the researcher page shows them
side by side) and, once the failures are queued for review, the crowd's review (raters,
mean score, the marks that hold). Django side.

A metric's undefined values (an empty cell) and failures nobody reviewed yet sort last
either way.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass

from annotation.catalog.selectors import dataset_get
from annotation.core.errors import NotFound
from annotation.evaluation.explain.failures import FAILURE_COLUMNS, FORMS, METRICS
from annotation.evaluation.explained import FAILURES
from annotation.evaluation.jobs import evaluation_file_path
from annotation.evaluation.review.report import failure_review_map
from annotation.models import Image, Job, ReviewQueue
from annotation.serving.shapes import image_url

REVIEW_MEAN = "review_mean"
SORTS = ("rank", *(f"{form}_{metric}" for form in FORMS for metric in METRICS), REVIEW_MEAN)
NUMBERS = frozenset(SORTS) - {REVIEW_MEAN}
WHOLE_NUMBERS = frozenset({"rank", *(f"{form}_{metric}" for form in FORMS for metric in ("CE", "SD_binary"))})
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


def _sort_key(value_of, descending: bool):
    """Sorts raw rows by ``value_of(cells)`` (a number or None), None last either way."""

    def key(cells: list[str]) -> tuple:
        value = value_of(cells)
        if value is None:
            return (1, 0.0)
        return (0, -value if descending else value)

    return key


def _page_row(cells: list[str]) -> dict:
    row = {}
    for column, text in zip(FAILURE_COLUMNS, cells, strict=True):
        value = _number(text) if column in NUMBERS else text
        row[column] = int(value) if column in WHOLE_NUMBERS and value is not None else value
    return row


def failures_page(*, job: Job, model: str | None, sort: str, descending: bool, offset: int, limit: int) -> FailurePage:
    """``limit`` failures of ``model`` (the job's first model with failures when None)
    from ``offset`` on, sorted by ``sort`` (one of SORTS; ties in query order), each with
    ``review`` (``failure_review_map``'s, None when not queued). Only the page's rows are
    turned into dicts: a model's other rows stay lists of text."""
    path = evaluation_file_path(job=job, name=FAILURES)
    models: list[str] = []
    rows: list[list[str]] = []
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle)
        if tuple(next(reader, ())) != FAILURE_COLUMNS:
            raise NotFound(f"{FAILURES} of evaluation job #{job.id} has other columns than this version writes")
        for cells in reader:
            if not models or cells[0] != models[-1]:
                models.append(cells[0])  # the file holds each model's rows together
            if cells[0] == (model or models[0]):
                rows.append(cells)
    if model is not None and model not in models:
        raise FailuresRequestError(f"evaluation job #{job.id} has no failures of model {model!r}")
    queue = ReviewQueue.objects.filter(job=job).first()
    reviews = failure_review_map(queue) if queue is not None else {}
    if sort == REVIEW_MEAN:
        rows.sort(key=_sort_key(lambda cells: (reviews.get(_failure_key(cells)) or {}).get("mean"), descending))
    else:
        position = FAILURE_COLUMNS.index(sort)
        rows.sort(key=_sort_key(lambda cells: _number(cells[position]), descending))
    page = [_page_row(cells) | {"review": reviews.get(_failure_key(cells))} for cells in rows[offset : offset + limit]]
    _with_image_urls(job, page)
    return FailurePage(count=len(rows), models=models, rows=page)


_KEY_COLUMNS = tuple(FAILURE_COLUMNS.index(c) for c in ("model", "query", "truth_image", "retrieved_image"))


def _failure_key(cells: list[str]) -> tuple[str, ...]:
    return tuple(cells[position] for position in _KEY_COLUMNS)


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
