"""The CxC retrieval tasks over one split's normalized vectors. Pure numpy.

- image->text and text->image, positives: the original pairs ("original"), and the
  original pairs plus every SITS pair whose mean score reaches the SITS threshold ("cxc");
- text->text (STS) and image->image (SIS), positives: the pairs whose mean score reaches
  the task's threshold. Candidates are all other items of the split; the query itself
  is never a candidate.

Queries are the items with at least one positive (see ``ranks``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from annotation.cxc import POSITIVE_THRESHOLDS, SITS
from annotation.evaluation.ranks import Positives, first_correct_ranks, retrieval_summary
from annotation.evaluation.rows import IndexedRows, pair_means

# --- image <-> text ------------------------------------------------------------------


def intermodal_positive_sets(
    caption_image: np.ndarray, n_images: int, sits: IndexedRows | None
) -> tuple[list[str], list[Positives], list[Positives]]:
    """(names, image->text sets, text->image sets): "original" from ``caption_image``
    int64 (n_captions,), and "cxc" adding the SITS positives when ``sits`` rows are given."""
    n_captions = len(caption_image)
    caption_ids = np.arange(n_captions)
    original_t2i = Positives.from_pairs(caption_ids, caption_image, n_captions, n_images)
    original_i2t = Positives.from_pairs(caption_image, caption_ids, n_images, n_captions)
    names, sets_i2t, sets_t2i = ["original"], [original_i2t], [original_t2i]
    if sits is not None:
        cap, img, mean = pair_means(sits.first, sits.second, sits.scores, n_images, unordered=False)
        good = mean >= POSITIVE_THRESHOLDS[SITS]
        all_caps = np.concatenate([caption_ids, cap[good]])
        all_imgs = np.concatenate([caption_image, img[good]])
        sets_i2t.append(Positives.from_pairs(all_imgs, all_caps, n_images, n_captions))
        sets_t2i.append(Positives.from_pairs(all_caps, all_imgs, n_captions, n_images))
        names.append("cxc")
    return names, sets_i2t, sets_t2i


def intermodal_retrieval(
    images: np.ndarray,
    captions: np.ndarray,
    caption_image: np.ndarray,
    sits: IndexedRows | None,
    progress: Callable[[str], None],
) -> dict[str, dict[str, dict]]:
    """``images`` float32 (n_images, d), ``captions`` float32 (n_captions, d) in one
    space. Returns {"image_to_text": {name: summary}, "text_to_image": {...}} with the
    names of ``intermodal_positive_sets``."""
    n_images, n_captions = images.shape[0], captions.shape[0]
    names, sets_i2t, sets_t2i = intermodal_positive_sets(caption_image, n_images, sits)
    progress("image -> text retrieval")
    image_to_text = _summaries(names, first_correct_ranks(images, captions, sets_i2t), sets_i2t, n_captions)
    progress("text -> image retrieval")
    text_to_image = _summaries(names, first_correct_ranks(captions, images, sets_t2i), sets_t2i, n_images)
    return {"image_to_text": image_to_text, "text_to_image": text_to_image}


def _summaries(
    names: Sequence[str], ranks: Sequence[np.ndarray], sets: Sequence[Positives], n_candidates: int
) -> dict[str, dict]:
    return {
        name: retrieval_summary(r, n_candidates, s.indices.size) for name, r, s in zip(names, ranks, sets, strict=True)
    }


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


def intramodal_retrieval(vectors: np.ndarray, positives: Positives) -> dict[str, dict]:
    """``vectors`` float32 (n, d) of one modality; every item is a candidate for the
    others. Returns {"cxc": summary}, counting each positive pair once."""
    n_items = vectors.shape[0]
    (ranks,) = first_correct_ranks(vectors, vectors, [positives], exclude=np.arange(n_items))
    return {"cxc": retrieval_summary(ranks, n_items - 1, positives.indices.size // 2)}
