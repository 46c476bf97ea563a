"""Rated rows mapped to the split's items: indices instead of ids, repeated pairs merged."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from annotation.core.cxc import FILE_PREFIX
from annotation.evaluation.inputs import IMAGE, MODALITIES, EvaluationError, RatedPairs, Space, SplitItems, show_keys


@dataclass
class IndexedRows:
    """One kind's rows mapped to split item indices (rows outside the split dropped only
    when asked): ``first``, ``second`` int64 (m,) indices into the split's items of each
    side's modality, ``scores`` float64 (m,); ``rows`` rows read, ``left_out`` dropped."""

    first: np.ndarray
    second: np.ndarray
    scores: np.ndarray
    rows: int
    left_out: int


def index_rows(
    pairs: RatedPairs, items: SplitItems, spaces: dict[str, Space | None], restrict_to_split: bool
) -> IndexedRows:
    """Map ``pairs`` to indices of ``items``. A rated id outside the split raises
    EvaluationError (naming the ids, and the vectors that lack them) unless
    ``restrict_to_split``; ``spaces``: modality -> the given space or None."""
    lookups = []
    for keys, modality in zip((pairs.first, pairs.second), MODALITIES[pairs.kind], strict=True):
        index = items.image_index if modality == IMAGE else items.caption_index
        lookups.append(np.fromiter((index.get(key, -1) for key in keys), np.int64, len(keys)))
    inside = (lookups[0] >= 0) & (lookups[1] >= 0)
    if not inside.all() and not restrict_to_split:
        _refuse_rows_outside(pairs, items, spaces, lookups)
    return IndexedRows(
        first=lookups[0][inside],
        second=lookups[1][inside],
        scores=pairs.scores[inside],
        rows=len(pairs),
        left_out=int((~inside).sum()),
    )


def _refuse_rows_outside(
    pairs: RatedPairs, items: SplitItems, spaces: dict[str, Space | None], lookups: list[np.ndarray]
) -> None:
    for keys, found, modality in zip((pairs.first, pairs.second), lookups, MODALITIES[pairs.kind], strict=True):
        outside = sorted({keys[i] for i in np.flatnonzero(found < 0)})
        if not outside:
            continue
        space = spaces[modality]
        known = set(space.ids) if space is not None else set()
        no_vector = [key for key in outside if key not in known]
        if space is not None and no_vector:
            raise EvaluationError(
                f"{pairs.source}: the {modality} vectors ({space.source}) lack {len(no_vector)} "
                f"{modality} id(s) of the ratings: {show_keys(no_vector)}"
            )
        raise EvaluationError(
            f"{pairs.source}: {len(outside)} {modality} id(s) are not {modality}s of split {items.name!r} "
            f"of the dataset: {show_keys(outside)} (--restrict-to-split evaluates only the rows inside the split)"
        )


@dataclass(frozen=True)
class SplitRows:
    """Every kind's rows inside one split: ``read`` the kinds that had a ratings file,
    ``indexed`` the kinds mapped to the split (those a task of the run needs)."""

    split: str
    read: frozenset[str]
    indexed: dict[str, IndexedRows]
    from_database: bool = False

    def missing(self, kind: str) -> str | None:
        """Why ``kind`` has no rows to evaluate, or None when it has some."""
        if kind not in self.read and self.from_database:
            return f"no fully rated {kind} pair of split {self.split!r} in the dataset yet"
        if kind not in self.read:
            return f"no {FILE_PREFIX[kind]}_<split>.csv file for the split"
        if kind not in self.indexed or not self.indexed[kind].scores.size:
            return f"no {kind} rows inside split {self.split!r}"
        return None


def pair_means(
    first: np.ndarray, second: np.ndarray, scores: np.ndarray, n_second: int, unordered: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Merge repeated pairs: returns (first, second, mean score) of each distinct pair,
    int64 (p,), int64 (p,), float64 (p,). ``unordered``: (a, b) and (b, a) are one pair."""
    a, b = (np.minimum(first, second), np.maximum(first, second)) if unordered else (first, second)
    keys, inverse = np.unique(a * n_second + b, return_inverse=True)
    means = np.bincount(inverse, weights=scores) / np.bincount(inverse)
    return keys // n_second, keys % n_second, means
