"""The rating page's submit and the claim of the rater's next pair in one round trip and
one transaction, on PostgreSQL.

The page sends one request per rated item: store the rating, claim the next pair, answer
both with the rater's progress. Stored, then claimed, each in its own statement, its own
round trip and its own commit, that was two of each per item; here the submit's one
statement (``submit_statements.submit_fast_stashed``) and the claim's
(``statements.claim_ordinary_after_submit``, with the progress read in it) travel
together, as one implicit transaction, committed once when the rating's WAL record is
flushed. The submit leaves its row in a setting of the transaction, the claim claims only
when there is one and answers it beside its own, in one row.

It applies where the claim's first statement would be ``claim_ordinary``'s (a dataset in
which this process has met no active gold pair lately) and outside a caller's
transaction. Whatever the submit does not store (an item not simply held, a repeat, a
key used before, a rater paused since the claim) stores nothing and claims nothing,
and the caller takes the stepwise path, which says why (``NOT_STORED``); so does a
unique violation of either statement, or a deadlock with the rater's own other tab (the
transaction is rolled back whole). A gold lease's rating is stored as a slot's, but
claims nothing (the rater may be paused by it): ``HANDED_OVER`` beside it, as beside a
rating in a dataset found to have an active gold pair: the caller claims the way that
serves gold.
"""

from __future__ import annotations

from django.db import IntegrityError, OperationalError, connection

from annotation.core.sql import execute, hot_cursor, use_postgres_sql
from annotation.serving import gold, statements, submit_statements
from annotation.serving.claim import claim_values, claimed_assignment, gold_seen_lately, note_gold_seen
from annotation.serving.shapes import Assignment, ClaimRead, SubmitResult, lease_ttl, service_now
from annotation.serving.submit import stored_result, submission_values


class HandedOver:
    """The claim after the submit claimed nothing because the dataset has an active gold
    pair: the caller claims again, the way that serves gold."""

    def __repr__(self) -> str:
        return "HANDED_OVER"


HANDED_OVER = HandedOver()


class NotStored:
    """The submit's statement ran and stored nothing (nothing written): the caller takes
    the stepwise path, which says why, without trying the statement again."""

    def __repr__(self) -> str:
        return "NOT_STORED"


NOT_STORED = NotStored()

# SQLSTATEs of a transaction PostgreSQL ended because of another one: a deadlock, a
# serialization failure.
ROLLED_BACK_RACES = ("40P01", "40001")


def rating_submit_then_claim(
    *, rater, dataset: str, slot_id: int, kind: str, read: ClaimRead | None, submission: dict
) -> tuple[SubmitResult, Assignment | HandedOver | None] | NotStored | None:
    """Store the rating of the slot or gold lease ``rater`` holds and claim their next
    pair of ``kind`` (with ``read`` in the claim, as ``slot_claim`` runs it) in one round
    trip: (the stored rating, the assignment, None when nothing was claimed (nothing left
    for the rater, or they were paused since), or HANDED_OVER). NOT_STORED when the
    submit stored nothing; None when this way does not apply: nothing was written either
    way, and the caller stores the rating the stepwise way or the usual way.
    ``submission``: as ``routing.rating_submit``'s values (score, times, adjustments,
    idempotency key); raises QueueInputError for a bad one."""
    # The round trip must be a transaction of its own: not in a caller's (an atomic block
    # turns autocommit off), whose transaction a unique violation would spoil.
    if not use_postgres_sql() or not connection.get_autocommit() or gold_seen_lately(dataset):
        return None
    now = service_now(None)
    rating = submission_values(rater=rater, now=now, **submission)
    extra, claim = claim_values(rater, dataset, kind, now=now, expires=now + lease_ttl(), gold=True, read=read)
    # One value per name across the two ("rater" and "now" are the same in both).
    values = {**claim, **submit_statements.submit_fast_values(slot_id=slot_id, dataset=dataset, rating=rating)}
    try:
        with hot_cursor() as cursor:
            execute(
                cursor,
                submit_statements.submit_fast_stashed(),
                values,
                then=statements.claim_ordinary_after_submit(extra),
            )
            *claim_row, row_found, stored = cursor.fetchone()
    except IntegrityError:
        return NOT_STORED  # rolled back whole: the stepwise way names the key used before
    except OperationalError as error:
        # Two tabs of one rater, each rating one kind and asking for the other's: each
        # claim waits for the slot the other's submit holds, and PostgreSQL ends one.
        # Rolled back whole: the usual way stores, commits, then claims.
        if getattr(error.__cause__, "pgcode", None) not in ROLLED_BACK_RACES:
            raise
        return NOT_STORED
    if not stored:
        return NOT_STORED
    row = submit_statements.stored_row(stored)
    if row[0] == submit_statements.GOLD_STORED:
        return gold.gold_stored(rater=rater, lease_id=slot_id, row=row, now=now), HANDED_OVER
    result = stored_result(row, slot_id=slot_id, now=now)
    if row_found is None:
        return result, None
    if claim_row[0] is None:  # claim_ordinary's row of NULLs: the dataset has an active gold pair
        note_gold_seen(dataset)
        return result, HANDED_OVER
    return result, claimed_assignment(claim_row, now=now, read=read)
