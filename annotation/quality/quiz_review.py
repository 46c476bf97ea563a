"""A finished quiz attempt's review: what its rater is shown once the attempt
has ended, for each question THEY answered in it and for no other question of the pool:
the names of the levels nearest their answer and the reference, the reference level's
description for the kind, and the pair's explanation. Never a number (see
``annotation.quality.quiz``)."""

from __future__ import annotations

from dataclasses import dataclass

from annotation.core import cxc
from annotation.models import GoldPair, GoldPurpose, GoldRating, QuizAttempt
from annotation.serving.gold import gold_pair_assignment
from annotation.serving.shapes import Item


@dataclass(frozen=True)
class QuizReviewEntry:
    """One answered question of a finished attempt, as its rater is shown it: the pair,
    the names of the levels nearest the rater's answer and the reference, the reference
    level's description for the kind and the pair's explanation. Never a number (see the
    module's docstring)."""

    gold_pair_id: int
    items: tuple[Item, ...]
    your_level: str
    reference_level: str
    reference_detail: str
    explanation: str


def attempt_answers(attempt: QuizAttempt):
    """The attempt's answers: its rater's quiz answers of its number to its questions."""
    return GoldRating.objects.filter(
        rater_id=attempt.rater_id,
        dataset_id=attempt.dataset_id,
        purpose=GoldPurpose.QUIZ,
        attempt=attempt.number,
        gold_pair_id__in=attempt.order,
    )


def gold_with_items():
    """Gold pairs read with what their items need, in one query."""
    return GoldPair.objects.select_related("dataset", "caption_a", "caption_b", "image_a", "image_b")


def question_items(pair: GoldPair, attempt: QuizAttempt) -> tuple[Item, ...]:
    """A question's items (captions, pictures) as the rating page shows them."""
    return gold_pair_assignment(pair, slot_id=pair.pk, lease_expires_at=attempt.started_at, resumed=False).items


def attempt_review(attempt: QuizAttempt) -> tuple[QuizReviewEntry, ...]:
    """The finished attempt's answered questions in the order they were asked, each with
    the reference level's name: only questions this rater answered in this attempt."""
    answers = {answer.gold_pair_id: answer for answer in attempt_answers(attempt)}
    pairs = gold_with_items().in_bulk(list(answers))
    entries = []
    for pair_id in attempt.order:
        if pair_id not in answers:
            continue
        answer, pair = answers[pair_id], pairs[pair_id]
        reference = cxc.nearest_level(answer.gold_score)
        entries.append(
            QuizReviewEntry(
                gold_pair_id=pair_id,
                items=question_items(pair, attempt),
                your_level=cxc.level_name(answer.score),
                reference_level=cxc.LEVEL_NAMES[reference],
                reference_detail=cxc.LEVEL_DETAILS[pair.kind][reference],
                explanation=pair.explanation,
            )
        )
    return tuple(entries)
