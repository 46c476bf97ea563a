"""Storing a rating, for the rating policy (``annotation.rating.policy``, which decides who
may submit): the rating of a slot or of a gold lease through their one-statement paths
first, a gold lease this process served tried as one first, then the stepwise paths that
also say why a submission is refused; an adaptive pair's decision after its last rating."""

from __future__ import annotations

from datetime import datetime

from annotation import serving as queue
from annotation.core.errors import NotFound
from annotation.core.sql import use_postgres_sql
from annotation.rating import adaptive
from annotation.serving import gold
from annotation.serving.claim import process_memory
from annotation.serving.pauses import is_paused_in, paused_error
from annotation.serving.shapes import Assignment, SubmitResult, service_now
from annotation.serving.submit import submission_values
from annotation.serving.submit_then_claim import HandedOver


def store(*, rater, dataset: str, slot_id: int, now: datetime | None, submission: dict) -> SubmitResult:
    """Store the rating of a slot or a gold lease (``_store_rating``); a rating that filled
    an adaptive pair's last slot is followed by the pair's decision: close, or one more
    slot (annotation.rating.adaptive)."""
    stored = _store_rating(rater=rater, dataset=dataset, slot_id=slot_id, now=now, submission=submission)
    if stored.adaptive_full:
        adaptive.pair_extend_or_close(stored.pair_id)
    return stored


def store_then_claim(
    *, rater, dataset: str, slot_id: int, kind: str, read, submission: dict
) -> tuple[SubmitResult, Assignment | HandedOver | None] | None:
    """Store the rating of a slot and claim the rater's next pair of ``kind`` in one round
    trip (``queue.rating_submit_then_claim``), then an adaptive pair's decision as
    ``store`` makes it; None when that way does not apply (a gold lease this process
    served among them) or stored nothing: nothing was written, ``store`` then says why."""
    if _gold_served.get(slot_id, False):
        return None
    done = queue.rating_submit_then_claim(
        rater=rater, dataset=dataset, slot_id=slot_id, kind=kind, read=read, submission=submission
    )
    if done is not None and done[0].adaptive_full:
        # After the next lease, not before as in ``store``: the rater cannot be served
        # this pair again either way; should the decision fail, the answer is an error
        # and the lease waits for the rater's next claim, which resumes it.
        adaptive.pair_extend_or_close(done[0].pair_id)
    return done


def _store_rating(*, rater, dataset: str, slot_id: int, now: datetime | None, submission: dict) -> SubmitResult:
    """Store the rating of a slot or a gold lease. On PostgreSQL the common cases first, one
    statement each (an ordinary slot, then a gold lease: ids of both come from one
    sequence, so an id is tried as either; a gold lease this process served is tried
    first); then the stepwise paths, which also say why a submission is refused."""
    if use_postgres_sql():
        at = service_now(now)
        gold_first = _gold_served.get(slot_id, False)
        tries = (_gold_fast, _queue_fast) if gold_first else (_queue_fast, _gold_fast)
        for fast in tries:
            stored = fast(rater=rater, dataset=dataset, slot_id=slot_id, now=at, submission=submission)
            if stored is not None:
                break
        _gold_served.pop(slot_id, None)
        if stored is not None:
            return stored
    try:
        return queue.rating_submit(rater=rater, dataset=dataset, slot_id=slot_id, now=now, try_fast=False, **submission)
    except NotFound:
        now = service_now(now)
        rating = submission_values(rater=rater, now=now, **submission)
        if is_paused_in(rater=rater, dataset=dataset):
            # A repeat is answered first, as the queue answers it: a paused rater re-sending
            # old submissions must not learn which of them were gold from the answers.
            replay = gold.gold_replay(rater=rater, dataset=dataset, lease_id=slot_id, key=rating["key"])
            if replay is not None:
                return replay
            raise paused_error(username=rater.get_username(), dataset=dataset) from None
        stored = gold.gold_submit(rater=rater, dataset=dataset, lease_id=slot_id, rating=rating, now=now)
        if stored is None:
            raise
        return stored


# Gold leases this process served lately (as keys): their submit tries the gold statement
# first, sparing the queue's statement that would find no slot of that id (a third of a
# gold item's PostgreSQL CPU in its submit), and answers in one statement, as an ordinary
# item's. Per process: a submit that comes to another one tries both, as before. Bounded:
# emptied when full.
_gold_served: dict[int, bool] = {}
GOLD_SERVED_LIMIT = 10_000


def remember_gold(assignment: Assignment | None) -> Assignment | None:
    if assignment is not None and process_memory():
        if len(_gold_served) >= GOLD_SERVED_LIMIT:
            _gold_served.clear()
        _gold_served[assignment.slot_id] = True
    return assignment


def _queue_fast(*, rater, dataset: str, slot_id: int, now: datetime, submission: dict) -> SubmitResult | None:
    return queue.rating_submit_fast(rater=rater, dataset=dataset, slot_id=slot_id, now=now, **submission)


def _gold_fast(*, rater, dataset: str, slot_id: int, now: datetime, submission: dict) -> SubmitResult | None:
    rating = submission_values(rater=rater, now=now, **submission)
    return gold.gold_submit_fast(rater=rater, dataset=dataset, lease_id=slot_id, rating=rating, now=now)
