"""Per-block work of an export: rating rows -> a block of aggregated pairs, and the
counts and agreement accumulated over blocks. Pure numpy, no Django.

A rating row is the tuple ``(pair id, ratings required, batch id, sampling method,
item1 key, item2 key, rater id, score, time on item ms)``; rows arrive ordered by pair,
a pair's rows together. :func:`cut_blocks` cuts them into blocks that never split a
pair, :func:`block_build` aggregates one block (:mod:`annotation.quality.aggregation`), and
:class:`ExportCounts` / :class:`ExportAgreement` gather what the manifest and
``agreement.json`` report.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice

import numpy as np

from annotation.export.formats import ExportBlock, ExportError
from annotation.quality.aggregation import (
    IntervalAlpha,
    PairAggregates,
    RaterAgreement,
    RaterSummary,
    aggregate_pairs,
    leave_one_out_means,
    pad_ragged,
    ragged_positions,
)


def cut_blocks(rows: Iterator[tuple], size: int) -> Iterator[list[tuple]]:
    """Cut rows ordered by pair id (first field) into lists of about ``size`` rows that
    never split a pair (a pair with more than ``size`` rows makes one longer list)."""
    carry: list[tuple] = []
    while True:
        chunk = list(islice(rows, size))
        if len(chunk) < size:
            if carry or chunk:
                yield carry + chunk
            return
        buffered = carry + chunk
        last = buffered[-1][0]
        cut = len(buffered)
        while cut > 0 and buffered[cut - 1][0] == last:
            cut -= 1
        if cut == 0:
            carry = buffered
            continue
        yield buffered[:cut]
        carry = buffered[cut:]


@dataclass(frozen=True)
class RatedBlock:
    """A built block and the arrays agreement needs: ``padded: float64 (n, r)``
    NaN-padded scores per pair, ``counts: int64 (n,)`` ratings per pair,
    ``raters: int64 (m,)`` the raters' own ids in rating order."""

    block: ExportBlock
    padded: np.ndarray
    counts: np.ndarray
    raters: np.ndarray


def block_build(rows: list[tuple], *, task: str, rater_names: Callable[[set[int]], Mapping[int, str]]) -> RatedBlock:
    """Aggregate one block of rating rows (at least one row, whole pairs only) of ``task``.

    ``rater_names`` is called once with the block's rater ids and returns a mapping
    covering them to the names written in the files. Raises ExportError naming the first
    pair whose row count differs from the ratings it requires.
    """
    pair_id, required, batch, method, key1, key2, rater, score, time_ms = zip(*rows, strict=True)
    pair_ids = np.array(pair_id, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate(([True], pair_ids[1:] != pair_ids[:-1])))
    counts = np.diff(np.append(starts, pair_ids.shape[0]))
    wanted = np.array(required, dtype=np.int64)[starts]
    wrong = np.flatnonzero(counts != wanted)
    if wrong.size:
        at = int(wrong[0])
        raise ExportError(
            f"pair #{int(pair_ids[starts[at]])} is marked complete with {int(wanted[at])} ratings "
            f"but has {int(counts[at])}; the pair counters are inconsistent"
        )
    first = starts.tolist()
    names = rater_names(set(rater))
    scores = np.array(score, dtype=np.float64)
    padded = pad_ragged(scores, counts)
    block = ExportBlock(
        item1=[key1[i] for i in first],
        item2=[key2[i] for i in first],
        sampling_method=[method[i] for i in first],
        batch_id=np.array(batch, dtype=np.int64)[starts],
        stats=aggregate_pairs(padded, task=task),
        pair_index=np.repeat(np.arange(starts.shape[0]), counts),
        rater_id=[names[r] for r in rater],
        score=scores,
        time_on_item_ms=np.array(time_ms, dtype=np.int64),
    )
    return RatedBlock(block=block, padded=padded, counts=counts, raters=np.array(rater, dtype=np.int64))


@dataclass
class Tally:
    """Sums over exported pairs: pairs, their ratings, positives and the sum of scores."""

    pairs: int = 0
    ratings: int = 0
    positive: int = 0
    score_sum: float = 0.0

    def as_dict(self) -> dict:
        mean = self.score_sum / self.pairs if self.pairs else None
        return {"pairs": self.pairs, "ratings": self.ratings, "positive": self.positive, "mean_score": mean}


