"""A model's failure set explained: the ranking (``ranking``), each failure's concept
metrics in both forms with its local explanation (``explanation``), the global means, and
the flat rows of the failures file. Pure numpy; the caller reads the items and objects.

Areas are shares of their image (the object's area over width x height), so SD and its
threshold T_D mean the same in a small and a large photo. An image whose size is unknown
gives no SD: a failure with such an image has SD and binary SD None, its other metrics
as usual.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from annotation.evaluation.explain.concepts import AnnotatedObject
from annotation.evaluation.explain.explanation import ConceptMetrics, describe, explain_failure
from annotation.evaluation.explain.ranking import Ranking, build_corpora, rank_queries, ranking_figures
from annotation.evaluation.explain.vocabulary import Vocabulary, vocabulary

FORMS = ("agnostic", "informed")
METRICS = ("CA", "NCS", "CE", "SD", "SD_binary")
# SD's binary threshold T_D by default: a tenth of the image's area.
SIZE_THRESHOLD = 0.1


@dataclass(frozen=True)
class ImageObjects:
    """Per image (index as in the split): ``objects`` its annotated objects, areas as
    shares of the image; ``sized`` bool (n_images,) whether its size is known."""

    objects: list[tuple[AnnotatedObject, ...]]
    sized: np.ndarray


def image_objects(
    image_keys: Sequence[str], sizes: Mapping[str, tuple[int, int]], objects: Mapping[str, Sequence[tuple[str, float]]]
) -> ImageObjects:
    """From image key -> (width, height) and image key -> [(category, area in pixels)]."""
    per_image, sized = [], np.zeros(len(image_keys), bool)
    for index, key in enumerate(image_keys):
        size = sizes.get(key)
        pixels = float(size[0] * size[1]) if size else 1.0
        sized[index] = size is not None
        per_image.append(tuple(AnnotatedObject(category, area / pixels) for category, area in objects.get(key, ())))
    return ImageObjects(per_image, sized)


def _metrics(metrics: ConceptMetrics, sized: bool) -> dict:
    return {
        "CA": metrics.concept_agreement,
        "NCS": metrics.non_common.score,
        "CE": metrics.enumeration,
        "SD": metrics.size.score if sized else None,
        "SD_binary": metrics.size.over_threshold if sized else None,
    }


def explain_failures(
    ranking: Ranking,
    texts: Sequence[str],
    images: ImageObjects,
    *,
    size_threshold: float = SIZE_THRESHOLD,
    table: Vocabulary | None = None,
) -> list[dict]:
    """One dict per failure of ``ranking``, in query order: the query (caption index), the
    truth and retrieved image indices, the truth's rank, per form its metrics and its
    explanation's sentences, and the concepts (the truth's, the retrieved's, the query's)."""
    table = table or vocabulary()
    rows = []
    for position in ranking.failures:
        query, truth, retrieved = (int(a[position]) for a in (ranking.queries, ranking.truth, ranking.first))
        explained = explain_failure(
            images.objects[truth],
            images.objects[retrieved],
            query=texts[query],
            size_threshold=size_threshold,
            table=table,
        )
        sized = bool(images.sized[truth] and images.sized[retrieved])
        forms = {"agnostic": explained.agnostic, "informed": explained.informed}
        rows.append(
            {
                "query": query,
                "truth": truth,
                "retrieved": retrieved,
                "rank": int(ranking.rank[position]),
                "concepts": {
                    "truth": sorted(explained.agnostic.truth_concepts),
                    "retrieved": sorted(explained.agnostic.retrieved_concepts),
                    "query": sorted(explained.query_concepts),
                },
                **{form: _metrics(metrics, sized) for form, metrics in forms.items()},
                "explanation": {form: describe(metrics) for form, metrics in forms.items()},
            }
        )
    return rows


def global_means(rows: Sequence[dict]) -> dict:
    """Per form and metric: the mean over the failures where it is defined, and how many
    those are (the mean None when none is)."""
    out = {}
    for form in FORMS:
        out[form] = {}
        for metric in METRICS:
            values = [row[form][metric] for row in rows if row[form][metric] is not None]
            out[form][metric] = {"mean": float(np.mean(values)) if values else None, "failures": len(values)}
    return out


def explained_model(
    captions: np.ndarray,
    caption_image: np.ndarray,
    texts: Sequence[str],
    images: ImageObjects,
    *,
    size_threshold: float = SIZE_THRESHOLD,
    progress: Callable[[str], None] = lambda message: None,
) -> tuple[dict, list[dict]]:
    """(summary, failure rows) of one model: ``captions`` float32 (n, d) L2-normalized in
    the split's caption order, ``caption_image`` int (n,). The summary holds the ranking's
    figures, the queries without another caption, T_D, and the global means."""
    n_images = len(images.objects)
    progress("ranking the corpora")
    ranking = rank_queries(captions, caption_image, build_corpora(captions, caption_image, n_images))
    progress("explaining the failures")
    rows = explain_failures(ranking, texts, images, size_threshold=size_threshold)
    summary = ranking_figures(ranking.rank, n_images) | {
        "unanswerable": ranking.unanswerable,
        "size_threshold": size_threshold,
        "global": global_means(rows),
    }
    return summary, rows


FAILURE_COLUMNS = (
    "model",
    "query",
    "query_text",
    "truth_image",
    "retrieved_image",
    "rank",
    *(f"{form}_{metric}" for form in FORMS for metric in METRICS),
    "truth_concepts",
    "retrieved_concepts",
    "query_concepts",
    "explanation",
)


def failure_records(
    model: str, rows: Sequence[dict], caption_keys: Sequence[str], texts: Sequence[str], image_keys: Sequence[str]
) -> list[list]:
    """The failure rows flat, in FAILURE_COLUMNS order, items by their keys; lists joined
    by "; ", the query-agnostic explanation's sentences by ". "."""
    return [
        [
            model,
            caption_keys[row["query"]],
            texts[row["query"]],
            image_keys[row["truth"]],
            image_keys[row["retrieved"]],
            row["rank"],
            *("" if row[form][metric] is None else row[form][metric] for form in FORMS for metric in METRICS),
            *("; ".join(row["concepts"][side]) for side in ("truth", "retrieved", "query")),
            ". ".join(row["explanation"]["agnostic"]),
        ]
        for row in rows
    ]
