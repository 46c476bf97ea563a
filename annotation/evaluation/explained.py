"""The explained failures of an evaluation (``evaluate --explain`` and evaluation jobs with
``explain``): per model with a caption space, its caption-to-corpus ranking, the failure
set with each failure's concept metrics and local explanation, and the global means. The
Django side: it reads the split's caption texts and annotated objects; the numbers are
``annotation.evaluation.explain``'s.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from annotation.catalog.selectors import split_caption_texts, split_image_objects
from annotation.core import spreadsheet_csv
from annotation.evaluation.explain.failures import (
    FAILURE_COLUMNS,
    ImageObjects,
    explained_model,
    failure_records,
    image_objects,
)
from annotation.evaluation.explain.vocabulary import UnknownCategory
from annotation.evaluation.inputs import EvaluationError, Space, SplitItems, embed_items

FAILURES = "failures.csv"


@dataclass(frozen=True)
class ExplainInputs:
    """The split's caption texts (in ``SplitItems.caption_keys`` order) and its images'
    annotated objects (in ``image_keys`` order)."""

    texts: list[str]
    images: ImageObjects


def explain_inputs(split, items: SplitItems) -> ExplainInputs:
    texts = split_caption_texts(split=split)
    if len(texts) != len(items.caption_keys):
        raise EvaluationError(f"split {split.name!r} changed while it was read: {len(texts)} caption texts")
    sizes, objects = split_image_objects(split=split)
    return ExplainInputs(texts=texts, images=image_objects(items.image_keys, sizes, objects))


def explain_model(
    name: str,
    items: SplitItems,
    caption_space: Space,
    inputs: ExplainInputs,
    *,
    size_threshold: float,
    progress: Callable[[str], None],
) -> tuple[dict, list[list]]:
    """(summary for the report, failures file rows) of one model."""
    captions = embed_items(caption_space, items.caption_keys, "caption")
    try:
        summary, rows = explained_model(
            captions, items.caption_image, inputs.texts, inputs.images, size_threshold=size_threshold, progress=progress
        )
    except UnknownCategory as exc:
        raise EvaluationError(f"annotated objects: {exc}") from None
    return summary, failure_records(name, rows, items.caption_keys, inputs.texts, items.image_keys)


def failures_csv(records: Sequence[Sequence]) -> str:
    """The failures file: FAILURE_COLUMNS, one line per failure per model, formula-like
    cells escaped (captions and model names are typed by people)."""
    out = io.StringIO()
    writer = spreadsheet_csv.writer(out, lineterminator="\n")
    writer.writerow(FAILURE_COLUMNS)
    writer.writerows(records)
    return out.getvalue()
