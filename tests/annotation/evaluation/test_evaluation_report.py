"""The whole evaluation on the hand-built split (annotation/evaluation/report.py, retrieval.py,
rows.py): pure numpy, no database."""

import math

import numpy as np
import pytest

from annotation.evaluation import BOTH_ITEMS, FIRST_COLUMN
from annotation.evaluation.correlation import bootstrap_spearman
from annotation.evaluation.inputs import RatedPairs, Space, SplitItems
from annotation.evaluation.report import evaluate
from tests.support.evaluation_data import (
    EXPECTED,
    IMAGE_KEYS,
    SITS_ROWS,
    assert_retrieval_matches,
    hand_items,
    hand_ratings,
    hand_spaces,
)

# --- the whole evaluation on the hand-built split ------------------------------------------


def without_intervals(retrieval: dict) -> dict:
    return {
        task: {name: {k: v for k, v in s.items() if k != "ci"} for name, s in sets.items()}
        for task, sets in retrieval.items()
    }


def test_hand_built_split_gives_every_known_rank_and_recall():
    images, captions = hand_spaces()
    report = evaluate(
        items=hand_items(),
        ratings=hand_ratings(),
        image_space=images,
        caption_space=captions,
        joint=True,
        queries=FIRST_COLUMN,
    )
    assert_retrieval_matches(report["retrieval"], EXPECTED)
    assert report["spaces"] == "joint"
    assert report["items"] == {"images": 3, "captions": 6}
    assert report["ratings"]["SITS"] == {"file": "hand/sits_val.csv", "rows": 9, "rows_used": 9, "rows_left_out": 0}
    # STS and SIS have three and two queries: too few for the bootstrap, each said so.
    assert report["skipped"]["STS"] == "3 rated queries; the bootstrap needs at least 4"
    assert report["skipped"]["SIS"] == "2 rated queries; the bootstrap needs at least 4"
    # SITS: six caption queries; the model scores are the cosines of the geometry above.
    near, far = 2 / math.sqrt(5), 1 / math.sqrt(5)
    model = [1, far, 1, far, 1, far, near, near, near]
    queries = [c for c, _, _ in SITS_ROWS]
    human = [s for _, _, s in SITS_ROWS]
    expected = bootstrap_spearman(np.array(human), np.array(model), np.array(queries), seed=0)
    assert report["correlation"].keys() == {"SITS"}
    assert report["correlation"]["SITS"] == pytest.approx(expected | {"queries_from": FIRST_COLUMN, "ratings": "cxc"})
    assert report["correlation"]["SITS"]["queries"] == 6
    assert report["settings"]["bootstrap_queries"] == FIRST_COLUMN


def test_by_default_both_items_of_a_row_are_bootstrap_queries():
    images, captions = hand_spaces()
    report = evaluate(
        items=hand_items(), ratings=hand_ratings(), image_space=images, caption_space=captions, joint=True
    )
    assert report["settings"]["bootstrap_queries"] == BOTH_ITEMS
    # SITS: six caption queries and three image queries, each row a candidate of both.
    near, far = 2 / math.sqrt(5), 1 / math.sqrt(5)
    model = np.array([1, far, 1, far, 1, far, near, near, near])
    human = np.array([s for _, _, s in SITS_ROWS])
    captions_of_rows = np.array([c for c, _, _ in SITS_ROWS])
    images_of_rows = np.array([i for _, i, _ in SITS_ROWS])
    rows = np.concatenate([np.arange(9), np.arange(9)])
    queries = np.concatenate([captions_of_rows, 100 + images_of_rows])  # images kept apart from captions
    order = np.lexsort((rows, queries))
    rows, queries = rows[order], queries[order]
    expected = bootstrap_spearman(human, model, queries, rows=rows, seed=0)
    assert report["correlation"]["SITS"] == pytest.approx(expected | {"queries_from": BOTH_ITEMS, "ratings": "cxc"})
    assert report["correlation"]["SITS"]["queries"] == 9


