"""Sampling method ``model_topk``: the pairs a model retrieves, for people to rate. No Django.

An audit (as ECCV Caption did for COCO) asks raters about what a model ranks highest:
for each query of a sample, its top k items become pairs, query first. Directions:

- ``c2i`` caption -> image and ``i2c`` image -> caption: SITS pairs (caption row, image row);
- ``c2c`` caption -> caption: STS pairs; ``i2i`` image -> image: SIS pairs (the query
  itself is never its own neighbour).

Several models may be audited into one pool: every model searches the same query
sample, and a pair retrieved by more than one (or in more than one direction) is queued
once, with every (model, direction, rank) that retrieved it recorded. Pairs the dataset
already has are left out. A budget keeps the pairs of the best ranks (rank 1 of every
query first; ties in a random order from the seeded Generator).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from sampling.methods.pair_arrays import BudgetError
from sampling.search.topk import exact_top_k

MODEL_TOPK = "model_topk"
C2I, I2C, C2C, I2I = "c2i", "i2c", "c2c", "i2i"
DIRECTIONS = (C2I, I2C, C2C, I2I)
# Direction -> (query modality, candidate modality), and the pair's sampling method name.
DIRECTION_MODALITIES = {
    C2I: ("caption", "image"),
    I2C: ("image", "caption"),
    C2C: ("caption",) * 2,
    I2I: ("image",) * 2,
}
DIRECTION_METHOD = {C2I: "topk_c2i", I2C: "topk_i2c", C2C: "topk_c2c", I2I: "topk_i2i"}
# Pairs of one kind share one identity space: SITS pairs from c2i and i2c are one pool.
DIRECTION_KIND = {C2I: "SITS", I2C: "SITS", C2C: "STS", I2I: "SIS"}
KIND_CODE = {"SITS": 0, "STS": 1, "SIS": 2}
# Item rows stay below this in a pair's key (kind, a, b): 3 kinds x 2**30 x 2**30 fit 63 bits.
KEY_SPAN = 1 << 30


@dataclass(frozen=True)
class AuditedModel:
    """One model's vectors: ``image`` float (n_images, d) and ``caption`` float
    (n_captions, d), L2-normalized rows, either may be None; intermodal directions need
    both, in one space."""

    name: str
    image: np.ndarray | None
    caption: np.ndarray | None


@dataclass(frozen=True)
class AuditPairs:
    """The pairs of one direction: ``pairs`` int64 (m, 2), query first (SITS rows are
    (caption, image) whichever was the query);
    ``retrievals`` int64 (r, 4): (pair index, model index, direction index, best rank),
    one row per model and direction that retrieved the pair, sorted; ``known`` int64
    (s, 5): the retrievals of this direction of pairs the dataset already has, as (a, b
    in the queued pairs' order, model index, direction index, best rank)."""

    pairs: np.ndarray
    retrievals: np.ndarray
    known: np.ndarray = field(default_factory=lambda: np.empty((0, 5), np.int64))


def query_sample(n: int, size: int | None, rng: np.random.Generator) -> np.ndarray:
    """Sorted query rows: all ``n`` (size None), else ``size`` drawn without replacement."""
    if size is None or size >= n:
        return np.arange(n, dtype=np.int64)
    return np.sort(rng.choice(n, size=size, replace=False)).astype(np.int64)


def _retrieve(model: AuditedModel, direction: str, queries: np.ndarray, k: int) -> np.ndarray:
    """int64 (len(queries), k) candidate rows, best first."""
    query_side, candidate_side = DIRECTION_MODALITIES[direction]
    query_vectors = getattr(model, query_side)
    candidates = getattr(model, candidate_side)
    if query_vectors is None or candidates is None:
        raise ValueError(f"model {model.name!r} has no {query_side} or {candidate_side} vectors for {direction}")
    exclude = queries if query_side == candidate_side else None
    return exact_top_k(query_vectors[queries], candidates, k, exclude=exclude)


def model_topk(
    models: Sequence[AuditedModel],
    directions: Sequence[str],
    *,
    k: int,
    queries: Mapping[str, np.ndarray],
    budget: int | None,
    rng: np.random.Generator,
    queued: Mapping[str, np.ndarray],
) -> dict[str, AuditPairs]:
    """The audit's pairs per direction (see the module docstring).

    ``queries``: direction -> query rows (``query_sample``); ``queued``: kind -> pairs the
    dataset has, int64 (q, 2) canonical (SITS: (caption, image); STS/SIS: a < b).
    Raises BudgetError when the budget exceeds the fresh pairs, ValueError for an
    unknown direction or a model without the vectors a direction needs.
    """
    unknown = [d for d in directions if d not in DIRECTIONS]
    if unknown or not directions:
        raise ValueError(f"directions are {', '.join(DIRECTIONS)}; got {', '.join(unknown) or 'none'}")
    for model in models:
        for side in (model.image, model.caption):
            if side is not None and side.shape[0] >= KEY_SPAN:
                raise ValueError(
                    f"model {model.name!r}: {side.shape[0]:,} rows; an audit takes fewer than {KEY_SPAN:,}"
                )
    parts = []
    for d_index, direction in enumerate(directions):
        rows = queries[direction]
        for m_index, model in enumerate(models):
            top = _retrieve(model, direction, rows, k)
            query, candidate = np.repeat(rows, top.shape[1]), top.ravel()
            first, second = (candidate, query) if direction == I2C else (query, candidate)
            size = first.size
            parts.append(
                np.column_stack(
                    [
                        first,
                        second,
                        np.full(size, KIND_CODE[DIRECTION_KIND[direction]]),
                        np.full(size, m_index),
                        np.full(size, d_index),
                        np.tile(np.arange(1, top.shape[1] + 1), rows.size),
                    ]
                )
            )
    found = np.concatenate(parts).astype(np.int64) if parts else np.empty((0, 6), np.int64)
    pooled = _pool(found, len(directions), budget, rng, queued)
    return {direction: pooled[d] for d, direction in enumerate(directions)}


def _canonical(found: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each retrieval's pair as stored: SITS as is, STS and SIS lower row first."""
    first, second, kind = found[:, 0], found[:, 1], found[:, 2]
    ordered = kind == KIND_CODE["SITS"]
    return np.where(ordered, first, np.minimum(first, second)), np.where(ordered, second, np.maximum(first, second))


def _identities(found: np.ndarray) -> np.ndarray:
    """One int64 key per retrieval's pair: kind, then the pair as stored."""
    low, high = _canonical(found)
    return (found[:, 2] * KEY_SPAN + low) * KEY_SPAN + high


def _pool(found, n_directions, budget, rng, queued) -> dict[int, AuditPairs]:
    """Union of the retrievals ``found`` int64 (r, 6): (first, second, kind, model,
    direction, rank). Each pair once, decided by its best-ranked retrieval; queued pairs
    out; the budget keeps the best ranks."""
    identity = _identities(found)
    fresh = np.ones(identity.size, bool)
    for kind, code in KIND_CODE.items():
        have = np.asarray(queued.get(kind, np.empty((0, 2))), np.int64).reshape(-1, 2)
        if kind != "SITS":
            have = np.sort(have, axis=1)  # unordered pairs: lower row first, as the keys
        if have.size:
            fresh &= ~np.isin(identity, (code * KEY_SPAN + have[:, 0]) * KEY_SPAN + have[:, 1])
    order = np.lexsort((rng.random(identity.size), found[:, 5]))
    order = order[fresh[order]]
    _, first_at = np.unique(identity[order], return_index=True)
    chosen = order[np.sort(first_at)]
    if budget is not None:
        if budget > chosen.size:
            raise BudgetError(f"{MODEL_TOPK}: budget {budget} is more than the {chosen.size} fresh pairs retrieved")
        chosen = chosen[:budget]
    # Pairs come out in the order they were retrieved (direction, model, query, rank).
    chosen = np.sort(chosen)
    # Each chosen pair belongs to the direction of its deciding retrieval; every retrieval
    # of it (any model, any direction) is recorded against it.
    owner = found[chosen, 4]
    local = np.zeros(chosen.size, np.int64)
    for d in range(n_directions):
        local[owner == d] = np.arange(int((owner == d).sum()))
    by_key = np.argsort(identity[chosen])
    sorted_keys = identity[chosen][by_key]
    member = np.flatnonzero(np.isin(identity, sorted_keys))
    which = by_key[np.searchsorted(sorted_keys, identity[member])]
    out = {}
    for d in range(n_directions):
        mine = chosen[owner == d]
        records = which[owner[which] == d]
        rows = member[owner[which] == d]
        retrievals = np.column_stack([local[records], found[rows, 3], found[rows, 4], found[rows, 5]])
        out[d] = AuditPairs(
            pairs=found[mine][:, :2].copy(),
            retrievals=_best_rank_each(retrievals),
            known=_known(found, fresh, d),
        )
    return out


def _known(found: np.ndarray, fresh: np.ndarray, direction: int) -> np.ndarray:
    """Direction ``direction``'s retrievals of pairs the dataset has: (a, b as stored,
    model, direction, best rank), one row per pair and model."""
    rows = np.flatnonzero(~fresh & (found[:, 4] == direction))
    low, high = _canonical(found[rows])
    keyed = np.column_stack([(low * KEY_SPAN + high), found[rows, 3], found[rows, 4], found[rows, 5]])
    best = _best_rank_each(keyed)
    return np.column_stack([best[:, 0] // KEY_SPAN, best[:, 0] % KEY_SPAN, best[:, 1:]]).astype(np.int64)


def _best_rank_each(retrievals: np.ndarray) -> np.ndarray:
    """One row per (pair, model, direction), its best rank: a model may reach an
    intramodal pair from both of its items."""
    order = np.lexsort((retrievals[:, 3], retrievals[:, 2], retrievals[:, 1], retrievals[:, 0]))
    ordered = retrievals[order]
    first = np.ones(len(ordered), bool)
    first[1:] = (ordered[1:, :3] != ordered[:-1, :3]).any(axis=1)
    return ordered[first]
