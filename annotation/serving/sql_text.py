"""Model names as SQL text, for the statements written by hand (the queue's, gold
serving's, the exclusion chunk's, the progress statement's): table and column names come
from the models' ``_meta`` and are quoted by the connection, so a renamed field or table
changes the SQL with it instead of breaking it at run time."""

from __future__ import annotations

from django.db import connection

from annotation.models import (
    DEFAULT_GOLD_ONE_IN,
    NAMED_ONLY_KINDS,
    Caption,
    Dataset,
    GoldCounter,
    GoldLease,
    GoldPair,
    GoldRating,
    Image,
    Pair,
    PairSkip,
    Qualification,
    QualitySettings,
    QueueCounter,
    QuizAttempt,
    RaterGoldMet,
    RaterPause,
    RaterTally,
    Rating,
    RatingSlot,
    SlotState,
    SpeedFloor,
)


class SqlTable:
    """A model as SQL text: ``{t}`` is its quoted table, ``{t.field}`` the quoted column
    of a field (``{t.pair}`` is ``"pair_id"``); an unknown field raises FieldDoesNotExist."""

    def __init__(self, model):
        self._model = model

    def __str__(self) -> str:
        return connection.ops.quote_name(self._model._meta.db_table)

    def __getattr__(self, field: str) -> str:
        return connection.ops.quote_name(self._model._meta.get_field(field).column)


TABLES = {
    "dataset": Dataset,
    "caption": Caption,
    "image": Image,
    "pair": Pair,
    "slot": RatingSlot,
    "rating": Rating,
    "gold_rating": GoldRating,
    "gold": GoldPair,
    "gold_lease": GoldLease,
    "gold_counter": GoldCounter,
    "gold_met": RaterGoldMet,
    "settings": QualitySettings,
    "skip": PairSkip,
    "qualification": Qualification,
    "counter": QueueCounter,
    "floor": SpeedFloor,
    "pause": RaterPause,
    "attempt": QuizAttempt,
    "tally": RaterTally,
}


def render_sql(sql: str, **fragments: str) -> str:
    """``sql`` with its ``{table}`` / ``{table.field}`` names and ``{state_*}`` literals
    filled in. The slot states stay literals: the partial indexes' conditions name them."""
    tables = {name: SqlTable(model) for name, model in TABLES.items()}
    states = {f"state_{state.value}": f"'{state.value}'" for state in SlotState}
    return sql.format(
        **tables, **states, default_one_in=DEFAULT_GOLD_ONE_IN, named_only=named_only_literals(), **fragments
    )


def named_only_literals() -> str:
    """NAMED_ONLY_KINDS as SQL literals, for a claim's ``kinds``: served when asked by name."""
    return ", ".join(f"'{kind}'" for kind in sorted(NAMED_ONLY_KINDS))
