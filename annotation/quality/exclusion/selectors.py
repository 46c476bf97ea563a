"""Reads of exclusions for the API, the admin and the exports."""

from __future__ import annotations

from django.db.models import QuerySet

from annotation.errors import NotFound
from annotation.models import Dataset, RatingExclusion


def exclusion_list(*, dataset: Dataset) -> QuerySet[RatingExclusion]:
    """A dataset's exclusions, newest first, with the people named on them."""
    return (
        RatingExclusion.objects.filter(dataset=dataset)
        .select_related("rater", "created_by", "undone_by", "dataset")
        .order_by("-created_at", "-id")
    )


def exclusion_get(*, dataset: Dataset, exclusion_id: int) -> RatingExclusion:
    exclusion = exclusion_list(dataset=dataset).filter(pk=exclusion_id).first()
    if exclusion is None:
        raise NotFound(f"no exclusion #{exclusion_id} in {dataset.name}")
    return exclusion
