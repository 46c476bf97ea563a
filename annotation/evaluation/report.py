"""The whole evaluation: every task the inputs allow, gathered into one JSON-ready report."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from annotation.core.cxc import KINDS, POSITIVE_THRESHOLDS, SIS, SITS, STS
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
from annotation.evaluation.intervals import INTERVAL_LEVEL
from annotation.evaluation.protocols import (
    AUDITED,
    CALIBRATION,
    COCO_1K,
    COCO_5K,
    CORRELATION,
    CXC,
    PROTOCOLS,
    TOP_K,
    calibration_section,
    coco_1k_section,
    coco_5k_note,
    top_k_section,
)
from annotation.evaluation.ranks import RECALL_AT
from annotation.evaluation.retrieval import Intervals, intermodal_retrieval, intramodal_positives, intramodal_retrieval
from annotation.evaluation.rows import SplitRows, index_rows

Progress = Callable[[str], None]
UNIMODAL = "unimodal spaces: no image-caption similarity"
# The tasks unimodal spaces cannot run, with the protocol that asks for each (None: any).
NEED_JOINT = (("image_to_text", None), ("text_to_image", None), ("coco_5k", COCO_5K), ("coco_1k", COCO_1K))


def _quiet(message: str) -> None:
    pass


def evaluate(
    *,
    items: SplitItems,
    ratings: dict[str, RatedPairs] | None,
    image_space: Space | None,
    caption_space: Space | None,
    joint: bool,
    audited: dict[str, RatedPairs] | None = None,
    protocols: tuple[str, ...] = PROTOCOLS,
    top_k: int = 10,
    restrict_to_split: bool = False,
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = 0,
    queries: str = BOTH_ITEMS,
    progress: Progress = _quiet,
    require_task: bool = True,
) -> dict:
    """Run every task the inputs allow; returns the JSON-ready report.

    ``joint``: image and caption vectors share one space (a dual encoder), so the
    intermodal tasks run; otherwise only the intramodal ones. Every item of the split
    must have a vector in each given space; every rated id must be an item of the split
    unless ``restrict_to_split`` (then rows outside it are left out and counted).
    ``queries``: which items of a rated row the bootstrap samples as queries
    (BOTH_ITEMS, the default, or FIRST_COLUMN). ``ratings``: CxC-format ratings (the
    "cxc" positives); ``audited``: the dataset's own ratings (the "audited" positives).
    ``protocols``: which of PROTOCOLS run; ``top_k``: the k of the own top-k precision.
    A task that cannot run is listed under ``skipped`` with the reason; when none runs,
    EvaluationError names why each did not, unless ``require_task`` is off (the caller
    evaluates the model otherwise too: the explained failures).
    """
    _check_spaces(items, image_space, caption_space, joint, samples)
    check_protocols(protocols, top_k)
    if queries not in QUERY_RULES:
        raise EvaluationError(f"the bootstrap's queries are {' or '.join(QUERY_RULES)}, got {queries!r}")
    progress("reading vectors")
    images = embed_items(image_space, items.image_keys, IMAGE) if image_space is not None else None
    captions = embed_items(caption_space, items.caption_keys, CAPTION) if caption_space is not None else None
    report = _empty_report(items, joint, samples, seed)
    report["settings"] |= {"bootstrap_queries": queries, "protocols": list(protocols), "top_k": top_k}
    runs = {STS: captions is not None, SIS: images is not None, SITS: joint}
    spaces = {IMAGE: image_space, CAPTION: caption_space}
    sources: dict[str, SplitRows] = {}
    if ratings is not None:
        sources[CXC] = _index_ratings(report["ratings"], ratings, items, spaces, runs, restrict_to_split)
    if audited is not None:
        report["audited_ratings"] = {}
        audited_rows = _index_ratings(report["audited_ratings"], audited, items, spaces, runs, True)
        sources[AUDITED] = dataclasses.replace(audited_rows, from_database=True)
    positives_from = {name: rows for name, rows in sources.items() if name in protocols}
    intervals = Intervals(samples=samples, seed=seed)
    vectors = {IMAGE: images, CAPTION: captions}
    # Each task's own top-k, taken from its retrieval pass's scores when it has one.
    tops: dict[str, np.ndarray] | None = {} if TOP_K in protocols else None
    if joint:
        pair = (images, captions)
        _intermodal(report, pair, items.caption_image, positives_from, protocols, intervals, tops, progress)
    else:
        for task, protocol in NEED_JOINT:
            if protocol is None or protocol in protocols:
                report["skipped"][task] = UNIMODAL
    for task, kind in (("text_to_text", STS), ("image_to_image", SIS)):
        _intramodal(report, task, kind, vectors[MODALITIES[kind][0]], positives_from, intervals, tops, progress)
    _correlations(report, vectors, runs, sources, protocols, (samples, seed, queries), progress)
    if CALIBRATION in protocols:
        calibration_section(report, vectors, runs, sources, progress)
    if TOP_K in protocols:
        top_k_section(report, vectors, runs, items.caption_image, sources, tops, intervals, progress)
    ran = any(report[part] for part in ("retrieval", "correlation", "calibration", "own_top_k", "coco_1k"))
    if require_task and not ran:
        reasons = "; ".join(f"{task}: {why}" for task, why in report["skipped"].items())
        raise EvaluationError(f"nothing to evaluate on split {items.name!r} ({reasons})")
    return report


def check_protocols(protocols: tuple[str, ...], top_k: int) -> None:
    """Raise EvaluationError for unknown or no protocols, or a top-k outside 1-1000."""
    unknown = [name for name in protocols if name not in PROTOCOLS]
    if unknown or not protocols:
        raise EvaluationError(
            f"unknown protocol(s) {', '.join(map(repr, unknown))}; choose from {', '.join(PROTOCOLS)}"
            if unknown
            else f"choose at least one protocol: {', '.join(PROTOCOLS)}"
        )
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= 1000:
        raise EvaluationError(f"the own top-k needs k from 1 to 1000, got {top_k!r}")


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
        "coco_1k": {},
        "correlation": {},
        "calibration": {},
        "own_top_k": {},
        "skipped": {},
        "settings": {
            "positive_at": dict(POSITIVE_THRESHOLDS),
            "recall_at": list(RECALL_AT),
            "samples": samples,
            "seed": seed,
            "ties": "a candidate tied with a positive ranks ahead of it",
            "intervals": (
                f"{100 * INTERVAL_LEVEL:g}%: a bootstrap over queries for the means over queries (samples and "
                "seed as above); the central share of the correlation's samples; for calibration, the logit "
                "interval of the PR-AUC and Fisher's z of Spearman"
            ),
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
    vectors: tuple[np.ndarray, np.ndarray],
    caption_image: np.ndarray,
    sources: dict[str, SplitRows],
    protocols: tuple[str, ...],
    intervals: Intervals,
    tops: dict | None,
    progress: Progress,
) -> None:
    """Image <-> text retrieval over the split: the original pairs (COCO 5K), then with
    each source's SITS positives added; and COCO 1K."""
    images, captions = vectors
    rated = {}
    for name, rows in sources.items():
        reason = rows.missing(SITS)
        if reason is None:
            rated[name] = rows.indexed[SITS]
        else:
            report["skipped"][f"image_to_text.{name}"] = reason
            report["skipped"][f"text_to_image.{name}"] = reason
    n_images, n_captions = images.shape[0], captions.shape[0]
    if COCO_5K in protocols and coco_5k_note(n_images) is not None:
        report["skipped"]["coco_5k"] = coco_5k_note(n_images)
    if COCO_5K in protocols or rated:
        filled = _top_arrays(
            report, tops, ("image_to_text", n_images, n_captions), ("text_to_image", n_captions, n_images)
        )
        found = intermodal_retrieval(
            images, captions, caption_image, rated, intervals, progress, with_original=COCO_5K in protocols, tops=filled
        )
        _kept(tops, filled)
        report["retrieval"].update(found)
    if COCO_1K in protocols:
        coco_1k_section(report, images, captions, caption_image, intervals, progress)


