"""One retrieval failure explained: the concept metrics (``concepts``) in their
query-agnostic form (every annotated object) and their query-informed form (only the
objects of categories the query names: by name, WordNet synonym or plural, as the
vocabulary reads the caption), and the sentences of its local explanation ("retrieved has
a cat where the truth had a dog"). Pure Python and numpy.

Category names are compared in the vocabulary's form (case-folded, single spaces). NCS
needs every non-common category in the WordNet tables: an unknown one raises
UnknownCategory naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from annotation.evaluation.explain.concepts import (
    AnnotatedObject,
    NonCommonSimilarity,
    SizeDisagreement,
    common_counts,
    concept_agreement,
    concept_enumeration,
    concept_set,
    non_common_similarity,
    size_disagreement,
)
from annotation.evaluation.explain.vocabulary import Vocabulary, category_key, vocabulary

# COCO category names that are plural already take no article.
_PLURAL_NAMES = frozenset({"skis", "scissors"})


@dataclass(frozen=True)
class ConceptMetrics:
    """The metrics of one form (agnostic or informed) over the objects it kept."""

    truth_concepts: frozenset[str]
    retrieved_concepts: frozenset[str]
    concept_agreement: float | None
    non_common: NonCommonSimilarity
    enumeration: int | None
    counts: dict[str, tuple[int, int]]  # common category -> (truth, retrieved) objects
    size: SizeDisagreement


@dataclass(frozen=True)
class FailureExplanation:
    query: str
    query_concepts: frozenset[str]
    agnostic: ConceptMetrics
    informed: ConceptMetrics


def concept_metrics(
    truth: Sequence[AnnotatedObject], retrieved: Sequence[AnnotatedObject], *, size_threshold: float, table: Vocabulary
) -> ConceptMetrics:
    truth_concepts, retrieved_concepts = concept_set(truth), concept_set(retrieved)
    truth_categories = [item.category for item in truth]
    retrieved_categories = [item.category for item in retrieved]
    return ConceptMetrics(
        truth_concepts=truth_concepts,
        retrieved_concepts=retrieved_concepts,
        concept_agreement=concept_agreement(truth_concepts, retrieved_concepts),
        non_common=non_common_similarity(truth_concepts, retrieved_concepts, table.path_similarity),
        enumeration=concept_enumeration(truth_categories, retrieved_categories),
        counts=common_counts(truth_categories, retrieved_categories),
        size=size_disagreement(truth, retrieved, size_threshold),
    )


def explain_failure(
    truth: Sequence[AnnotatedObject],
    retrieved: Sequence[AnnotatedObject],
    *,
    query: str,
    size_threshold: float,
    table: Vocabulary | None = None,
) -> FailureExplanation:
    """Both forms of the metrics for one failure: ``truth`` the objects of the query's
    ground-truth image, ``retrieved`` those of the image ranked first, ``query`` the
    caption, ``size_threshold`` SD's binary threshold T_D (in the areas' unit)."""
    table = table or vocabulary()
    truth, retrieved = _normalised(truth), _normalised(retrieved)
    named = frozenset(category_key(name) for name in table.named_in(query))
    return FailureExplanation(
        query=query,
        query_concepts=named,
        agnostic=concept_metrics(truth, retrieved, size_threshold=size_threshold, table=table),
        informed=concept_metrics(
            [item for item in truth if item.category in named],
            [item for item in retrieved if item.category in named],
            size_threshold=size_threshold,
            table=table,
        ),
    )


def _normalised(objects: Sequence[AnnotatedObject]) -> list[AnnotatedObject]:
    return [AnnotatedObject(category_key(item.category), item.area) for item in objects]


def describe(metrics: ConceptMetrics) -> list[str]:
    """The local explanation of one form, one sentence a line: what the retrieved image has
    in place of the truth's concepts (NCS's matched pairs), what it lacks or adds beyond
    them, and the common categories whose counts differ."""
    ncs = metrics.non_common
    lines = [f"retrieved has {_a(pair.retrieved)} where the truth had {_a(pair.truth)}" for pair in ncs.pairs]
    lines += [f"retrieved has no {name}" for name in ncs.unmatched_truth]
    lines += [f"retrieved also has {_a(name)}" for name in ncs.unmatched_retrieved]
    lines += [
        f"{name}: the truth had {in_truth}, retrieved has {in_retrieved}"
        for name, (in_truth, in_retrieved) in metrics.counts.items()
        if in_truth != in_retrieved
    ]
    return lines


def _a(name: str) -> str:
    if name in _PLURAL_NAMES:
        return name
    return f"{'an' if name[:1] in 'aeiou' else 'a'} {name}"
