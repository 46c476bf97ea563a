"""The migrations the linter lets pass although its rules refuse them, each with the rules
it breaks and why it stands.

Every one was written before the linter. A migration is never run twice on a database,
so changing one now would change nothing for a database past it; one that has not
reached it yet applies it between campaigns (the operator guide, "Safe migrations"),
when nobody rates. An entry lists exactly the rules its migration breaks: a rule broken
that is not listed, or listed and no longer broken, fails the linter, so the list says
what is true. A new migration is made safe, not listed (0032 and 0035 were made safe:
their indexes are now built CONCURRENTLY, annotation/schema/operations.py).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Excuse:
    rules: frozenset[str]
    why: str


def _excuse(rules: str, why: str) -> Excuse:
    return Excuse(frozenset(rules.split()), why)


EXCUSED = {
    "annotation.0002_initial": _excuse(
        "index-build not-null-without-default validated-constraint",
        "The second half of the first schema: Django put the foreign keys, indexes and constraints of the tables "
        "0001 creates into a migration of their own (they refer to other apps' tables). Both run on a new "
        "database, one after the other, while the tables are empty.",
    ),
    "annotation.0003_queue": _excuse(
        "backfill-under-lock index-build set-not-null validated-constraint whole-table-write",
        "The rating queue's first shape: the slot's copy of its dataset added, filled from the pairs and made NOT "
        "NULL, its indexes and the rating's checks built, the open-pairs counter filled, all in one transaction. "
        "It came with the queue itself, before any slot was rated.",
    ),
    "annotation.0004_lean_pair_and_slot_writes": _excuse(
        "index-build validated-constraint",
        "Leaner pair and slot indexes: Django's AlterField dropped and added the pairs' and slots' foreign keys "
        "again (each checks every row) and built the new indexes in place. Written the same day as the queue, "
        "before a campaign; a database before it applies it between campaigns.",
    ),
    "annotation.0011_quality_control": _excuse(
        "index-build validated-constraint",
        "Quality control's schema: the rating's exclusion (a foreign key, checked over every rating), its index "
        "and the check tying an invalid rating to its exclusion. A database before it applies it between "
        "campaigns.",
    ),
    "annotation.0024_rater_model_and_adaptive_n": _excuse(
        "validated-constraint",
        "Adaptive N's check on the pair (ratings_max at least ratings_required) reads every pair once while "
        "writes wait; a database before it applies it between campaigns.",
    ),
    "annotation.0027_rater_tally": _excuse(
        "backfill-under-lock",
        "The tally's triggers on the rating table, then its backfill from every rating, in one transaction: the "
        "triggers' lock keeps submits out until the backfill commits, on purpose, so that no rating is counted "
        "twice or missed. Its time grows with the ratings stored; apply it between campaigns.",
    ),
}
