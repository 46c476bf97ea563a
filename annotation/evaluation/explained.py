"""The explained failures of an evaluation (``evaluate --explain`` and evaluation jobs with
``explain``): per model with a caption space, its caption-to-corpus ranking, the failure
set with each failure's concept metrics and local explanation, the global means, and with
``adversarial`` the adversarial queries re-embedded by the model's own encoder (the
``embed`` command's, by the name its caption space was stored with). The Django side: it
reads the split's caption texts and annotated objects; the numbers are
``annotation.evaluation.explain``'s.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from annotation.catalog.selectors import split_caption_texts, split_image_objects
from annotation.core import spreadsheet_csv
from annotation.evaluation.explain.adversarial import COLOUR_DISTANCE, adversarial_run, substitutes
from annotation.evaluation.explain.failures import (
    FAILURE_COLUMNS,
    ImageObjects,
    explained_model,
    failure_records,
    image_objects,
)
from annotation.evaluation.explain.ranking import build_corpora
from annotation.evaluation.explain.vocabulary import UnknownCategory
from annotation.evaluation.inputs import EvaluationError, Space, SplitItems, embed_items
from sampling.encoders import ENCODERS, EncoderUnavailable, text_encoder

FAILURES = "failures.csv"
ADVERSARIAL = "adversarial.csv"
ADVERSARIAL_COLUMNS = (
    "model",
    "kind",
    "query",
    "query_text",
    "changed_text",
    "word",
    "replacement",
    "image",
    "rank_before",
    "rank_after",
)
CAPTION_ENCODERS = tuple(sorted(name for name, modality in ENCODERS.items() if modality == "caption"))


@dataclass(frozen=True)
class ModelExplained:
    """One model's part: ``summary`` for the report, ``failures`` rows of the failures file
    (FAILURE_COLUMNS), ``adversarial`` rows of the adversarial file (ADVERSARIAL_COLUMNS,
    empty without adversarial queries)."""

    summary: dict
    failures: list[list]
    adversarial: list[list]


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
    adversarial: dict | None = None,
    progress: Callable[[str], None],
) -> ModelExplained:
    """One model's failure set, explained; ``adversarial``: the adversarial queries'
    settings (``adversarial_settings`` with the encoder), or None for none."""
    captions = embed_items(caption_space, items.caption_keys, "caption")
    try:
        summary, rows = explained_model(
            captions, items.caption_image, inputs.texts, inputs.images, size_threshold=size_threshold, progress=progress
        )
    except UnknownCategory as exc:
        raise EvaluationError(f"annotated objects: {exc}") from None
    changed: list[dict] = []
    if adversarial is not None:
        summary["adversarial"] = adversarial_model(items, captions, inputs, adversarial, changed, progress=progress)
    return ModelExplained(
        summary=summary,
        failures=failure_records(name, rows, items.caption_keys, inputs.texts, items.image_keys),
        adversarial=[
            [
                name,
                change["kind"],
                items.caption_keys[change["query"]],
                inputs.texts[change["query"]],
                change["text"],
                change["word"],
                change["replacement"],
                items.image_keys[items.caption_image[change["query"]]],
                change["rank_before"],
                change["rank_after"],
            ]
            for change in changed
        ],
    )


def adversarial_settings(
    *, seed: int = 0, colour_distance: float = COLOUR_DISTANCE, colour_pool: str = "named"
) -> dict:
    """The checked settings of the adversarial queries (EvaluationError naming a bad one)."""
    try:
        substitutes([], colour_distance=colour_distance, colour_pool=colour_pool)
    except ValueError as exc:
        raise EvaluationError(f"adversarial queries: {exc}") from None
    return {"seed": int(seed), "colour_distance": float(colour_distance), "colour_pool": colour_pool}


def text_encoder_check(name: str) -> None:
    """ValueError unless ``name`` (a space's ``model_name``) is a caption encoder of the
    ``embed`` command."""
    if name not in CAPTION_ENCODERS:
        raise ValueError(
            f"the caption vectors were made by {name or 'an unnamed encoder'!r}; re-embedding changed captions "
            f"needs the model's own encoder, one of {', '.join(CAPTION_ENCODERS)}"
        )


def adversarial_model(
    items: SplitItems, captions, inputs: ExplainInputs, settings: dict, changed: list[dict], *, progress
) -> dict:
    """The adversarial queries' effects per kind: ``settings`` from ``adversarial_settings``
    with ``encoder``, the name of the model's own caption encoder; ``changed`` receives
    each changed caption (``adversarial_run``)."""
    try:
        text_encoder_check(settings["encoder"])
        encode = text_encoder(settings["encoder"])
    except (ValueError, EncoderUnavailable) as exc:
        raise EvaluationError(f"adversarial queries: {exc}") from None
    corpora = build_corpora(captions, items.caption_image, len(items.image_keys))
    table = substitutes(inputs.texts, colour_distance=settings["colour_distance"], colour_pool=settings["colour_pool"])
    try:
        kinds = adversarial_run(
            captions,
            items.caption_image,
            corpora,
            inputs.texts,
            encode,
            table=table,
            seed=settings["seed"],
            progress=progress,
            changed=changed,
        )
    except ValueError as exc:  # the encoder's vectors: another dimension, or zeros
        raise EvaluationError(f"adversarial queries with encoder {settings['encoder']!r}: {exc}") from None
    return {"settings": settings, "kinds": kinds}


def failures_csv(records: Sequence[Sequence], columns: Sequence[str] = FAILURE_COLUMNS) -> str:
    """The failures file (FAILURE_COLUMNS, one line per failure per model) or the
    adversarial file (ADVERSARIAL_COLUMNS, one line per changed caption per model);
    formula-like cells escaped (captions and model names are typed by people)."""
    out = io.StringIO()
    writer = spreadsheet_csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(records)
    return out.getvalue()
