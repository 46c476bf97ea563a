"""The whole evaluation: every task the inputs allow, gathered into one JSON-ready report."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from annotation.cxc import KINDS, POSITIVE_THRESHOLDS, SIS, SITS, STS
from annotation.evaluation.correlation import (
    BOOTSTRAP_SAMPLES,
    BOTH_ITEMS,
    QUERY_RULES,
    bootstrap_spearman,
    pair_cosines,
    query_memberships,
)
from annotation.evaluation.inputs import (
    CAPTION,
    IMAGE,
    MODALITIES,
    EvaluationError,
    RatedPairs,
    Space,
    SplitItems,
    embed_items,
)
from annotation.evaluation.ranks import RECALL_AT
from annotation.evaluation.retrieval import intermodal_retrieval, intramodal_positives, intramodal_retrieval
from annotation.evaluation.rows import SplitRows, index_rows

Progress = Callable[[str], None]
UNIMODAL = "unimodal spaces: no image-caption similarity"


def _quiet(message: str) -> None:
    pass


def evaluate(
    *,
    items: SplitItems,
    ratings: dict[str, RatedPairs],
    image_space: Space | None,
    caption_space: Space | None,
    joint: bool,
    restrict_to_split: bool = False,
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = 0,
    queries: str = BOTH_ITEMS,
    progress: Progress = _quiet,
) -> dict:
    """Run every task the inputs allow; returns the JSON-ready report.

    ``joint``: image and caption vectors share one space (a dual encoder), so the
    intermodal tasks run; otherwise only the intramodal ones. Every item of the split
    must have a vector in each given space; every rated id must be an item of the split
    unless ``restrict_to_split`` (then rows outside it are left out and counted).
    ``queries``: which items of a rated row the bootstrap samples as queries
    (BOTH_ITEMS, the default, or FIRST_COLUMN). A task that cannot run is listed under
    ``skipped`` with the reason.
    """
    _check_spaces(items, image_space, caption_space, joint, samples)
    if queries not in QUERY_RULES:
        raise EvaluationError(f"the bootstrap's queries are {' or '.join(QUERY_RULES)}, got {queries!r}")
    progress("reading vectors")
    images = embed_items(image_space, items.image_keys, IMAGE) if image_space is not None else None
    captions = embed_items(caption_space, items.caption_keys, CAPTION) if caption_space is not None else None
    report = _empty_report(items, joint, samples, seed)
    report["settings"]["bootstrap_queries"] = queries
    runs = {STS: captions is not None, SIS: images is not None, SITS: joint}
    spaces = {IMAGE: image_space, CAPTION: caption_space}
    rows = _index_ratings(report["ratings"], ratings, items, spaces, runs, restrict_to_split)
    if joint:
        _intermodal(report, images, captions, items.caption_image, rows, progress)
    else:
        for task in ("image_to_text", "text_to_image"):
            report["skipped"][task] = UNIMODAL
    for task, kind, vectors in (("text_to_text", STS, captions), ("image_to_image", SIS, images)):
        _intramodal(report, task, kind, vectors, rows, progress)
    for kind, left, right in ((STS, captions, captions), (SIS, images, images), (SITS, captions, images)):
        if runs[kind]:
            _correlation(report, kind, left, right, rows, (samples, seed, queries), progress)
        else:
            report["skipped"][kind] = UNIMODAL if kind == SITS else f"no {MODALITIES[kind][0]} vectors"
    if not report["retrieval"] and not report["correlation"]:
        reasons = "; ".join(f"{task}: {why}" for task, why in report["skipped"].items())
        raise EvaluationError(f"nothing to evaluate on split {items.name!r} ({reasons})")
    return report


def _check_spaces(
    items: SplitItems, image_space: Space | None, caption_space: Space | None, joint: bool, samples: int
) -> None:
    if image_space is None and caption_space is None:
        raise EvaluationError("give image vectors, caption vectors or both")
    if samples < 1:
        raise EvaluationError(f"bootstrap samples must be at least 1, got {samples}")
    if joint and (image_space is None or caption_space is None):
        raise EvaluationError("a joint space needs both image and caption vectors")
    if joint and image_space.dimension != caption_space.dimension:
        raise EvaluationError(
            f"image vectors have {image_space.dimension} dimensions and caption vectors {caption_space.dimension}; "
            "a joint space needs one dimension (evaluate unimodal spaces as such)"
        )
    if not items.image_keys or not items.caption_keys:
        raise EvaluationError(f"split {items.name!r} has no images or no captions")


def _empty_report(items: SplitItems, joint: bool, samples: int, seed: int) -> dict:
    return {
        "split": items.name,
        "spaces": "joint" if joint else "unimodal",
        "items": {"images": len(items.image_keys), "captions": len(items.caption_keys)},
        "ratings": {},
        "retrieval": {},
        "correlation": {},
        "skipped": {},
        "settings": {
            "positive_at": dict(POSITIVE_THRESHOLDS),
            "recall_at": list(RECALL_AT),
            "samples": samples,
            "seed": seed,
            "ties": "a candidate tied with the best positive ranks ahead of it",
        },
    }


def _index_ratings(
    entries: dict,
    ratings: dict[str, RatedPairs],
    items: SplitItems,
    spaces: dict[str, Space | None],
    runs: dict[str, bool],
    restrict_to_split: bool,
) -> SplitRows:
    """Map the rows of every kind a task runs on to the split; fills ``entries`` (the
    report's "ratings": file, rows read, used and left out, per kind)."""
    indexed = {}
    for kind in KINDS:
        pairs = ratings.get(kind)
        if pairs is None:
            entries[kind] = {"file": None, "rows": 0}
            continue
        entry = entries[kind] = {"file": pairs.source, "rows": len(pairs)}
        if runs[kind] and len(pairs):
            indexed[kind] = index_rows(pairs, items, spaces, restrict_to_split)
            entry["rows_used"] = int(indexed[kind].scores.size)
            entry["rows_left_out"] = indexed[kind].left_out
    return SplitRows(split=items.name, read=frozenset(ratings), indexed=indexed)


def _intermodal(
    report: dict,
    images: np.ndarray,
    captions: np.ndarray,
    caption_image: np.ndarray,
    rows: SplitRows,
    progress: Progress,
) -> None:
    """Image <-> text retrieval: the original pairs, then with the SITS positives added."""
    reason = rows.missing(SITS)
    if reason is not None:
        report["skipped"]["image_to_text.cxc"] = reason
        report["skipped"]["text_to_image.cxc"] = reason
    sits = rows.indexed[SITS] if reason is None else None
    report["retrieval"].update(intermodal_retrieval(images, captions, caption_image, sits, progress))


def _intramodal(
    report: dict, task: str, kind: str, vectors: np.ndarray | None, rows: SplitRows, progress: Progress
) -> None:
    if vectors is None:
        report["skipped"][task] = f"no {MODALITIES[kind][0]} vectors"
        return
    reason = rows.missing(kind)
    if reason is None:
        positives = intramodal_positives(rows.indexed[kind], vectors.shape[0], POSITIVE_THRESHOLDS[kind])
        if positives is None:
            reason = f"no {kind} pair scores >= {POSITIVE_THRESHOLDS[kind]:g}"
    if reason is not None:
        report["skipped"][task] = reason
        return
    progress(f"{task.replace('_to_', ' -> ')} retrieval")
    report["retrieval"][task] = intramodal_retrieval(vectors, positives)


def _correlation(
    report: dict,
    kind: str,
    left: np.ndarray,
    right: np.ndarray,
    rows: SplitRows,
    bootstrap: tuple[int, int, str],
    progress: Progress,
) -> None:
    """Spearman of the human scores of ``kind`` with the cosines of ``left`` (first
    items) and ``right`` (second items), as the bootstrap (samples, seed, query rule);
    skipped when it cannot run."""
    samples, seed, rule = bootstrap
    reason = rows.missing(kind)
    if reason is not None:
        report["skipped"][kind] = reason
        return
    indexed = rows.indexed[kind]
    progress(f"{kind} correlation")
    model = pair_cosines(left, right, indexed.first, indexed.second)
    try:
        members, queries = query_memberships(
            indexed.first, indexed.second, rule=rule, same_modality=MODALITIES[kind][0] == MODALITIES[kind][1]
        )
        report["correlation"][kind] = bootstrap_spearman(
            indexed.scores, model, queries, rows=members, samples=samples, seed=seed
        ) | {"queries_from": rule}
    except EvaluationError as exc:
        report["skipped"][kind] = str(exc)
