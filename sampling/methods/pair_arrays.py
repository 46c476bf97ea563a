"""Building blocks of the sampling methods: pair arrays and captions grouped by image. No Django.

A pair is an int64 row ``(a, b)`` of item rows of one split: unordered pairs (SIS, STS)
are stored canonically with ``a < b``, SITS pairs as ``(caption row, image row)``.
Filters keep the pairs' order unless they say otherwise; choices under a budget draw
from the seeded numpy Generator they are given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

EMPTY_PAIRS = np.empty((0, 2), dtype=np.int64)


class BudgetError(ValueError):
    """A method was asked for more pairs than the split can give."""


@dataclass(frozen=True)
class CaptionGroups:
    """Captions grouped by image (co-caption groups), CSR style.

    order: int64 (n_captions,) caption rows sorted by image, ascending within an image;
    starts: int64 (n_images + 1,): image i's captions are ``order[starts[i]:starts[i+1]]``.
    """

    order: np.ndarray
    starts: np.ndarray

    @classmethod
    def build(cls, caption_image: np.ndarray, n_images: int) -> CaptionGroups:
        caption_image = np.asarray(caption_image, dtype=np.int64)
        if caption_image.size and (caption_image.min() < 0 or caption_image.max() >= n_images):
            raise ValueError(f"caption_image holds rows outside 0..{n_images - 1}")
        order = np.argsort(caption_image, kind="stable")
        starts = np.searchsorted(caption_image[order], np.arange(n_images + 1))
        return cls(order=order.astype(np.int64), starts=starts.astype(np.int64))

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.starts)

    def random_caption(self, images: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One uniformly drawn caption row for each image row in ``images``."""
        images = np.asarray(images, dtype=np.int64)
        sizes = self.sizes[images]
        if (sizes == 0).any():
            raise ValueError(f"image row {int(images[np.argmin(sizes)])} has no caption")
        offsets = np.floor(rng.random(images.size) * sizes).astype(np.int64)
        return self.order[self.starts[images] + offsets]


def canonical_pairs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Unordered pairs ``(min, max)``, without self pairs or -1 ids, each once, sorted."""
    a = np.asarray(a, dtype=np.int64).ravel()
    b = np.asarray(b, dtype=np.int64).ravel()
    keep = (a != b) & (a >= 0) & (b >= 0)
    pairs = np.stack([np.minimum(a[keep], b[keep]), np.maximum(a[keep], b[keep])], axis=1)
    return _unique_pairs(pairs)


def _unique_pairs(pairs: np.ndarray) -> np.ndarray:
    """Distinct rows of an int (m, 2) array, sorted."""
    if len(pairs) == 0:
        return EMPTY_PAIRS
    # The sorted distinct keys, decoded: np.unique with return_index sorts stably (three
    # times slower on the 10,000,000 pairs of 2,000,000 images' neighbours), and without
    # it numpy 2 hashes (five times slower again).
    keys = np.sort(_keys(pairs))
    keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])]
    return np.stack([keys >> 32, keys & 0xFFFFFFFF], axis=1)


def neighbour_pairs(neighbours: Sequence[np.ndarray]) -> np.ndarray:
    """Union of the unordered pairs (row, neighbour) over one or more (n, k) neighbour arrays."""
    if not neighbours:
        return EMPTY_PAIRS
    rows = [np.repeat(np.arange(ids.shape[0], dtype=np.int64), ids.shape[1]) for ids in neighbours]
    return canonical_pairs(np.concatenate(rows), np.concatenate([ids.ravel() for ids in neighbours]))


def _keys(pairs: np.ndarray) -> np.ndarray:
    """One int64 per pair, equal for equal pairs (item rows stay far below 2**31)."""
    return (pairs[:, 0].astype(np.int64) << 32) | pairs[:, 1].astype(np.int64)


def fresh_mask(pairs: np.ndarray, queued: np.ndarray | None) -> np.ndarray:
    """bool (m,): which of ``pairs`` are not in ``queued`` (same orientation)."""
    if queued is None or len(queued) == 0 or len(pairs) == 0:
        return np.ones(len(pairs), dtype=bool)
    return ~np.isin(_keys(pairs), _keys(np.asarray(queued, dtype=np.int64)))


def drop_queued(pairs: np.ndarray, queued: np.ndarray | None) -> np.ndarray:
    """``pairs`` without those in ``queued`` (same orientation), order kept."""
    return pairs[fresh_mask(pairs, queued)]


def first_occurrence_rows(pairs: np.ndarray) -> np.ndarray:
    """int64 (r,): the row numbers of ``pairs`` that repeat no earlier row, ascending."""
    if len(pairs) == 0:
        return np.empty(0, dtype=np.int64)
    _, first = np.unique(_keys(pairs), return_index=True)
    return np.sort(first).astype(np.int64)


def check_budget(method: str, budget: int | None, available: int, what: str) -> None:
    if budget is not None and budget > available:
        raise BudgetError(f"{method}: budget {budget} is more than the {available} {what} the split gives")


def choose_uniform(pairs: np.ndarray, budget: int | None, rng: np.random.Generator, method: str, what: str):
    """All pairs (budget None) or ``budget`` of them drawn uniformly; returned sorted."""
    check_budget(method, budget, len(pairs), what)
    if budget is None or budget == len(pairs):
        return pairs
    picked = np.sort(rng.choice(len(pairs), size=budget, replace=False))
    return pairs[picked]


def choose_spread(
    pairs: np.ndarray, groups: np.ndarray, budget: int | None, rng: np.random.Generator, method: str, what: str
):
    """``budget`` pairs spread evenly over groups: every group's first random pick, then
    every group's second, and so on, groups in random order within a round.

    groups: int (m,) group of each pair (its image). Returned sorted.
    """
    check_budget(method, budget, len(pairs), what)
    if budget is None or budget == len(pairs):
        return pairs
    order = np.lexsort((rng.random(len(pairs)), groups))
    sorted_groups = groups[order]
    group_start = np.searchsorted(sorted_groups, sorted_groups, side="left")
    rank = np.empty(len(pairs), dtype=np.int64)
    rank[order] = np.arange(len(pairs)) - group_start
    picked = np.lexsort((rng.random(len(pairs)), rank))[:budget]
    return pairs[np.sort(picked)]
