"""Claim and submit a review: the rating policy's claim of the REV kind (held item,
gold now and then, else the queue's next failure) and its submit, with the review's
marks stored in the rating's transaction. Django side.

A review is a rating like any other (the policy decides who may claim and submit, the
queue keeps N distinct raters per failure); what is its own is the marks, checked before
anything is stored, and that the item submitted is a review.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from annotation.core.errors import DomainError
from annotation.evaluation.review.marks import MarksError, marks_bits
from annotation.models import GoldRating, Rating, ReviewMarks, TaskKind
from annotation.rating import policy
from annotation.serving.shapes import Assignment, SubmitResult


class ReviewMarksInvalid(DomainError):
    """Marks that cannot be stored; nothing was."""

    code = "review_marks_invalid"


class NotAReview(DomainError):
    """The item submitted as a review is of another kind; nothing was stored."""

    code = "not_a_review"


def review_claim(*, rater, dataset: str, now: datetime | None = None) -> Assignment | None:
    """The rater's next failure to review in ``dataset`` (their held one resumed), or
    None when none is left for them; the policy's refusals as for any kind."""
    return policy.slot_claim(rater=rater, dataset=dataset, kind=TaskKind.REV, now=now)


def review_submit(
    *, rater, dataset: str, slot_id: int, marks: list[str], now: datetime | None = None, **submission
) -> SubmitResult:
    """Store the review of the slot (or gold lease) ``slot_id``: its score as a rating
    (``policy.rating_submit``'s ``submission``) and its ``marks`` (names of
    ``marks.MARKS``), in one transaction. Raises ReviewMarksInvalid before anything is
    stored; NotAReview (nothing stored) for an item of another kind. A repeat with the
    same idempotency key answers the stored review; its marks stay those first sent."""
    try:
        bits = marks_bits(marks)
    except MarksError as exc:
        raise ReviewMarksInvalid(str(exc)) from None
    with transaction.atomic():
        result = policy.rating_submit(rater=rater, dataset=dataset, slot_id=slot_id, now=now, **submission)
        if not result.replayed:
            ReviewMarks.objects.create(marks=bits, **_reviewed_rating(result.rating_id))
    return result


def _reviewed_rating(rating_id: int) -> dict:
    """The marks' link to the stored rating or gold rating; NotAReview (rolling the
    rating back) when its pair is not a review."""
    kind = Rating.objects.filter(pk=rating_id).values_list("pair__kind", flat=True).first()
    if kind is not None:
        link = {"rating_id": rating_id}
    else:
        kind = GoldRating.objects.filter(pk=rating_id).values_list("gold_pair__kind", flat=True).first()
        link = {"gold_rating_id": rating_id}
    if kind != TaskKind.REV:
        raise NotAReview(f"this item is a {kind} pair, not a failure to review; submit it as a rating")
    return link