def test_unimodal_spaces_run_only_the_intramodal_tasks():
    images, captions = hand_spaces()
    report = evaluate(
        items=hand_items(), ratings=hand_ratings(), image_space=images, caption_space=captions, joint=False
    )
    assert_retrieval_matches(report["retrieval"], {k: EXPECTED[k] for k in ("text_to_text", "image_to_image")})
    assert report["skipped"]["image_to_text"] == "unimodal spaces: no image-caption similarity"
    assert report["skipped"]["SITS"] == "unimodal spaces: no image-caption similarity"


def test_caption_vectors_alone_run_the_text_tasks():
    _, captions = hand_spaces()
    report = evaluate(items=hand_items(), ratings=hand_ratings(), image_space=None, caption_space=captions, joint=False)
    assert set(report["retrieval"]) == {"text_to_text"}
    assert report["skipped"]["image_to_image"] == "no image vectors"
    assert report["skipped"]["SIS"] == "no image vectors"


def test_a_missing_ratings_file_skips_its_tasks_and_keeps_the_original_pairs():
    images, captions = hand_spaces()
    ratings = hand_ratings()
    del ratings["SITS"]
    report = evaluate(items=hand_items(), ratings=ratings, image_space=images, caption_space=captions, joint=True)
    assert set(report["retrieval"]["image_to_text"]) == {"original"}
    assert_retrieval_matches(
        {"text_to_image": {"original": report["retrieval"]["text_to_image"]["original"]}},
        {"text_to_image": {"original": EXPECTED["text_to_image"]["original"]}},
    )
    assert report["skipped"]["text_to_image.cxc"] == "no sits_<split>.csv file for the split"
    assert report["ratings"]["SITS"] == {"file": None, "rows": 0}


def test_duplicate_rows_of_a_pair_count_with_their_mean():
    images, captions = hand_spaces()
    ratings = hand_ratings()
    sis = ratings["SIS"]
    # (i1, i0) again, in the other order, at 2.0: mean 2.25 < 2.5, so no SIS positive is left.
    ratings["SIS"] = RatedPairs(
        "SIS", sis.source, [*sis.first, IMAGE_KEYS[1]], [*sis.second, IMAGE_KEYS[0]], np.append(sis.scores, 2.0)
    )
    report = evaluate(items=hand_items(), ratings=ratings, image_space=images, caption_space=captions, joint=True)
    assert "image_to_image" not in report["retrieval"]
    assert report["skipped"]["image_to_image"] == "no SIS pair scores >= 2.5"


def test_same_seed_same_report():
    rng = np.random.default_rng(0)
    n_images = 40
    image_keys = [f"COCO_val2014_{i:012d}.jpg" for i in range(n_images)]
    caption_keys = [f"COCO_val2014:sentid:{c}" for c in range(5 * n_images)]
    items = SplitItems.from_pairs("val", image_keys, [(key, image_keys[c // 5]) for c, key in enumerate(caption_keys)])
    images = Space(rng.normal(size=(n_images, 16)), image_keys, "images.npy")
    captions = Space(rng.normal(size=(5 * n_images, 16)), caption_keys, "captions.npy")
    pairs = rng.integers(0, 5 * n_images, size=(300, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    sts = RatedPairs(
        "STS",
        "sts_val.csv",
        [caption_keys[a] for a in pairs[:, 0]],
        [caption_keys[b] for b in pairs[:, 1]],
        np.round(rng.random(len(pairs)) * 5, 2),
    )
    run = dict(items=items, ratings={"STS": sts}, image_space=images, caption_space=captions, joint=True, samples=50)
    first, again, other = evaluate(**run, seed=3), evaluate(**run, seed=3), evaluate(**run, seed=4)
    assert first == again
    assert first["correlation"]["STS"]["seed"] == 3
    # The figures do not depend on the seed; their bootstrap intervals do.
    assert without_intervals(first["retrieval"]) == without_intervals(other["retrieval"])
    assert first["correlation"]["STS"]["mean"] != other["correlation"]["STS"]["mean"]
