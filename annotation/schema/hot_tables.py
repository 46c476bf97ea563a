"""The hot tables: those the rating cycle (claim and submit) writes, or reads under a
lock, on every rated item. A migration that rewrites one of them, or holds a lock on it
while its rows are read, stops the raters for that long; the migration linter refuses
such a migration (``rules``), and ``make bench-upgrade`` migrates while raters rate.

The one list: the linter, the benchmark and the operator guide take it from here.
"""

from __future__ import annotations

from django.apps import apps

# Model label -> why it is hot.
HOT_MODELS = {
    "annotation.Pair": "every claim reads its pair, and the submit that completes a pair updates it",
    "annotation.RatingSlot": "every claim leases a slot and every submit closes it",
    "annotation.Rating": "every submit inserts a rating",
    "annotation.QueueCounter": "the submit that completes a pair counts it down",
    "annotation.RaterTally": "the rating table's triggers count every submit into it",
}


def hot_tables() -> dict[str, str]:
    """Table name -> why it is hot, for every model of HOT_MODELS."""
    return {apps.get_model(label)._meta.db_table: why for label, why in HOT_MODELS.items()}
