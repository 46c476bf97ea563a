"""The rating queue: claim, heartbeat, submit, skip and flag a rating slot.

Guarantees, all held by the database rather than by this code:
- a pair never gets more ratings than it has slots (``Rating.slot`` is one-to-one) and
  never two from one rater (unique ``(pair, rater)`` on slots and on ratings);
- a rater holds at most one lease per dataset and kind (a partial unique index), so a
  repeated claim returns the held slot instead of stranding another one;
- a lease is a timestamp: a leased slot whose ``lease_expires_at`` has passed is
  claimable by the next rater, so an abandoned slot returns without any cron job.
  ``leases_release_expired`` (run by Celery beat) only tidies up.

On PostgreSQL the claim is one statement (one short transaction) that walks the partial
index ``slot_claim_idx`` in queue order with ``FOR UPDATE SKIP LOCKED``; its cost depends
on how many entries at the head of the queue it must pass over (pairs the rater already
rated or skipped, rows other claims hold at that moment), not on the number of open
slots. A submission locks its pair row (FOR NO KEY UPDATE) first and then slot rows of
that pair, and so do skips and flags; writers of several pairs (exclusion, retirement, a
participant leaving) lock the pairs in id order first; every other writer locks one slot
row and, holding it, waits for nothing a submission holds (the claim skips locked rows;
foreign-key checks take KEY SHARE on the pair, which NO KEY UPDATE admits), so the
writers cannot deadlock.

Other databases (the embedded SQLite mode) run the same rules through the ORM; SQLite
serializes writers, which keeps the guarantees at a lower throughput.

Every service takes ``now`` (default: ``django.utils.timezone.now()``) so tests control
the clock, and raises a DomainError naming the problem, with nothing written, on bad input.

Modules: ``routing`` (queue or gold: where a claim, a submit, a heartbeat, a skip or a
flag goes, decided once), ``shapes`` (limits, input error, items and assignments),
``claim``, ``submit`` (a slot's stepwise submit), ``submit_then_claim`` (the rating
page's submit and next claim in one round trip), ``slots`` (slot locking, heartbeat,
skip, flag), ``upkeep`` (expired leases, counters), ``statements``,
``submit_statements`` and ``sql_text`` (every SQL statement of the hot path, the common
submit of a slot or a gold lease among them), ``gold``, ``gold_sql`` and ``gold_ids``
(gold pairs served inside the queue), ``pauses`` (the pause state a claim and a submit
check, the automatic pause after too large a gold error), ``pairs`` (pair writes),
``pairs_left`` (how many pairs are left for a rater), ``watch`` (the queue figures the
metrics endpoint reads) and ``tasks`` (the beat's upkeep).

This package is a mechanism: it knows slots, leases and gold pairs, not crowds, quizzes or
the rating policy (the import contract's layers). Every entry point goes through
``annotation.rating.policy``, which decides who may claim or submit; ``routing`` then
decides between gold serving and the queue's slots.
"""

from annotation.core.cxc import SCORE_MAX, SCORE_MIN
from annotation.serving.claim import slot_claim
from annotation.serving.routing import rating_submit
from annotation.serving.shapes import (
    MAX_ADJUSTMENTS,
    MAX_FLAG_NOTE,
    MAX_IDEMPOTENCY_KEY,
    MAX_TIME_ON_ITEM_MS,
    Assignment,
    ClaimRead,
    Item,
    QueueInputError,
    SubmitResult,
    image_url,
    image_url_of,
    lease_ttl,
)
from annotation.serving.slots import lock_pairs_of, slot_flag, slot_heartbeat, slot_skip
from annotation.serving.submit_then_claim import HANDED_OVER, NOT_STORED, rating_submit_then_claim
from annotation.serving.upkeep import (
    leases_release_expired,
    queue_counters_add,
    queue_counters_rebuild,
    rater_tallies_prune,
)

__all__ = [
    "HANDED_OVER",
    "MAX_ADJUSTMENTS",
    "MAX_FLAG_NOTE",
    "MAX_IDEMPOTENCY_KEY",
    "MAX_TIME_ON_ITEM_MS",
    "NOT_STORED",
    "SCORE_MAX",
    "SCORE_MIN",
    "Assignment",
    "ClaimRead",
    "Item",
    "QueueInputError",
    "SubmitResult",
    "image_url",
    "image_url_of",
    "lease_ttl",
    "leases_release_expired",
    "lock_pairs_of",
    "queue_counters_add",
    "queue_counters_rebuild",
    "rater_tallies_prune",
    "rating_submit",
    "rating_submit_then_claim",
    "slot_claim",
    "slot_flag",
    "slot_heartbeat",
    "slot_skip",
]
