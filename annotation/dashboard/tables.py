"""The columns a campaign snapshot is computed from, and the complete pairs' agreement
worked out once for every part of it. Pure numpy, no Django.

Complete pairs (all required ratings, not retired: the pairs an export writes) go
through the export's own code: :class:`ExportAgreement` (alpha per kind and batch,
agreement per kind), :class:`ExportCounts` (positives) and :func:`aggregate_pairs`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from annotation.core.cxc import KINDS
from annotation.export.blocks import ExportAgreement, ExportCounts
from annotation.quality.aggregation import RaterAgreement, aggregate_pairs, pad_ragged
from annotation.quality.group_stats import split_half_reliability

# ExportCounts keys its tallies by split; the dashboard counts the whole dataset as one.
ALL = "all"
# The reliability curve shuffles each pair's ratings with this seed: a snapshot of the
# same ratings shows the same curve.
RELIABILITY_SEED = 0


@dataclass(frozen=True)
class PairTable:
    """Every pair of a dataset, sorted by ``id: int64 (n,)``: ``kind: int64 (n,)`` index
    into cxc.KINDS, ``batch: int64 (n,)``, ``method: int64 (n,)`` index into ``methods``,
    ``done`` / ``required: int64 (n,)`` ratings, ``retired: bool (n,)``."""

    id: np.ndarray
    kind: np.ndarray
    batch: np.ndarray
    method: np.ndarray
    done: np.ndarray
    required: np.ndarray
    retired: np.ndarray
    methods: list[str]

    @property
    def complete(self) -> np.ndarray:
        """bool (n,): every required rating present and not retired (what an export writes)."""
        return (self.done >= self.required) & ~self.retired


@dataclass(frozen=True)
class RatingTable:
    """Every rating of a dataset, ordered by pair id then rating id: ``pair: int64 (m,)``
    pair ids, ``rater: int64 (m,)`` user ids, ``score: float64 (m,)``, ``time_ms:
    int64 (m,)`` time on item, ``at: float64 (m,)`` epoch seconds (UTC) of the rating."""

    pair: np.ndarray
    rater: np.ndarray
    score: np.ndarray
    time_ms: np.ndarray
    at: np.ndarray


@dataclass
class CompleteAgreement:
    """The complete pairs' numbers. Per rating of a complete pair: ``rating: int64 (c,)``
    its position in the RatingTable and ``others: float64 (c,)`` the mean of the pair's
    other ratings. Per complete pair: ``pair_row: int64 (p,)`` its row in the PairTable,
    ``mean`` / ``std: float64 (p,)``."""

    export: ExportAgreement = field(default_factory=ExportAgreement)
    counts: ExportCounts = field(default_factory=ExportCounts)
    pooled: RaterAgreement = field(default_factory=RaterAgreement)
    rating: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    others: np.ndarray = field(default_factory=lambda: np.zeros(0))
    pair_row: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    mean: np.ndarray = field(default_factory=lambda: np.zeros(0))
    std: np.ndarray = field(default_factory=lambda: np.zeros(0))
    # Per kind (cxc.KINDS) with complete pairs: stats.split_half_reliability.
    reliability: dict[str, dict] = field(default_factory=dict)


def pair_rows(pairs: PairTable, ratings: RatingTable) -> np.ndarray:
    """Each rating's row in the pair table: int64 (m,). Raises ValueError for a rating of
    a pair the table lacks."""
    rows = np.searchsorted(pairs.id, ratings.pair)
    if rows.size and (rows.max() >= pairs.id.shape[0] or (pairs.id[rows] != ratings.pair).any()):
        raise ValueError("a rating's pair is missing from the pair table")
    return rows


def complete_agreement(pairs: PairTable, ratings: RatingTable, rows: np.ndarray) -> CompleteAgreement:
    """Feed the complete pairs, kind by kind, through the export's aggregation.
    ``rows``: :func:`pair_rows`."""
    out = CompleteAgreement()
    complete = pairs.complete[rows]
    parts: dict[str, list[np.ndarray]] = {"rating": [], "others": [], "pair_row": [], "mean": [], "std": []}
    for code, kind in enumerate(KINDS):
        chosen = np.flatnonzero(complete & (pairs.kind[rows] == code))
        if not chosen.size:
            continue
        own_rows = rows[chosen]
        starts = np.flatnonzero(np.concatenate(([True], own_rows[1:] != own_rows[:-1])))
        counts = np.diff(np.append(starts, own_rows.shape[0]))
        first = own_rows[starts]
        padded = pad_ragged(ratings.score[chosen], counts)
        raters = ratings.rater[chosen]
        others = out.export.add_pairs(
            task=kind,
            padded=padded,
            counts=counts,
            batch_ids=pairs.batch[first],
            raters=raters,
            times_ms=ratings.time_ms[chosen],
        )
        out.reliability[kind] = split_half_reliability(padded, counts, np.random.default_rng(RELIABILITY_SEED))
        stats = aggregate_pairs(padded, task=kind)
        methods = [pairs.methods[m] for m in pairs.method[first].tolist()]
        out.counts.add_pairs(split=ALL, task=kind, methods=methods, stats=stats, batch_ids=pairs.batch[first])
        out.pooled.add(raters, ratings.score[chosen], others, ratings.time_ms[chosen])
        for name, value in (
            ("rating", chosen),
            ("others", others),
            ("pair_row", first),
            ("mean", stats.mean),
            ("std", stats.std),
        ):
            parts[name].append(value)
    for name, values in parts.items():
        if values:
            setattr(out, name, np.concatenate(values))
    return out
