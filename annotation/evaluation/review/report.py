"""The figures of an evaluation's reviewed failures (``figures``), read from the queue's
valid ratings and their marks and joined with the failures file's concept metrics: per
failure, per mark, and per model the Spearman correlation of the human score with each
metric in both forms. The API, the researcher page and the ``review_report`` command
answer it; ``review_csv`` is its one-line-per-failure file. Django side.
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict

import numpy as np

from annotation.core import spreadsheet_csv
from annotation.core.errors import NotFound
from annotation.evaluation.explain.failures import FAILURE_COLUMNS, FORMS, METRICS
from annotation.evaluation.explained import FAILURES
from annotation.evaluation.jobs import evaluation_file_path, evaluation_job_get
from annotation.evaluation.review.figures import FailureReviews, failure_reviews, mark_shares, metric_correlations
from annotation.evaluation.review.marks import MARKS
from annotation.models import Rating, RatingStatus, ReviewItem, ReviewQueue

METRIC_COLUMNS = tuple(f"{form}_{metric}" for form in FORMS for metric in METRICS)
# The correlation table's metrics: binary SD is a count of SD's, so SD stands for both.
CORRELATED = tuple(f"{form}_{metric}" for form in FORMS for metric in ("CA", "NCS", "CE", "SD"))
REVIEW_COLUMNS = (
    "model",
    "query",
    "query_text",
    "truth_image",
    "retrieved_image",
    "rank",
    *METRIC_COLUMNS,
    "raters",
    "human_mean",
    *(f"share_{mark}" for mark in MARKS),
    "marks",
)


def _queue_of(job_id: int) -> ReviewQueue:
    job = evaluation_job_get(job_id=job_id)
    queue = ReviewQueue.objects.filter(job=job).select_related("job").first()
    if queue is None:
        raise NotFound(f"the failures of evaluation job #{job.id} are not queued for review")
    return queue


def failure_review_map(queue: ReviewQueue) -> dict[tuple[str, str, str, str], dict]:
    """(model, query key, truth key, retrieved key) -> {"raters", "mean", "shares",
    "marks"} for each queued failure (mean None before its first review)."""
    items = list(
        ReviewItem.objects.filter(queue=queue).values_list(
            "model", "pair_id", "pair__caption_a__key", "pair__image_a__key", "pair__image_b__key"
        )
    )
    pairs = sorted({pair for _, pair, *_ in items})
    index = {pair: position for position, pair in enumerate(pairs)}
    rows = list(
        Rating.objects.filter(pair_id__in=pairs, status=RatingStatus.VALID).values_list(
            "pair_id", "score", "review_marks__marks"
        )
    )
    reviews = failure_reviews(
        np.array([index[pair] for pair, _, _ in rows], dtype=np.int64),
        np.array([score for _, score, _ in rows], dtype=np.float64),
        # Every review stores its marks; a rating without (none is made so) counts as no mark.
        np.array([bits or 0 for _, _, bits in rows], dtype=np.int64),
        len(pairs),
    )
    out = {}
    for model, pair, query, truth, retrieved in items:
        at = index[pair]
        raters = int(reviews.raters[at])
        out[(model, query, truth, retrieved)] = {
            "raters": raters,
            "mean": float(reviews.mean[at]) if raters else None,
            "shares": {m: float(reviews.shares[at, c]) if raters else None for c, m in enumerate(MARKS)},
            "marks": [m for c, m in enumerate(MARKS) if reviews.holds[at, c]],
        }
    return out


def _failure_rows(queue: ReviewQueue) -> list[dict]:
    """The failures file's rows of the queued failures, each with its review."""
    reviews = failure_review_map(queue)
    path = evaluation_file_path(job=queue.job, name=FAILURES)
    rows = []
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle)
        next(reader, None)
        for cells in reader:
            row = dict(zip(FAILURE_COLUMNS, cells, strict=True))
            key = (row["model"], row["query"], row["truth_image"], row["retrieved_image"])
            if key in reviews:
                row["rank"] = int(row["rank"])
                for column in METRIC_COLUMNS:
                    row[column] = float(row[column]) if row[column] != "" else None
                rows.append(row | {"review": reviews[key]})
    return rows


def review_report(*, job_id: int) -> dict:
    """The review of evaluation job ``job_id``'s failures: the queue's progress, and per
    model the reviewed failures, the share of them each mark holds for and the Spearman
    correlations of the mean human score with CORRELATED metrics; {"job", "queued":
    False} before they are queued. NotFound for no such evaluation job."""
    job = evaluation_job_get(job_id=job_id)
    queue = ReviewQueue.objects.filter(job=job).select_related("job").first()
    if queue is None:
        return {"job": job.id, "queued": False}
    rows = _failure_rows(queue)
    per_model: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        per_model[row["model"]].append(row)
    models = {}
    for model, model_rows in per_model.items():
        human = np.array([np.nan if r["review"]["mean"] is None else r["review"]["mean"] for r in model_rows])
        metrics = {
            name: np.array([np.nan if r[name] is None else r[name] for r in model_rows], dtype=np.float64)
            for name in CORRELATED
        }
        reviews = FailureReviews(
            raters=np.array([r["review"]["raters"] for r in model_rows], dtype=np.int64),
            mean=human,
            shares=np.zeros((len(model_rows), len(MARKS))),
            holds=np.array([[m in r["review"]["marks"] for m in MARKS] for r in model_rows], dtype=bool),
        )
        models[model] = {
            "failures": len(model_rows),
            "reviewed": int((reviews.raters > 0).sum()),
            "complete": int((reviews.raters >= queue.ratings_per_pair).sum()),
            "marks": mark_shares(reviews),
            "correlations": metric_correlations(human, metrics),
        }
    return {
        "job": queue.job_id,
        "queued": True,
        "raters_per_failure": queue.ratings_per_pair,
        "batch": queue.batch_id,
        "marks": list(MARKS),
        "metrics": list(CORRELATED),
        "models": models,
    }


def review_csv(*, job_id: int) -> str:
    """One line per queued failure per model (REVIEW_COLUMNS): its metrics, raters, mean
    human score, each mark's share of its raters and the marks that hold ("; ")."""
    rows = _failure_rows(_queue_of(job_id))
    out = io.StringIO()
    writer = spreadsheet_csv.writer(out, lineterminator="\n")
    writer.writerow(REVIEW_COLUMNS)
    for row in rows:
        review = row["review"]
        writer.writerow(
            [
                *(row[c] if row[c] is not None else "" for c in REVIEW_COLUMNS[:6]),
                *("" if row[c] is None else row[c] for c in METRIC_COLUMNS),
                review["raters"],
                "" if review["mean"] is None else round(review["mean"], 4),
                *("" if review["shares"][m] is None else round(review["shares"][m], 4) for m in MARKS),
                "; ".join(review["marks"]),
            ]
        )
    return out.getvalue()
