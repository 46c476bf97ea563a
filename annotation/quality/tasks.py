"""Celery tasks of quality control: the rater-effects model's refit and the exclusion of a
rater's ratings; names kept as ``annotation.tasks.*``."""

import logging

from celery import shared_task

from annotation.models import Dataset
from annotation.quality.adaptive_plans import adaptive_budgets_refresh
from annotation.quality.exclusion.services import exclusions_resume, rating_exclusion_run
from annotation.quality.rater_fits import rater_model_refit

logger = logging.getLogger(__name__)


@shared_task(name="annotation.tasks.refit_rater_model", acks_late=True)
def refit_rater_model(dataset_id: int) -> None:
    """Fit the rater-effects model of a dataset by id anew (each task kind), then solve
    the precision target of its adaptive batches with a budget. Idempotent."""
    dataset = Dataset.objects.filter(pk=dataset_id).first()
    if dataset is None:
        logger.warning("dataset #%s no longer exists; no rater model", dataset_id)
        return
    rater_model_refit(dataset=dataset)
    adaptive_budgets_refresh(dataset_id=dataset.pk)


@shared_task(name="annotation.tasks.run_rating_exclusion", acks_late=True)
def run_rating_exclusion(exclusion_id: int) -> str | None:
    """Apply or undo an exclusion by id, whichever its state asks. Idempotent: each chunk
    only touches ratings not yet handled."""
    exclusion = rating_exclusion_run(exclusion_id=exclusion_id)
    return exclusion.state if exclusion is not None else None


@shared_task(name="annotation.tasks.resume_rating_exclusions", acks_late=True)
def resume_rating_exclusions() -> list[int]:
    """Beat: queue every exclusion still applying or undoing. Idempotent."""
    return exclusions_resume()