@dataclass
class ExportCounts:
    """Tallies per (split, task, sampling method) and per (batch, sampling method)."""

    _tallies: dict[tuple[str, str, str], Tally] = field(default_factory=dict)

    def add(self, *, split: str, task: str, block: ExportBlock) -> None:
        stats, batch_ids = block.stats, block.batch_id
        self.add_pairs(split=split, task=task, methods=block.sampling_method, stats=stats, batch_ids=batch_ids)

    def add_pairs(
        self, *, split: str, task: str, methods: Sequence[str], stats: PairAggregates, batch_ids: np.ndarray
    ) -> None:
        """Tally aggregated pairs: ``methods`` one name per pair, ``stats`` from
        :func:`aggregate_pairs`, ``batch_ids: int (n,)`` (the campaign dashboard feeds
        its pairs here too, so its positives are counted as the export counts them)."""
        for method, count, positive, score, batch_id in zip(
            methods,
            stats.count.tolist(),
            stats.positive.tolist(),
            stats.agg_score.tolist(),
            np.asarray(batch_ids).tolist(),
            strict=True,
        ):
            for key in ((split, task, method), ("batch", str(batch_id), method)):
                tally = self._tallies.get(key)
                if tally is None:
                    tally = self._tallies[key] = Tally()
                tally.pairs += 1
                tally.ratings += count
                tally.positive += positive
                tally.score_sum += score

    def by_method(self, *, split: str, task: str) -> dict[str, dict]:
        """``{method: tally dict}`` of one split and task, methods sorted."""
        return {
            method: tally.as_dict()
            for (s, t, method), tally in sorted(self._tallies.items())
            if s == split and t == task
        }

    def total(self, *, split: str, task: str) -> dict:
        """The tally dict of one split and task over all methods (zeros when none)."""
        total = Tally()
        for (s, t, _), tally in self._tallies.items():
            if s == split and t == task:
                total.pairs += tally.pairs
                total.ratings += tally.ratings
                total.positive += tally.positive
                total.score_sum += tally.score_sum
        return total.as_dict()

    def of_batch(self, batch_id: int) -> dict[str, dict]:
        """``{method: tally dict}`` of the exported pairs of one sampling batch."""
        return self.by_method(split="batch", task=str(batch_id))


def alpha_dict(alpha: IntervalAlpha) -> dict:
    return {"alpha_interval": alpha.alpha, "units": alpha.units, "values": alpha.values}


@dataclass
class ExportAgreement:
    """Rater agreement fed block by block: Krippendorff's interval alpha per task and per
    (batch, task), and per task each rater's agreement with the others."""

    _alpha_task: dict[str, IntervalAlpha] = field(default_factory=dict)
    _alpha_batch: dict[tuple[int, str], IntervalAlpha] = field(default_factory=dict)
    _raters: dict[str, RaterAgreement] = field(default_factory=dict)

    def add(self, *, task: str, rated: RatedBlock) -> None:
        self.add_pairs(
            task=task,
            padded=rated.padded,
            counts=rated.counts,
            batch_ids=rated.block.batch_id,
            raters=rated.raters,
            times_ms=rated.block.time_on_item_ms,
        )

    def add_pairs(
        self,
        *,
        task: str,
        padded: np.ndarray,
        counts: np.ndarray,
        batch_ids: np.ndarray,
        raters: np.ndarray,
        times_ms: np.ndarray,
    ) -> np.ndarray:
        """Add pairs of one task: ``padded: float (n, r)`` NaN-padded scores,
        ``counts: int (n,)`` ratings per pair, ``batch_ids: int (n,)``, and per rating in
        row order ``raters: int (m,)`` and ``times_ms: int (m,)``. Returns the others'
        mean of each rating, ``float64 (m,)`` (NaN: no other rating), for callers that
        look at single ratings (the campaign dashboard)."""
        batch_ids = np.asarray(batch_ids)
        self._alpha_task.setdefault(task, IntervalAlpha()).add(padded)
        for batch_id in np.unique(batch_ids).tolist():
            self._alpha_batch.setdefault((batch_id, task), IntervalAlpha()).add(padded[batch_ids == batch_id])
        rows, cols = ragged_positions(counts)
        scores = padded[rows, cols]
        others = leave_one_out_means(padded)[rows, cols]
        self._raters.setdefault(task, RaterAgreement()).add(raters, scores, others, times_ms)
        return others

    def by_task(self, tasks: Iterable[str]) -> dict[str, dict]:
        """``{task: alpha dict}`` for the given tasks that had ratings, in their order."""
        return {task: alpha_dict(self._alpha_task[task]) for task in tasks if task in self._alpha_task}

    def by_batch(self) -> list[dict]:
        """One alpha dict per (batch, task), sorted by batch id then task."""
        return [
            {"batch_id": batch_id, "task": task, **alpha_dict(alpha)}
            for (batch_id, task), alpha in sorted(self._alpha_batch.items())
        ]

    def raters(self, tasks: Iterable[str]) -> dict[str, list[RaterSummary]]:
        """``{task: per-rater summaries}`` for the given tasks that had ratings."""
        return {task: self._raters[task].summaries() for task in tasks if task in self._raters}
