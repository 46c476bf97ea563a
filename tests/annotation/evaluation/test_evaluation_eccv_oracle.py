"""Our retrieval figures equal the ``eccv-caption`` package's (ECCV Caption's reference code)
on the real COCO 5K test ids and positive sets it ships, for generated vectors: COCO 5K and
COCO 1K Recall@K, CxC Recall@K, and R-Precision, mAP@R and R@1 over the ECCV Caption
positives. eccv-caption is a test dependency only. No database."""

import warnings

import numpy as np
import pytest

from annotation.evaluation.ranked import positive_ranks, query_figures
from annotation.evaluation.ranks import Positives
from annotation.evaluation.retrieval import Intervals, coco_1k

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # it warns that ujson and tqdm are not installed
    from eccv_caption import Metrics

# Retrieved lists handed to eccv-caption: long enough for every R (at most 48 positives)
# and for ten items of a COCO 1K fold (a fifth of the candidates) in every list.
LIST_LENGTH = 150


@pytest.fixture(scope="module")
def oracle():
    metrics = Metrics()
    caption_ids = [int(c) for c in metrics.coco_ids]
    t2i = metrics.coco_gts["t2i"]
    image_ids = list(dict.fromkeys(t2i[c][0] for c in caption_ids))  # split order: first caption's place
    # Two ECCV positives of image->text are captions outside the 5K test split: no model
    # can retrieve them, and a positive set of ours holds only items of the split. Both
    # sides score the same sets, without them.
    in_split = set(caption_ids)
    i2t = metrics.eccv_gts["i2t"]
    metrics.eccv_gts["i2t"] = {q: [c for c in targets if c in in_split] for q, targets in i2t.items()}
    rng = np.random.default_rng(17)
    latent = rng.normal(size=(len(image_ids), 48))
    image_row = {image: row for row, image in enumerate(image_ids)}
    caption_image = np.array([image_row[t2i[c][0]] for c in caption_ids], np.int64)
    images = _unit(latent + 0.6 * rng.normal(size=latent.shape))
    captions = _unit(latent[caption_image] + 1.1 * rng.normal(size=(len(caption_ids), 48)))
    return metrics, caption_ids, image_ids, caption_image, images, captions


def _unit(x):
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _positives(gts: dict, query_ids: list[int], candidate_ids: list[int]) -> Positives:
    query_row = {item: row for row, item in enumerate(query_ids)}
    candidate_row = {item: row for row, item in enumerate(candidate_ids)}
    queries = [query_row[q] for q, targets in gts.items() for _ in targets]
    targets = [candidate_row[t] for targets in gts.values() for t in targets]
    return Positives.from_pairs(queries, targets, len(query_ids), len(candidate_ids))


def _means(ranks: np.ndarray, positives: Positives) -> dict[str, float]:
    return {name: float(column.mean()) for name, column in query_figures(ranks, positives).columns().items()}


def test_our_figures_equal_eccv_caption_on_the_coco_5k_test_ids(oracle):
    metrics, caption_ids, image_ids, caption_image, images, captions = oracle
    sets = {
        name: (_positives(g["i2t"], image_ids, caption_ids), _positives(g["t2i"], caption_ids, image_ids))
        for name, g in (("coco", metrics.coco_gts), ("cxc", metrics.cxc_gts), ("eccv", metrics.eccv_gts))
    }
    top_i2t = np.zeros((len(image_ids), LIST_LENGTH), np.int64)
    top_t2i = np.zeros((len(caption_ids), LIST_LENGTH), np.int64)
    ranks_i2t = positive_ranks(images, captions, [s[0] for s in sets.values()], top=top_i2t)
    ranks_t2i = positive_ranks(captions, images, [s[1] for s in sets.values()], top=top_t2i)
    ours = {(name, "i2t"): _means(r, s[0]) for (name, s), r in zip(sets.items(), ranks_i2t, strict=True)} | {
        (name, "t2i"): _means(r, s[1]) for (name, s), r in zip(sets.items(), ranks_t2i, strict=True)
    }

    caption_array, image_array = np.array(caption_ids), np.array(image_ids)
    i2t = {image: caption_array[row].tolist() for image, row in zip(image_ids, top_i2t, strict=True)}
    t2i = {caption: image_array[row].tolist() for caption, row in zip(caption_ids, top_t2i, strict=True)}
    theirs = metrics.compute_all_metrics(
        i2t,
        t2i,
        target_metrics=(
            "coco_1k_recalls",
            "coco_5k_recalls",
            "cxc_recalls",
            "eccv_r1",
            "eccv_map_at_r",
            "eccv_rprecision",
        ),
        Ks=(1, 5, 10),
    )
    figures = []
    for direction in ("i2t", "t2i"):
        for k in (1, 5, 10):
            figures.append((theirs[f"coco_5k_r{k}"][direction], ours[("coco", direction)][f"R@{k}"]))
            figures.append((theirs[f"cxc_r{k}"][direction], ours[("cxc", direction)][f"R@{k}"]))
        figures.append((theirs["eccv_r1"][direction], ours[("eccv", direction)]["R@1"]))
        figures.append((theirs["eccv_map_at_r"][direction], ours[("eccv", direction)]["mAP@R"]))
        figures.append((theirs["eccv_rprecision"][direction], ours[("eccv", direction)]["R-Precision"]))
    for theirs_value, ours_value in figures:
        assert ours_value == pytest.approx(100 * theirs_value, abs=1e-9)
    # Not a trivial model: the figures spread between nothing and everything.
    assert 5 < ours[("coco", "t2i")]["R@1"] < 95 and 5 < ours[("eccv", "i2t")]["mAP@R"] < 95

    # COCO 1K: our folds of 1,000 images in split order are the package's folds.
    ours_1k = coco_1k(images, captions, caption_image, Intervals(samples=10, seed=0))
    for direction, task in (("i2t", "image_to_text"), ("t2i", "text_to_image")):
        assert ours_1k[task]["folds"] == 5
        for k in (1, 5, 10):
            assert ours_1k[task][f"R@{k}"] == pytest.approx(100 * theirs[f"coco_1k_r{k}"][direction], abs=1e-9)