def _top_arrays(report: dict, tops: dict | None, *tasks: tuple[str, int, int]) -> dict[str, np.ndarray]:
    """Empty arrays for a retrieval pass to fill with each task's own top-k; tasks are
    (name, queries, candidates). None when the top-k is not asked for (``tops`` None) or
    a task has fewer than k candidates."""
    if tops is None:
        return {}
    k = report["settings"]["top_k"]
    return {task: np.empty((queries, k), np.int64) for task, queries, candidates in tasks if k <= candidates}


def _kept(tops: dict | None, filled: dict[str, np.ndarray]) -> None:
    """Keep the arrays a retrieval pass has filled: ``tops`` only ever holds filled ones,
    and a task without one takes a pass of its own."""
    if tops is not None:
        tops.update(filled)


def _intramodal(
    report: dict,
    task: str,
    kind: str,
    vectors: np.ndarray | None,
    sources: dict[str, SplitRows],
    intervals: Intervals,
    tops: dict | None,
    progress: Progress,
) -> None:
    if vectors is None:
        report["skipped"][task] = f"no {MODALITIES[kind][0]} vectors"
        return
    sets = {}
    for name, rows in sources.items():
        reason = rows.missing(kind)
        if reason is None:
            positives = intramodal_positives(rows.indexed[kind], vectors.shape[0], POSITIVE_THRESHOLDS[kind])
            if positives is None:
                reason = f"no {kind} pair scores >= {POSITIVE_THRESHOLDS[kind]:g}"
            else:
                sets[name] = positives
        if reason is not None:
            report["skipped"][task if name == CXC else f"{task}.{name}"] = reason
    wanted = {CXC, AUDITED} & set(report["settings"]["protocols"])
    if not sets and not sources and wanted:
        report["skipped"][task] = f"no ratings given for the {' and '.join(sorted(wanted))} positives"
    if not sets:
        return
    progress(f"{task.replace('_to_', ' -> ')} retrieval")
    filled = _top_arrays(report, tops, (task, vectors.shape[0], vectors.shape[0] - 1))
    report["retrieval"][task] = intramodal_retrieval(vectors, sets, intervals, top=filled.get(task))
    _kept(tops, filled)


def _correlations(
    report: dict,
    vectors: dict[str, np.ndarray | None],
    runs: dict[str, bool],
    sources: dict[str, SplitRows],
    protocols: tuple[str, ...],
    bootstrap: tuple[int, int, str],
    progress: Progress,
) -> None:
    """The CxC bootstrap correlation per kind, on the CxC-format ratings when given,
    else on the dataset's own."""
    if CORRELATION not in protocols:
        return
    source = CXC if CXC in sources else AUDITED if AUDITED in sources else None
    for kind in KINDS:
        left, right = (vectors[modality] for modality in MODALITIES[kind])
        if not runs[kind]:
            report["skipped"][kind] = UNIMODAL if kind == SITS else f"no {MODALITIES[kind][0]} vectors"
        elif source is None:
            report["skipped"][kind] = "no ratings given"
        else:
            _correlation(report, kind, left, right, sources[source], bootstrap, progress)
            if kind in report["correlation"]:
                report["correlation"][kind]["ratings"] = source


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
