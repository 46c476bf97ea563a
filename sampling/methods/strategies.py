"""The CxC pair sampling methods over arrays, with a seeded numpy Generator. No Django.

Items are row numbers of one split: images ``0 .. n_images-1`` and captions
``0 .. n_captions-1``; ``caption_image`` (int64, (n_captions,)) gives each caption's
image row. A pair is an int64 row ``(a, b)``:

- SIS (images) and STS (captions): unordered, stored canonically with ``a < b``;
- SITS: ``(caption row, image row)``.

Rules every method keeps: an item is never paired with itself, an unordered pair
appears once, and a pair given in ``queued`` (already in the dataset) is never chosen.
A budget larger than the fresh pairs a method can give raises ``BudgetError``
(``sampling.methods.pair_arrays``, with the pair filters and choices the methods share).
The same inputs and seed always give the same pairs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from sampling.methods.intrasim import C2I_INTRASIM, Pivots, c2i_intrasim
from sampling.methods.pair_arrays import (
    EMPTY_PAIRS,
    CaptionGroups,
    canonical_pairs,
    choose_spread,
    choose_uniform,
    drop_queued,
    fresh_mask,
    neighbour_pairs,
)
from sampling.search.index import IndexConfig
from sampling.search.neighbours import nearest_neighbours

I2I_CSIM = "i2i_csim"
C2C_ISIM = "c2c_isim"
C2C_COCAPTION = "c2c_cocaption"
C2I_ORIGINAL = "c2i_original"
# Also the order they run in; a method's random stream depends on its place here only,
# so adding another method to a batch never changes this one's pairs.
METHODS = (I2I_CSIM, C2C_ISIM, C2C_COCAPTION, C2I_ORIGINAL, C2I_INTRASIM)
# Which embedding modality a method searches in (the "other" modality of its pairs).
SPACE_MODALITY = {I2I_CSIM: "caption", C2C_ISIM: "image"}


def mean_caption_vectors(caption_vectors: np.ndarray, groups: CaptionGroups, chunk_images: int = 65_536):
    """Each image as the L2-normalized mean of its co-caption vectors.

    caption_vectors: float (n_captions, d), may be a memmap; returns float32 (n_images, d).
    Every image needs at least one caption.
    """
    sizes = groups.sizes
    if (sizes == 0).any():
        raise ValueError(f"image row {int(np.argmin(sizes))} has no caption to take a mean of")
    n_images = len(sizes)
    out = np.empty((n_images, caption_vectors.shape[1]), dtype=np.float32)
    for first in range(0, n_images, chunk_images):
        last = min(first + chunk_images, n_images)
        rows = groups.order[groups.starts[first] : groups.starts[last]]
        if len(rows) and rows[-1] - rows[0] == len(rows) - 1 and (np.diff(rows) == 1).all():
            # Captions stored image by image (the usual case): a slice, not a gather.
            block = np.asarray(caption_vectors[rows[0] : rows[-1] + 1], dtype=np.float32)
        else:
            block = np.asarray(caption_vectors[rows], dtype=np.float32)
        out[first:last] = np.add.reduceat(block, groups.starts[first:last] - groups.starts[first], axis=0)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    # Captions pointing in opposite directions can cancel out; such an image has no
    # direction and cannot take part in a cosine search.
    if (norms == 0).any():
        raise ValueError(f"image row {int(np.argmin(norms[:, 0]))}: its caption vectors sum to zero")
    out /= norms
    return out


# --- the methods -----------------------------------------------------------------------


def i2i_csim(
    neighbours: Sequence[np.ndarray],
    *,
    budget: int | None,
    rng: np.random.Generator,
    queued: np.ndarray | None = None,
) -> np.ndarray:
    """SIS pairs: each image with its k nearest images by mean co-caption embedding.

    neighbours: one int (n_images, k) array per caption space (see ``nearest_neighbours``
    on ``mean_caption_vectors``); the candidates are the union over the spaces.
    Returns image pairs (m, 2), a < b, sorted.
    """
    candidates = drop_queued(neighbour_pairs(neighbours), queued)
    return choose_uniform(candidates, budget, rng, I2I_CSIM, "fresh image pairs among the k nearest neighbours")


def c2c_isim(
    neighbours: Sequence[np.ndarray],
    groups: CaptionGroups,
    *,
    budget: int | None,
    rng: np.random.Generator,
    queued: np.ndarray | None = None,
) -> np.ndarray:
    """STS pairs through image similarity: for each image and each of its k nearest images
    (by image embedding), one random caption from each of the two groups.

    neighbours: int (n_images, k) per image space, union over spaces.
    Returns caption pairs (m, 2), a < b, sorted.
    """
    image_pairs = neighbour_pairs(neighbours)
    if len(image_pairs) == 0:
        candidates = EMPTY_PAIRS
    else:
        first = groups.random_caption(image_pairs[:, 0], rng)
        second = groups.random_caption(image_pairs[:, 1], rng)
        candidates = drop_queued(canonical_pairs(first, second), queued)
    return choose_uniform(candidates, budget, rng, C2C_ISIM, "fresh caption pairs of neighbouring images")


def cocaption_pairs(groups: CaptionGroups) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of captions of the same image: (pairs (m, 2) a < b sorted, image (m,))."""
    sizes = groups.sizes
    pair_parts, image_parts = [], []
    for size in np.unique(sizes):
        if size < 2:
            continue
        images = np.flatnonzero(sizes == size)
        members = groups.order[groups.starts[images][:, None] + np.arange(size)]
        upper_a, upper_b = np.triu_indices(int(size), 1)
        pair_parts.append(np.stack([members[:, upper_a].ravel(), members[:, upper_b].ravel()], axis=1))
        image_parts.append(np.repeat(images, len(upper_a)))
    if not pair_parts:
        return EMPTY_PAIRS, np.empty(0, dtype=np.int64)
    pairs = np.concatenate(pair_parts)
    images = np.concatenate(image_parts)
    order = np.lexsort((pairs[:, 1], pairs[:, 0]))
    return pairs[order], images[order]


