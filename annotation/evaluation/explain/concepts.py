"""The concept metrics of one retrieval failure: the objects annotated in the ground-truth
image I_g ("truth") against those of the image retrieved at rank 1, I_r ("retrieved").
Pure numpy/scipy. A concept is an object's category name; V(I) is the set of an image's
concepts. Names are compared as given (the caller normalises them).

- **CA**, concept agreement: |V(I_g) ∩ V(I_r)| / |V(I_g)|. {dog, frisbee, park} against
  {dog, ball, park}: 2/3; against {cat, fish}: 0. None when I_g has no concept.
- **NCS**, non-common concept similarity: the concepts only in I_g against those only in
  I_r, a complete bipartite graph weighted by a similarity (WordNet path similarity), its
  maximum-weight matching (min(a, b) pairs), the mean weight of the matched pairs. None
  when either side has no concept of its own.
- **CE**, concept enumeration: the sum over common categories of |count in I_g - count in
  I_r| (10 dogs and a frisbee against a dog and a frisbee: 9; against 10 dogs and a ball:
  0). None when no category is common.
- **SD**, size disagreement: per common category, the minimum-weight full matching of its
  objects by |area_g - area_r| (min(n_g, n_r) pairs), the mean difference of the matched
  pairs; summed over the common categories. The objects a category has more of on one
  side stay unmatched: CE counts them, SD does not. The binary variant counts the matched
  pairs whose difference exceeds a threshold T_D. Both None when no category is common.
  Areas are in whatever unit the caller gives (pixels, or shares of the image).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

import numpy as np

from annotation.evaluation.explain.matching import max_weight_matching, min_cost_matching


@dataclass(frozen=True, slots=True)
class AnnotatedObject:
    """One annotated object of an image: its category and its area (>= 0)."""

    category: str
    area: float


@dataclass(frozen=True, slots=True)
class ConceptPair:
    """A matched pair of NCS: a concept only the truth had, one only the retrieved has."""

    truth: str
    retrieved: str
    similarity: float


@dataclass(frozen=True)
class NonCommonSimilarity:
    """NCS with its matching: ``score`` the mean similarity of ``pairs`` (None when either
    side has no concept of its own); ``unmatched_truth`` and ``unmatched_retrieved`` the
    non-common concepts the matching left out (the larger side's extra ones)."""

    score: float | None
    pairs: tuple[ConceptPair, ...]
    unmatched_truth: tuple[str, ...]
    unmatched_retrieved: tuple[str, ...]


@dataclass(frozen=True)
class SizeDisagreement:
    """SD (``score``) and its binary variant (``over_threshold``, pairs differing by more
    than ``threshold``), both None when no category is common; ``per_category`` maps each
    common category to its matched pairs' differences, float (min(n_g, n_r),)."""

    score: float | None
    over_threshold: int | None
    threshold: float
    per_category: dict[str, np.ndarray]


def concept_set(objects: Iterable[AnnotatedObject]) -> frozenset[str]:
    return frozenset(item.category for item in objects)


def concept_agreement(truth: AbstractSet[str], retrieved: AbstractSet[str]) -> float | None:
    """CA: the share of the truth's concepts the retrieved image has too."""
    if not truth:
        return None
    return len(truth & retrieved) / len(truth)


def non_common_similarity(
    truth: AbstractSet[str], retrieved: AbstractSet[str], similarity: Callable[[str, str], float]
) -> NonCommonSimilarity:
    """NCS over the concepts each side has alone; ``similarity(truth_concept,
    retrieved_concept)`` >= 0. Concepts are taken in sorted order, so ties in the matching
    resolve the same way every time."""
    only_truth, only_retrieved = sorted(truth - retrieved), sorted(retrieved - truth)
    if not only_truth or not only_retrieved:
        return NonCommonSimilarity(None, (), tuple(only_truth), tuple(only_retrieved))
    weights = np.array([[similarity(g, r) for r in only_retrieved] for g in only_truth], dtype=np.float64)
    if (weights < 0).any():
        raise ValueError("NCS: similarities must be >= 0")
    rows, columns = max_weight_matching(weights)
    pairs = tuple(
        ConceptPair(only_truth[i], only_retrieved[j], float(weights[i, j])) for i, j in zip(rows, columns, strict=True)
    )
    matched_rows, matched_columns = set(rows.tolist()), set(columns.tolist())
    return NonCommonSimilarity(
        score=float(weights[rows, columns].mean()),
        pairs=pairs,
        unmatched_truth=tuple(c for i, c in enumerate(only_truth) if i not in matched_rows),
        unmatched_retrieved=tuple(c for j, c in enumerate(only_retrieved) if j not in matched_columns),
    )


def common_counts(truth: Iterable[str], retrieved: Iterable[str]) -> dict[str, tuple[int, int]]:
    """Category -> (objects in the truth, objects retrieved), for the common categories;
    each argument has one entry per object."""
    truth_counts, retrieved_counts = Counter(truth), Counter(retrieved)
    return {c: (truth_counts[c], retrieved_counts[c]) for c in sorted(truth_counts.keys() & retrieved_counts.keys())}


def concept_enumeration(truth: Iterable[str], retrieved: Iterable[str]) -> int | None:
    """CE from the objects' categories, one entry per object."""
    counts = common_counts(truth, retrieved)
    if not counts:
        return None
    return sum(abs(g - r) for g, r in counts.values())


def size_disagreement(
    truth: Sequence[AnnotatedObject], retrieved: Sequence[AnnotatedObject], threshold: float
) -> SizeDisagreement:
    """SD and its binary variant with T_D = ``threshold`` (>= 0)."""
    if not threshold >= 0:
        raise ValueError(f"SD: the threshold must be a number >= 0, got {threshold!r}")
    areas_g, areas_r = _areas_by_category(truth), _areas_by_category(retrieved)
    per_category = {}
    for category in sorted(areas_g.keys() & areas_r.keys()):
        costs = np.abs(areas_g[category][:, None] - areas_r[category][None, :])
        rows, columns = min_cost_matching(costs)
        per_category[category] = costs[rows, columns]
    if not per_category:
        return SizeDisagreement(None, None, threshold, {})
    return SizeDisagreement(
        score=float(sum(differences.mean() for differences in per_category.values())),
        over_threshold=int(sum((differences > threshold).sum() for differences in per_category.values())),
        threshold=threshold,
        per_category=per_category,
    )


def _areas_by_category(objects: Sequence[AnnotatedObject]) -> dict[str, np.ndarray]:
    grouped: dict[str, list[float]] = {}
    for item in objects:
        if not (item.area >= 0 and math.isfinite(item.area)):
            raise ValueError(f"SD: an object of {item.category!r} has area {item.area!r}; areas are finite and >= 0")
        grouped.setdefault(item.category, []).append(item.area)
    return {category: np.asarray(areas, dtype=np.float64) for category, areas in grouped.items()}
