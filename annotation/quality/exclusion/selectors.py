"""Reads of exclusions for the API, the admin and the exports."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet

from annotation.core.errors import NotFound
from annotation.models import Dataset, Rating, RatingExclusion, RatingStatus
from annotation.quality.exclusion.chunks import rating_scope


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


@dataclass(frozen=True)
class ExclusionReach:
    """What an exclusion not yet made would hit: valid ratings in its scope and the
    distinct pairs they rate (each gets a new slot per rating it loses)."""

    ratings: int
    pairs: int


def exclusion_reach(exclusion: RatingExclusion) -> ExclusionReach:
    """Count the valid ratings and pairs in the scope of ``exclusion`` (unsaved, as
    ``rating_exclusion_check`` returns it), with the rule the exclusion applies."""
    # One rater rates a pair at most once (rating_one_per_rater_per_pair), and the scope is
    # one rater's: its ratings and its pairs are as many.
    ratings = Rating.objects.filter(rating_scope(exclusion), status=RatingStatus.VALID).count()
    return ExclusionReach(ratings=ratings, pairs=ratings)
