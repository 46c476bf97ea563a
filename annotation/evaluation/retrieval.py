"""The retrieval tasks over one split's normalized vectors. Pure numpy.

- image->text and text->image over the whole split ("COCO 5K" on the 5K test split),
  positives: the original pairs ("original"), and the original pairs plus every SITS
  pair whose mean score reaches the SITS threshold, from the CxC-format ratings ("cxc")
  and from the dataset's own ratings ("audited");
- COCO 1K: image->text and text->image within folds of 1,000 images (in split order)
  and their captions, original positives, averaged over the folds (at most five);
- text->text (STS) and image->image (SIS), positives: the pairs whose mean score
  reaches the task's threshold ("cxc", "audited"). Candidates are all other items of
  the split; the query itself is never a candidate.

Each summary gives Recall@1/5/10, the median first-correct rank, R-Precision and mAP@R
(see ``ranked``) over the queries with positives, and bootstrap intervals of the means.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from annotation.core.cxc import POSITIVE_THRESHOLDS, SITS
from annotation.evaluation.intervals import bootstrap_intervals
from annotation.evaluation.ranked import QueryFigures, positive_ranks, query_figures
from annotation.evaluation.ranks import Positives, retrieval_summary
from annotation.evaluation.rows import IndexedRows, pair_means

ORIGINAL = "original"
# The Karpathy test split's size: image <-> text over it is the COCO 5K protocol.
COCO_5K_IMAGES = 5000
FOLD_IMAGES = 1000
MAX_FOLDS = 5


@dataclass(frozen=True)
class Intervals:
    """Bootstrap settings of the intervals: resamples and seed."""

    samples: int
    seed: int


def ranked_summary(
    figures: QueryFigures, n_candidates: int, n_positives: int, intervals: Intervals, *, extra: Mapping | None = None
) -> dict:
    """Counts, Recall@K and the median first-correct rank (``retrieval_summary``),
    R-Precision and mAP@R (means x 100), and ``ci``: the bootstrap interval of each mean."""
    columns = figures.columns()
    summary = retrieval_summary(figures.first_rank, n_candidates, n_positives) | dict(extra or {})
    for name in ("R-Precision", "mAP@R"):
        summary[name] = float(columns[name].mean()) if figures.queries.size else None
    if figures.queries.size:
        summary["ci"] = bootstrap_intervals(columns, samples=intervals.samples, seed=intervals.seed)
    return summary


# --- image <-> text ------------------------------------------------------------------


def intermodal_positive_sets(
    caption_image: np.ndarray, n_images: int, rated: Mapping[str, IndexedRows]
) -> tuple[list[str], list[Positives], list[Positives]]:
    """(names, image->text sets, text->image sets): "original" from ``caption_image``
    int64 (n_captions,), then per name of ``rated`` (SITS rows) the original pairs plus
    the rated pairs whose mean reaches the SITS threshold."""
    n_captions = len(caption_image)
    caption_ids = np.arange(n_captions)
    names = [ORIGINAL]
    sets_t2i = [Positives.from_pairs(caption_ids, caption_image, n_captions, n_images)]
    sets_i2t = [Positives.from_pairs(caption_image, caption_ids, n_images, n_captions)]
    for name, sits in rated.items():
        cap, img, mean = pair_means(sits.first, sits.second, sits.scores, n_images, unordered=False)
        good = mean >= POSITIVE_THRESHOLDS[SITS]
        all_caps = np.concatenate([caption_ids, cap[good]])
        all_imgs = np.concatenate([caption_image, img[good]])
        sets_i2t.append(Positives.from_pairs(all_imgs, all_caps, n_images, n_captions))
        sets_t2i.append(Positives.from_pairs(all_caps, all_imgs, n_captions, n_images))
        names.append(name)
    return names, sets_i2t, sets_t2i


def intermodal_retrieval(
    images: np.ndarray,
    captions: np.ndarray,
    caption_image: np.ndarray,
    rated: Mapping[str, IndexedRows],
    intervals: Intervals,
    progress: Callable[[str], None],
    *,
    with_original: bool = True,
    tops: dict[str, np.ndarray] | None = None,
) -> dict[str, dict[str, dict]]:
    """``images`` float32 (n_images, d), ``captions`` float32 (n_captions, d) in one
    space. Returns {"image_to_text": {name: summary}, "text_to_image": {...}} with the
    names of ``intermodal_positive_sets`` ("original" left out without
    ``with_original``). ``tops``: {task: int64 (q, k) array} to fill with each query's
    k best candidates from the same scores."""
    n_images, n_captions = images.shape[0], captions.shape[0]
    names, sets_i2t, sets_t2i = intermodal_positive_sets(caption_image, n_images, rated)
    if not with_original:
        names, sets_i2t, sets_t2i = names[1:], sets_i2t[1:], sets_t2i[1:]
    tops = tops or {}
    progress("image -> text retrieval")
    ranks = positive_ranks(images, captions, sets_i2t, top=tops.get("image_to_text"))
    image_to_text = {
        name: ranked_summary(query_figures(r, s), n_captions, s.indices.size, intervals)
        for name, r, s in zip(names, ranks, sets_i2t, strict=True)
    }
    progress("text -> image retrieval")
    ranks = positive_ranks(captions, images, sets_t2i, top=tops.get("text_to_image"))
    text_to_image = {
        name: ranked_summary(query_figures(r, s), n_images, s.indices.size, intervals)
        for name, r, s in zip(names, ranks, sets_t2i, strict=True)
    }
    return {"image_to_text": image_to_text, "text_to_image": text_to_image}


def coco_1k(images: np.ndarray, captions: np.ndarray, caption_image: np.ndarray, intervals: Intervals) -> dict:
    """Image->text and text->image within each fold of FOLD_IMAGES images (split order)
    and their captions, original positives. Each figure is the mean over the folds of
    the fold's figure (the median rank too); the intervals resample the folds' queries
    together. Raises ValueError below one fold."""
    folds = min(MAX_FOLDS, images.shape[0] // FOLD_IMAGES)
    if folds < 1:
        raise ValueError(f"COCO 1K needs at least {FOLD_IMAGES} images; the split has {images.shape[0]}")
    per_direction: dict[str, list[QueryFigures]] = {"image_to_text": [], "text_to_image": []}
    fold_sizes = []
    for fold in range(folds):
        first, stop = fold * FOLD_IMAGES, (fold + 1) * FOLD_IMAGES
        fold_captions = np.flatnonzero((caption_image >= first) & (caption_image < stop))
        local_image = caption_image[fold_captions] - first
        fold_sizes.append(fold_captions.size)
        _, (i2t,), (t2i,) = intermodal_positive_sets(local_image, FOLD_IMAGES, {})
        fold_images, fold_caption_vectors = images[first:stop], captions[fold_captions]
        (ranks,) = positive_ranks(fold_images, fold_caption_vectors, [i2t])
        per_direction["image_to_text"].append(query_figures(ranks, i2t))
        (ranks,) = positive_ranks(fold_caption_vectors, fold_images, [t2i])
        per_direction["text_to_image"].append(query_figures(ranks, t2i))
    extra = {"folds": folds, "images_per_fold": FOLD_IMAGES}
    candidates = {"image_to_text": round(float(np.mean(fold_sizes))), "text_to_image": FOLD_IMAGES}
    out = {}
    for direction, parts in per_direction.items():
        joined = QueryFigures(
            queries=np.concatenate([p.queries for p in parts]),
            first_rank=np.concatenate([p.first_rank for p in parts]),
            r_precision=np.concatenate([p.r_precision for p in parts]),
            map_at_r=np.concatenate([p.map_at_r for p in parts]),
        )
        positives = int(sum(fold_sizes))
        summary = ranked_summary(joined, candidates[direction], positives, intervals, extra=extra)
        # Folds may differ in size (images with more captions): average the folds' figures.
        answered = [part for part in parts if part.queries.size]
        for name in summary.get("ci", {}):
            summary[name] = float(np.mean([part.columns()[name].mean() for part in answered]))
        if answered:
            summary["median_rank"] = float(np.mean([np.median(part.first_rank) for part in answered]))
        out[direction] = summary
    return out


# --- text -> text, image -> image ------------------------------------------------------


def intramodal_positives(rows: IndexedRows, n_items: int, threshold: float) -> Positives | None:
    """Both directions of every pair whose mean score reaches ``threshold``; None when
    no pair does."""
    a, b, mean = pair_means(rows.first, rows.second, rows.scores, n_items, unordered=True)
    good = mean >= threshold
    if not good.any():
        return None
    return Positives.from_pairs(
        np.concatenate([a[good], b[good]]), np.concatenate([b[good], a[good]]), n_items, n_items
    )


def intramodal_retrieval(
    vectors: np.ndarray, sets: Mapping[str, Positives], intervals: Intervals, top: np.ndarray | None = None
) -> dict[str, dict]:
    """``vectors`` float32 (n, d) of one modality; every item is a candidate for the
    others. Returns {name: summary} per positive set, counting each positive pair once.
    ``top`` int64 (n, k), when given, is filled with each item's k best others."""
    n_items = vectors.shape[0]
    names = list(sets)
    positive_sets = [sets[name] for name in names]
    ranks = positive_ranks(vectors, vectors, positive_sets, exclude=np.arange(n_items), top=top)
    return {
        name: ranked_summary(query_figures(r, sets[name]), n_items - 1, sets[name].indices.size // 2, intervals)
        for name, r in zip(names, ranks, strict=True)
    }
