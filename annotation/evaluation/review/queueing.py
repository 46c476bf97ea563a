"""Queue an explained evaluation's failures for the crowd's review: each distinct failure
(query, truth image, retrieved image) of each model a pair of kind REV with N open slots,
all in one sampling batch of the job's dataset and split, once per job. Django side.

Queuing again finds the job's queue and adds nothing; a failure another evaluation
queued already shares that pair (and its reviews). A failure equal to an active gold
review pair is left out of the queue, as a sampled pair equal to a gold pair is.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.catalog.selectors import dataset_get, split_get
from annotation.core.errors import Conflict, DomainError
from annotation.evaluation.explain.failures import FAILURE_COLUMNS
from annotation.evaluation.explained import FAILURES
from annotation.evaluation.jobs import evaluation_file_path, evaluation_job_get
from annotation.models import Caption, Image, JobStatus, ReviewItem, ReviewQueue, SamplingMethod, TaskKind
from annotation.serving.pairs import PairSpec, pair_ids_by_identity, pairs_create_bulk
from sampling.models import SamplingBatch

DEFAULT_RATERS = 5
MAX_RATERS = 50
_MODEL, _QUERY, _TRUTH, _RETRIEVED = (
    FAILURE_COLUMNS.index(c) for c in ("model", "query", "truth_image", "retrieved_image")
)


class ReviewRequestError(DomainError):
    """Failures that cannot be queued for review as asked (the message says why)."""

    code = "review_invalid"


@dataclass(frozen=True)
class QueuedReview:
    queue: ReviewQueue
    created: bool  # False: the job's failures were queued before; nothing was added
    failures: int  # the job's failures (model, query) queued
    pairs_new: int  # pairs this call created (failures sharing a pair count once)


def failure_rows(job) -> list[tuple[str, str, str, str]]:
    """(model, query key, truth image key, retrieved image key) of every failure in the
    job's failures file, in its order."""
    path = evaluation_file_path(job=job, name=FAILURES)
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle)
        if tuple(next(reader, ())) != FAILURE_COLUMNS:
            raise ReviewRequestError(
                f"{FAILURES} of evaluation job #{job.id} has other columns than this version writes"
            )
        return [(cells[_MODEL], cells[_QUERY], cells[_TRUTH], cells[_RETRIEVED]) for cells in reader]


def _explained_job(job_id: int):
    job = evaluation_job_get(job_id=job_id)
    if not job.params.get("explain"):
        raise ReviewRequestError(
            f"evaluation job #{job.id} is not an explained evaluation: run one with explain to find failures to review"
        )
    if job.status != JobStatus.SUCCEEDED:
        raise Conflict(f"evaluation job #{job.id} is {job.status}; its failures can be queued once it has succeeded")
    return job


def review_queue(*, job_id: int, raters: int | None = None, created_by=None) -> QueuedReview:
    """Queue the failures of the explained evaluation job ``job_id`` for review by
    ``raters`` distinct raters each (None: DEFAULT_RATERS), or find them queued (None:
    whatever number they were queued for). Raises NotFound (no such evaluation),
    ReviewRequestError (not explained, no failures, a bad number of raters, queued
    before with another number) and Conflict (not finished)."""
    if raters is not None and (type(raters) is not int or not 1 <= raters <= MAX_RATERS):
        raise ReviewRequestError(f"raters per failure is a whole number from 1 to {MAX_RATERS}, got {raters!r}")
    job = _explained_job(job_id)
    existing = ReviewQueue.objects.filter(job=job).first()
    if existing is not None:
        return _found(existing, raters)
    raters = DEFAULT_RATERS if raters is None else raters
    rows = failure_rows(job)
    if not rows:
        raise ReviewRequestError(f"evaluation job #{job.id} found no failures: there is nothing to review")
    dataset = dataset_get(name=job.params["dataset"])
    split = split_get(dataset=dataset, name=job.params["split"])
    specs = _specs(dataset, rows)
    try:
        with transaction.atomic():
            now = timezone.now()
            batch = SamplingBatch.objects.create(
                dataset=dataset,
                split=split,
                methods={SamplingMethod.REVIEW: len(rows)},
                ratings_per_pair=raters,
                status=JobStatus.SUCCEEDED,
                created_by=created_by,
                started_at=now,
                finished_at=now,
                progress_message=f"failures of evaluation job #{job.id} queued for review",
            )
            created = pairs_create_bulk(batch=batch, specs=specs.values())
            batch.pairs_per_method = created
            batch.save(update_fields=["pairs_per_method"])
            queue = ReviewQueue.objects.create(job=job, batch=batch, ratings_per_pair=raters, created_by=created_by)
            pair_ids = pair_ids_by_identity(dataset_id=dataset.id, identities=[s.identity() for s in specs.values()])
            identities = {
                (model, specs[(query, truth, retrieved)].identity()) for model, query, truth, retrieved in rows
            }
            # A failure equal to an active gold pair has no pair: it is not reviewed.
            items = {(model, pair_ids[ident]) for model, ident in identities if ident in pair_ids}
            ReviewItem.objects.bulk_create(
                [ReviewItem(queue=queue, model=model, pair_id=pair_id) for model, pair_id in sorted(items)]
            )
    except IntegrityError:  # a concurrent request queued the same job first
        return _found(ReviewQueue.objects.get(job=job), raters)
    return QueuedReview(queue=queue, created=True, failures=len(rows), pairs_new=sum(created.values()))


def _found(queue: ReviewQueue, raters: int | None) -> QueuedReview:
    if raters is not None and queue.ratings_per_pair != raters:
        raise ReviewRequestError(
            f"the failures of evaluation job #{queue.job_id} are queued for {queue.ratings_per_pair} raters each "
            f"already; queuing them again changes nothing (asked for {raters})"
        )
    failures = len(failure_rows(queue.job))
    return QueuedReview(queue=queue, created=False, failures=failures, pairs_new=0)


def _specs(dataset, rows) -> dict[tuple[str, str, str], PairSpec]:
    """The pair of each distinct failure (query, truth, retrieved), by item keys."""
    captions = dict(Caption.objects.filter(dataset=dataset, key__in={row[1] for row in rows}).values_list("key", "id"))
    images = dict(
        Image.objects.filter(dataset=dataset, key__in={k for row in rows for k in row[2:]}).values_list("key", "id")
    )
    specs = {}
    for _, query, truth, retrieved in rows:
        if query not in captions or truth not in images or retrieved not in images:
            raise ReviewRequestError(f"failure of query {query!r} names an item dataset {dataset.name!r} no longer has")
        specs[(query, truth, retrieved)] = PairSpec(
            kind=TaskKind.REV,
            sampling_method=SamplingMethod.REVIEW,
            caption_a=captions[query],
            image_a=images[truth],
            image_b=images[retrieved],
        )
    return specs
