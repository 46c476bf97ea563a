"""The protocols an evaluation may run, and the sections beyond CxC's own tables: COCO 1K,
global calibration and the precision of a model's own top-k. Pure numpy.

Protocols (all run by default, each selectable):

- ``coco5k``: image <-> text over the whole split, original pairs as positives;
- ``coco1k``: the same within folds of 1,000 images, averaged over (at most) five folds;
- ``cxc``: positives extended by the CxC-format ratings (SITS >= 3, STS >= 3, SIS >= 2.5);
- ``audited``: the same thresholds over the dataset's own ratings (an audit included);
- ``correlation``: the CxC bootstrap Spearman with the human scores;
- ``calibration``: PR-AUC and Spearman over all rated pairs of a kind, not per query;
- ``topk``: precision@k of the model's own top-k as the raters judged it.

Every retrieval summary carries R@1/5/10, the median rank, R-Precision and mAP@R.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from annotation.core.cxc import POSITIVE_THRESHOLDS, SIS, SITS, STS
from annotation.evaluation.calibration import global_calibration
from annotation.evaluation.correlation import pair_cosines
from annotation.evaluation.inputs import MODALITIES
from annotation.evaluation.ranks import Positives
from annotation.evaluation.retrieval import COCO_5K_IMAGES, Intervals, coco_1k
from annotation.evaluation.rows import IndexedRows, SplitRows, pair_means
from annotation.evaluation.topk import topk_precision
from sampling.search.topk import exact_top_k

COCO_5K, COCO_1K, CXC, AUDITED = "coco5k", "coco1k", "cxc", "audited"
CORRELATION, CALIBRATION, TOP_K = "correlation", "calibration", "topk"
PROTOCOLS = (COCO_5K, COCO_1K, CXC, AUDITED, CORRELATION, CALIBRATION, TOP_K)

Progress = Callable[[str], None]
# Task -> (kind judged, query modality is the kind's first column).
TOP_K_TASKS = {
    "image_to_text": (SITS, False),
    "text_to_image": (SITS, True),
    "text_to_text": (STS, True),
    "image_to_image": (SIS, True),
}


def coco_5k_note(n_images: int) -> str | None:
    """Why the original-pair image <-> text figures of a split are not COCO 5K's (None
    when they are: a split of COCO_5K_IMAGES images)."""
    if n_images == COCO_5K_IMAGES:
        return None
    return (
        f"COCO 5K needs the {COCO_5K_IMAGES:,}-image test split; this split has {n_images:,} images "
        f"(its image <-> text figures with the original pairs are over those {n_images:,})"
    )


def coco_1k_section(
    report: dict,
    images: np.ndarray,
    captions: np.ndarray,
    caption_image: np.ndarray,
    intervals: Intervals,
    progress: Progress,
) -> None:
    progress("COCO 1K retrieval")
    try:
        report["coco_1k"] = coco_1k(images, captions, caption_image, intervals)
    except ValueError as exc:
        report["skipped"]["coco_1k"] = str(exc)


def _distinct_pairs(rows: IndexedRows, kind: str, n_second: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return pair_means(rows.first, rows.second, rows.scores, n_second, unordered=kind != SITS)


def calibration_section(
    report: dict,
    vectors: dict[str, np.ndarray | None],
    runs: dict[str, bool],
    sources: dict[str, SplitRows],
    progress: Progress,
) -> None:
    """PR-AUC and Spearman of the model's similarity over every distinct rated pair of a
    kind, per ratings source ("cxc", "audited"), with their intervals."""
    for source, rows in sources.items():
        for kind in (STS, SIS, SITS):
            if not runs[kind] or rows.missing(kind) is not None:
                continue
            progress(f"{kind} calibration")
            left, right = (vectors[modality] for modality in MODALITIES[kind])
            a, b, human = _distinct_pairs(rows.indexed[kind], kind, right.shape[0])
            similarity = pair_cosines(left, right, a, b)
            entry = global_calibration(similarity, human, POSITIVE_THRESHOLDS[kind])
            report["calibration"].setdefault(source, {})[kind] = entry | {"positive_at": POSITIVE_THRESHOLDS[kind]}


def _merged_rows(sources: dict[str, SplitRows], kind: str) -> IndexedRows | None:
    """Every source's rows of ``kind`` together (a pair rated in both: the mean of all rows)."""
    parts = [rows.indexed[kind] for rows in sources.values() if rows.missing(kind) is None]
    if not parts:
        return None
    return IndexedRows(
        first=np.concatenate([p.first for p in parts]),
        second=np.concatenate([p.second for p in parts]),
        scores=np.concatenate([p.scores for p in parts]),
        rows=sum(p.rows for p in parts),
        left_out=sum(p.left_out for p in parts),
    )