# Which co-caption pairs c2c_cocaption draws from. CxC rates five pairs per image of five
# captions, every caption in exactly two: a cycle over the group. "all" is every pair of
# the group (ten for five captions).
COCAPTION_CYCLE = "cycle"
COCAPTION_ALL = "all"
COCAPTION_MODES = (COCAPTION_CYCLE, COCAPTION_ALL)


def cocaption_cycle_pairs(groups: CaptionGroups, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A cycle through each co-caption group in a random order, so every caption of a
    group of n >= 3 is in exactly two of its n pairs (a group of two gives its one pair).
    Returns (pairs (m, 2) a < b sorted, image (m,)), like ``cocaption_pairs``."""
    sizes = groups.sizes
    pair_parts, image_parts = [], []
    for size in np.unique(sizes):
        if size < 2:
            continue
        images = np.flatnonzero(sizes == size)
        members = groups.order[groups.starts[images][:, None] + np.arange(size)]
        members = rng.permuted(members, axis=1)
        steps = 1 if size == 2 else int(size)
        following = np.roll(members, -1, axis=1)
        pair_parts.append(np.stack([members[:, :steps].ravel(), following[:, :steps].ravel()], axis=1))
        image_parts.append(np.repeat(images, steps))
    if not pair_parts:
        return EMPTY_PAIRS, np.empty(0, dtype=np.int64)
    raw = np.concatenate(pair_parts)
    pairs = np.stack([raw.min(axis=1), raw.max(axis=1)], axis=1)  # a cycle's edges are distinct
    images = np.concatenate(image_parts)
    order = np.lexsort((pairs[:, 1], pairs[:, 0]))
    return pairs[order], images[order]


def c2c_cocaption(
    groups: CaptionGroups,
    *,
    budget: int | None,
    rng: np.random.Generator,
    queued: np.ndarray | None = None,
    mode: str = COCAPTION_CYCLE,
) -> np.ndarray:
    """STS pairs within co-caption groups: a cycle through each group (``mode`` cycle,
    as CxC) or every pair of it (all); spread evenly over images when a budget applies.

    Returns caption pairs (m, 2), a < b, sorted.
    """
    if mode not in COCAPTION_MODES:
        raise ValueError(f"c2c_cocaption pairs are {' or '.join(COCAPTION_MODES)}, got {mode!r}")
    pairs, images = cocaption_cycle_pairs(groups, rng) if mode == COCAPTION_CYCLE else cocaption_pairs(groups)
    fresh = fresh_mask(pairs, queued)
    pairs, images = pairs[fresh], images[fresh]
    return choose_spread(pairs, images, budget, rng, C2C_COCAPTION, "fresh co-caption pairs")


def c2i_original(
    caption_image: np.ndarray,
    *,
    budget: int | None,
    rng: np.random.Generator,
    queued: np.ndarray | None = None,
) -> np.ndarray:
    """SITS pairs: every caption with the image it was written for (spread over images
    when a budget applies). Returns (caption row, image row) (m, 2), sorted."""
    caption_image = np.asarray(caption_image, dtype=np.int64)
    pairs = drop_queued(np.stack([np.arange(len(caption_image), dtype=np.int64), caption_image], axis=1), queued)
    return choose_spread(pairs, pairs[:, 1], budget, rng, C2I_ORIGINAL, "fresh original caption-image pairs")


# --- one split, several methods --------------------------------------------------------


@dataclass
class SplitArrays:
    """Everything the methods read about one split.

    caption_image: int64 (n_captions,); image_spaces: name -> float (n_images, d);
    caption_spaces: name -> float (n_captions, d), rows L2-normalized; queued: method ->
    pairs already in the dataset, in that method's orientation; pivots for c2i_intrasim;
    neighbours: modality -> space name -> int64 (n_images, k) found beforehand (the
    spaces of a modality given there are not searched again).
    """

    n_images: int
    caption_image: np.ndarray
    image_spaces: Mapping[str, np.ndarray] = field(default_factory=dict)
    caption_spaces: Mapping[str, np.ndarray] = field(default_factory=dict)
    queued: Mapping[str, np.ndarray] = field(default_factory=dict)
    pivots: Pivots = field(default_factory=Pivots)
    neighbours: Mapping[str, Mapping[str, np.ndarray]] = field(default_factory=dict)


def search_vectors(data: SplitArrays, name: str) -> np.ndarray:
    """What a space's search compares, one row per image: float32 (n_images, d). An
    image space's vectors; a caption space's as the mean of each image's captions."""
    if name in data.image_spaces:
        return np.asarray(data.image_spaces[name], dtype=np.float32)
    groups = CaptionGroups.build(data.caption_image, data.n_images)
    return mean_caption_vectors(data.caption_spaces[name], groups)


@dataclass
class SampleResult:
    """pairs: method -> (m, 2) rows; neighbours: space -> int64 (n_images, k) as searched;
    search_seconds: time spent building indexes and searching them; reports: method ->
    what a method records about its choice (c2i_intrasim's rule and skips)."""

    pairs: dict[str, np.ndarray]
    neighbours: dict[str, np.ndarray]
    search_seconds: float
    index_kinds: dict[str, str]
    reports: dict[str, dict] = field(default_factory=dict)


Step = Callable[[str], None]


def method_rng(seed: int, method: str) -> np.random.Generator:
    return np.random.default_rng([seed, METHODS.index(method)])


def sample_split(
    data: SplitArrays,
    methods: Mapping[str, int | None],
    *,
    k: int,
    seed: int,
    index: IndexConfig | None = None,
    step: Step | None = None,
    cocaption: str = COCAPTION_CYCLE,
) -> SampleResult:
    """Run the given methods (name -> budget, None: all) over one split; ``cocaption``
    chooses c2c_cocaption's pairs (see COCAPTION_MODES).

    Each embedding space is searched once. ``step`` is called with a message before
    each search and each method. Raises BudgetError or ValueError naming the problem.
    """
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        raise ValueError(f"unknown sampling method(s): {', '.join(unknown)}")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if seed < 0:
        raise ValueError(f"seed must be 0 or positive, got {seed}")
    index = index or IndexConfig()
    groups = CaptionGroups.build(data.caption_image, data.n_images)
    report = step or (lambda message: None)
    search_seconds = 0.0
    index_kinds: dict[str, str] = {}
    searched: dict[str, np.ndarray] = {}

    def search(spaces: Mapping[str, np.ndarray], modality: str) -> list[np.ndarray]:
        nonlocal search_seconds
        if data.neighbours.get(modality):
            searched.update(data.neighbours[modality])
            return list(data.neighbours[modality].values())
        if not spaces:
            raise ValueError(f"no {modality} embedding space given")
        found = []
        for name, vectors in spaces.items():
            if modality == "caption":
                vectors = mean_caption_vectors(vectors, groups)
            report(f"searching {modality} space {name}")
            started = time.perf_counter()
            ids, _ = nearest_neighbours(vectors, k, index)
            search_seconds += time.perf_counter() - started
            index_kinds[name] = index.kind_for(len(vectors))
            searched[name] = ids
            found.append(ids)
        return found

    pairs: dict[str, np.ndarray] = {}
    reports: dict[str, dict] = {}
    for method in METHODS:
        if method not in methods:
            continue
        budget = methods[method]
        queued = data.queued.get(method)
        rng = method_rng(seed, method)
        if method == I2I_CSIM:
            neighbours = search(data.caption_spaces, "caption")
            report(f"selecting {method}")
            pairs[method] = i2i_csim(neighbours, budget=budget, rng=rng, queued=queued)
        elif method == C2C_ISIM:
            neighbours = search(data.image_spaces, "image")
            report(f"selecting {method}")
            pairs[method] = c2c_isim(neighbours, groups, budget=budget, rng=rng, queued=queued)
        elif method == C2C_COCAPTION:
            report(f"selecting {method}")
            pairs[method] = c2c_cocaption(groups, budget=budget, rng=rng, queued=queued, mode=cocaption)
        elif method == C2I_ORIGINAL:
            report(f"selecting {method}")
            pairs[method] = c2i_original(data.caption_image, budget=budget, rng=rng, queued=queued)
        else:
            report(f"selecting {method}")
            chosen = c2i_intrasim(data.pivots, data.caption_image, groups, budget=budget, rng=rng, queued=queued)
            pairs[method], reports[method] = chosen.pairs, chosen.report
    return SampleResult(
        pairs=pairs, neighbours=searched, search_seconds=search_seconds, index_kinds=index_kinds, reports=reports
    )
