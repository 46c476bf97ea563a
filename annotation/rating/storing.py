"""Storing a rating, for the rating policy (``annotation.rating.policy``, which decides who
may submit): through serving's routing (``annotation.serving.routing``: the common case's
one statement for a slot or a gold lease, else the stepwise path of the item's kind),
then an adaptive pair's decision after its last rating."""

from __future__ import annotations

from datetime import datetime

from annotation.rating import adaptive
from annotation.serving import routing
from annotation.serving.shapes import Assignment, ClaimRead, SubmitResult
from annotation.serving.submit_then_claim import HANDED_OVER, NOT_STORED, HandedOver, rating_submit_then_claim


def store(
    *, rater, dataset: str, slot_id: int, now: datetime | None, submission: dict, tried_fast: bool = False
) -> SubmitResult:
    """Store the rating of a slot or a gold lease (``routing.rating_submit``; ``tried_fast``
    as there); a rating that filled an adaptive pair's last slot is followed by the pair's
    decision: close, or one more slot (annotation.rating.adaptive)."""
    stored = routing.rating_submit(
        rater=rater, dataset=dataset, slot_id=slot_id, now=now, tried_fast=tried_fast, **submission
    )
    if stored.adaptive_full:
        adaptive.pair_extend_or_close(stored.pair_id)
    return stored


def store_then_claim(
    *, rater, dataset: str, slot_id: int, kind: str, read: ClaimRead | None, submission: dict
) -> tuple[SubmitResult, Assignment | HandedOver | None]:
    """Store the rating of a slot or a gold lease and, where it applies, claim the rater's
    next pair of ``kind`` in the same round trip (``rating_submit_then_claim``), then an
    adaptive pair's decision as ``store`` makes it. The claim comes back as
    HANDED_OVER when the caller is to claim on its own: that way did not apply, stored
    nothing (then the stepwise path stored the rating or said why), stored a gold rating,
    or met a dataset with gold."""
    done = rating_submit_then_claim(
        rater=rater, dataset=dataset, slot_id=slot_id, kind=kind, read=read, submission=submission
    )
    if done is None or done is NOT_STORED:
        tried_fast = done is NOT_STORED
        stored = store(
            rater=rater, dataset=dataset, slot_id=slot_id, now=None, submission=submission, tried_fast=tried_fast
        )
        return stored, HANDED_OVER
    if done[0].adaptive_full:
        # After the next lease, not before as in ``store``: the rater cannot be served
        # this pair again either way; should the decision fail, the answer is an error
        # and the lease waits for the rater's next claim, which resumes it.
        adaptive.pair_extend_or_close(done[0].pair_id)
    return done