def _judgements(
    task: str, rows: IndexedRows | None, caption_image: np.ndarray, n_query: int, n_candidate: int
) -> tuple[Positives, Positives]:
    """(judged, positive) (query, candidate) sets of one task (empty when nothing is
    judged yet: an audit not rated yet still shows what is unrated)."""
    kind, query_first = TOP_K_TASKS[task]
    queries, candidates, labels = [], [], []
    if kind == SITS:
        captions = np.arange(caption_image.size)
        originals = (captions, caption_image) if query_first else (caption_image, captions)
        queries.append(originals[0])
        candidates.append(originals[1])
        labels.append(np.ones(captions.size, bool))
    if rows is not None:
        a, b, mean = _distinct_pairs(rows, kind, n_candidate if query_first else n_query)
        good = mean >= POSITIVE_THRESHOLDS[kind]
        pairs = [(a, b)] if kind == SITS else [(a, b), (b, a)]
        for first, second in pairs:
            queries.append(first if query_first else second)
            candidates.append(second if query_first else first)
            labels.append(good)
    if not queries:
        empty = Positives.from_pairs([], [], n_query, n_candidate)
        return empty, empty
    q, c, good = np.concatenate(queries), np.concatenate(candidates), np.concatenate(labels)
    judged = Positives.from_pairs(q, c, n_query, n_candidate)
    positive = Positives.from_pairs(q[good], c[good], n_query, n_candidate)
    return judged, positive


def top_k_section(
    report: dict,
    vectors: dict[str, np.ndarray | None],
    runs: dict[str, bool],
    caption_image: np.ndarray,
    sources: dict[str, SplitRows],
    tops: dict[str, np.ndarray],
    intervals: Intervals,
    progress: Progress,
) -> None:
    """Precision@k of the model's own top-k per task, judged by every source's ratings
    (and the original pairs, positives by definition)."""
    k = report["settings"]["top_k"]
    for task, (kind, query_first) in TOP_K_TASKS.items():
        if not runs[kind]:
            continue
        modalities = MODALITIES[kind] if query_first else MODALITIES[kind][::-1]
        query_vectors, candidate_vectors = (vectors[m] for m in modalities)
        same = modalities[0] == modalities[1]
        n_query, n_candidate = query_vectors.shape[0], candidate_vectors.shape[0]
        if k > n_candidate - same:
            report["skipped"][f"own_top_k.{task}"] = f"k={k} but only {n_candidate - same} candidates"
            continue
        top = tops.get(task)
        if top is None:
            progress(f"{task.replace('_to_', ' -> ')} top-{k}")
            exclude = np.arange(n_query) if same else None
            top = exact_top_k(query_vectors, candidate_vectors, k, exclude=exclude)
        judged, positive = _judgements(task, _merged_rows(sources, kind), caption_image, n_query, n_candidate)
        summary = topk_precision(top, judged, positive, n_candidate, samples=intervals.samples, seed=intervals.seed)
        report["own_top_k"][task] = summary | {"judged_by": sorted(sources) + (["original"] if kind == SITS else [])}
