"""The CxC evaluation metrics (annotation/evaluation.py): pure numpy, no database."""

import csv
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from annotation.evaluation import (
    EvaluationError,
    Positives,
    RatedPairs,
    Space,
    SplitItems,
    average_ranks,
    bootstrap_rows,
    bootstrap_spearman,
    evaluate,
    first_correct_ranks,
    format_report,
    load_space,
    read_cxc_ratings,
    read_ratings_folder,
    retrieval_summary,
    spearman,
)

# --- a hand-built split where every rank is known -------------------------------------
#
# Images i0, i1, i2 are the axes e0, e1, e2; each has two captions. Caption vectors
# (normalized by the evaluation): c0 = e0, c1 = e0 + 2 e1, c2 = e1, c3 = e1 + 2 e2,
# c4 = e2, c5 = 2 e0 + e2. So c0, c2, c4 lie on their image (cosine 1) and c1, c3, c5
# are closer (0.894) to the *next* image than to their own (0.447).

IMAGE_KEYS = [f"COCO_val2014_{n:012d}.jpg" for n in (1, 2, 3)]
CAPTION_KEYS = [f"COCO_val2014:sentid:{n}" for n in range(100, 106)]
CAPTION_OF = [0, 0, 1, 1, 2, 2]
IMAGE_VECTORS = np.eye(3, dtype=np.float32)
CAPTION_VECTORS = np.array([[1, 0, 0], [1, 2, 0], [0, 1, 0], [0, 1, 2], [0, 0, 1], [2, 0, 1]], dtype=np.float32)

STS_ROWS = [(0, 5, 3.5), (2, 4, 3.0), (1, 3, 2.0)]  # positives: (c0, c5) and (c2, c4), 3.0 included
SIS_ROWS = [(0, 1, 2.5), (1, 2, 2.4)]  # positive: (i0, i1), 2.5 included
SITS_ROWS = [(c, CAPTION_OF[c], 4.8) for c in range(6)] + [(1, 1, 4.0), (3, 2, 3.0), (5, 0, 2.9)]


# Expected, worked out by hand from the geometry above (ties count against the model):
# image->text: every image's own axis caption scores 1, so each first correct item is rank 1.
# text->image, original pairs: c1, c3, c5 have the next image ahead of their own: rank 2.
# text->image, CxC: (c1, i1) and (c3, i2) are SITS positives now (rank 1); (c5, i0) at 2.9 is not.
# text->text: c0 <-> c5 (cosine 0.894) rank 1 both ways; c2 <-> c4 have cosine 0 and every
# other caption scores >= 0 for them: rank 5 (4 candidates ahead or tied).
# image->image: i0 <-> i1 have cosine 0, tied with i2: rank 2.
def _figures(queries, candidates, positives, r1, r5, r10, median):
    return {
        "queries": queries,
        "candidates": candidates,
        "positives": positives,
        "R@1": r1,
        "R@5": r5,
        "R@10": r10,
        "median_rank": median,
    }


EXPECTED = {
    "image_to_text": {
        "original": _figures(3, 6, 6, 100.0, 100.0, 100.0, 1.0),
        "cxc": _figures(3, 6, 8, 100.0, 100.0, 100.0, 1.0),
    },
    "text_to_image": {
        "original": _figures(6, 3, 6, 50.0, 100.0, 100.0, 1.5),
        "cxc": _figures(6, 3, 8, 500 / 6, 100.0, 100.0, 1.0),
    },
    "text_to_text": {"cxc": _figures(4, 5, 2, 50.0, 100.0, 100.0, 3.0)},
    "image_to_image": {"cxc": _figures(2, 2, 1, 0.0, 100.0, 100.0, 2.0)},
}


def hand_items() -> SplitItems:
    return SplitItems.from_pairs("val", IMAGE_KEYS, [(CAPTION_KEYS[c], IMAGE_KEYS[CAPTION_OF[c]]) for c in range(6)])


def hand_ratings(source: str = "hand") -> dict[str, RatedPairs]:
    def pairs(kind, rows, first_keys, second_keys):
        return RatedPairs(
            kind=kind,
            source=f"{source}/{kind.lower()}_val.csv",
            first=[first_keys[a] for a, _, _ in rows],
            second=[second_keys[b] for _, b, _ in rows],
            scores=np.array([s for _, _, s in rows], dtype=np.float64),
        )

    return {
        "STS": pairs("STS", STS_ROWS, CAPTION_KEYS, CAPTION_KEYS),
        "SIS": pairs("SIS", SIS_ROWS, IMAGE_KEYS, IMAGE_KEYS),
        "SITS": pairs("SITS", SITS_ROWS, CAPTION_KEYS, IMAGE_KEYS),
    }


def write_hand_files(folder: Path) -> dict[str, Path]:
    """The hand-built case as files: ratings/{sts,sis,sits}_val.csv and vectors with ids."""
    ratings = folder / "ratings"
    ratings.mkdir(parents=True)
    for name, header, rows, first_keys, second_keys in (
        ("sts_val.csv", ["caption1", "caption2"], STS_ROWS, CAPTION_KEYS, CAPTION_KEYS),
        ("sis_val.csv", ["image1", "image2"], SIS_ROWS, IMAGE_KEYS, IMAGE_KEYS),
        ("sits_val.csv", ["caption", "image"], SITS_ROWS, CAPTION_KEYS, IMAGE_KEYS),
    ):
        with (ratings / name).open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow([*header, "agg_score", "sampling_method"])
            writer.writerows([first_keys[a], second_keys[b], f"{s:.2f}", "uploaded"] for a, b, s in rows)
    paths = {"ratings": ratings}
    for modality, keys, vectors in (("image", IMAGE_KEYS, IMAGE_VECTORS), ("caption", CAPTION_KEYS, CAPTION_VECTORS)):
        paths[f"{modality}_vectors"] = folder / f"{modality}s.npy"
        paths[f"{modality}_ids"] = folder / f"{modality}s.txt"
        np.save(paths[f"{modality}_vectors"], vectors)
        paths[f"{modality}_ids"].write_text("".join(f"{key}\n" for key in keys))
    return paths


def hand_spaces() -> tuple[Space, Space]:
    return (
        Space(vectors=IMAGE_VECTORS, ids=list(IMAGE_KEYS), source="images.npy"),
        Space(vectors=CAPTION_VECTORS, ids=list(CAPTION_KEYS), source="captions.npy"),
    )


def assert_retrieval_matches(retrieval: dict, expected: dict) -> None:
    assert set(retrieval) == set(expected)
    for task, variants in expected.items():
        assert set(retrieval[task]) == set(variants), task
        for variant, figures in variants.items():
            got = retrieval[task][variant]
            assert set(got) == set(figures), (task, variant)
            for key, value in figures.items():
                assert got[key] == pytest.approx(value), (task, variant, key)


# --- retrieval ranks -------------------------------------------------------------------


def _ranks_for(score_matrix, positive_lists, **kwargs):
    """Queries are the identity rows, so candidate c's score for query q is S[q, c]."""
    scores = np.asarray(score_matrix, dtype=np.float32)
    queries = np.eye(scores.shape[0], dtype=np.float32)
    q_idx = [q for q, positives in enumerate(positive_lists) for _ in positives]
    c_idx = [c for positives in positive_lists for c in positives]
    positives = Positives.from_pairs(np.array(q_idx), np.array(c_idx), scores.shape[0], scores.shape[1])
    (ranks,) = first_correct_ranks(queries, np.ascontiguousarray(scores.T), [positives], **kwargs)
    return ranks


def test_first_correct_rank_counts_negatives_ahead_of_the_best_positive():
    scores = [
        [0.9, 0.8, 0.7, 0.6, 0.5],  # positive c2: two candidates ahead -> 3
        [0.1, 0.5, 0.5, 0.2, 0.3],  # positives c2, c3: best c2 at 0.5, c1 ties it -> 2
        [0.2, 0.3, 0.4, 0.5, 0.6],  # positives c0, c4: best c4 is the top -> 1
        [0.5, 0.4, 0.3, 0.2, 0.1],  # no positive: not a query -> 0
    ]
    ranks = _ranks_for(scores, [[2], [2, 3], [0, 4], []])
    assert ranks.tolist() == [3, 2, 1, 0]


def test_excluded_candidate_is_not_counted():
    scores = [[0.9, 0.8, 0.7], [0.9, 0.8, 0.7]]
    ranks = _ranks_for(scores, [[2], [2]], exclude=np.array([0, -1]))
    assert ranks.tolist() == [2, 3]


def test_a_constant_model_ranks_every_positive_last():
    scores = np.full((3, 6), 0.5)
    ranks = _ranks_for(scores, [[0], [1, 2], [5]])
    assert ranks.tolist() == [6, 5, 6]


def test_recall_and_median_over_queries():
    scores = np.tile(np.linspace(1.0, 0.0, 15), (4, 1))
    ranks = _ranks_for(scores, [[0], [4], [9], [14]])
    assert ranks.tolist() == [1, 5, 10, 15]
    summary = retrieval_summary(ranks, 15, 4)
    assert summary == {
        "queries": 4,
        "candidates": 15,
        "positives": 4,
        "R@1": 25.0,
        "R@5": 50.0,
        "R@10": 75.0,
        "median_rank": 7.5,
    }


def test_queries_without_positives_are_left_out_of_the_summary():
    summary = retrieval_summary(np.array([0, 2, 0, 1, 3]), 9, 3)
    assert summary["queries"] == 3
    assert summary["R@1"] == pytest.approx(100 / 3)
    assert summary["median_rank"] == 2.0


def _reference_ranks(scores, positive_lists, exclude):
    """Full sort per query; among equal scores, non-positives come first (ties count against)."""
    ranks = []
    for q, positives in enumerate(positive_lists):
        if not positives:
            ranks.append(0)
            continue
        candidates = [c for c in range(scores.shape[1]) if c != exclude[q]]
        ordered = sorted(candidates, key=lambda c: (-scores[q, c], c in positives))
        ranks.append(1 + next(i for i, c in enumerate(ordered) if c in positives))
    return ranks


@pytest.mark.parametrize("block_rows", [1, 3, 7, None])
def test_blocked_ranks_match_a_full_sort(block_rows):
    rng = np.random.default_rng(3)
    queries = rng.normal(size=(23, 8)).astype(np.float32)
    candidates = rng.normal(size=(31, 8)).astype(np.float32)
    # Rounded scores make ties frequent.
    candidates = np.round(candidates, 1)
    positive_lists = [sorted(set(rng.integers(0, 31, rng.integers(0, 4)).tolist())) for _ in range(23)]
    exclude = rng.integers(-1, 31, 23)
    exclude = np.array([e if e not in p else -1 for e, p in zip(exclude, positive_lists, strict=True)])
    q_idx = [q for q, p in enumerate(positive_lists) for _ in p]
    c_idx = [c for p in positive_lists for c in p]
    positives = Positives.from_pairs(np.array(q_idx, dtype=np.int64), np.array(c_idx, dtype=np.int64), 23, 31)
    (ranks,) = first_correct_ranks(queries, candidates, [positives], exclude=exclude, block_rows=block_rows)
    scores = queries @ candidates.T
    assert ranks.tolist() == _reference_ranks(scores, positive_lists, exclude)


def test_several_positive_sets_share_one_pass():
    scores = [[0.9, 0.8, 0.7], [0.1, 0.2, 0.3]]
    queries = np.eye(2, dtype=np.float32)
    candidates = np.ascontiguousarray(np.asarray(scores, dtype=np.float32).T)
    narrow = Positives.from_pairs(np.array([0, 1]), np.array([2, 0]), 2, 3)
    wide = Positives.from_pairs(np.array([0, 0, 1, 1]), np.array([2, 1, 0, 1]), 2, 3)
    ranks_narrow, ranks_wide = first_correct_ranks(queries, candidates, [narrow, wide])
    assert ranks_narrow.tolist() == [3, 3]
    assert ranks_wide.tolist() == [2, 2]


# --- Spearman and the bootstrap ------------------------------------------------------------


def test_average_ranks_match_scipy_with_ties():
    rng = np.random.default_rng(0)
    values = rng.integers(0, 6, size=(4, 40)).astype(float)
    assert np.array_equal(average_ranks(values), stats.rankdata(values, axis=1))
    assert average_ranks(np.array([3.0, 1.0, 3.0, 2.0])).tolist() == [3.5, 1.0, 3.5, 2.0]


def test_spearman_matches_scipy_with_ties():
    rng = np.random.default_rng(1)
    x = np.round(rng.random((5, 60)) * 5, 1)
    y = x + rng.normal(scale=1.5, size=x.shape)
    y[:, ::3] = np.round(y[:, ::3])
    expected = [stats.spearmanr(a, b).statistic for a, b in zip(x, y, strict=True)]
    assert spearman(x, y) == pytest.approx(expected, abs=1e-12)
    assert spearman(x[0], y[0]) == pytest.approx(expected[0], abs=1e-12)


def test_spearman_of_a_constant_side_is_undefined():
    assert math.isnan(spearman(np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 2.0])))


def _rated_rows(n_rows=3000, n_queries=1200, seed=5):
    rng = np.random.default_rng(seed)
    human = np.round(rng.random(n_rows) * 5, 2)  # two decimals: many ties, as in the release
    queries = rng.integers(0, n_queries, n_rows)
    return rng, human, queries


def test_model_equal_to_human_scores_gets_100():
    _, human, queries = _rated_rows()
    result = bootstrap_spearman(human, human.copy(), queries, samples=200, seed=1)
    assert result["mean"] == pytest.approx(100.0)
    assert result["std"] == pytest.approx(0.0, abs=1e-9)
    assert result["undefined_samples"] == 0


def test_a_monotone_model_gets_100_and_a_reversed_one_minus_100():
    _, human, queries = _rated_rows()
    assert bootstrap_spearman(human, np.exp(human), queries, samples=100)["mean"] == pytest.approx(100.0)
    assert bootstrap_spearman(human, -human, queries, samples=100)["mean"] == pytest.approx(-100.0)


def test_shuffled_model_scores_correlate_about_zero():
    rng, human, queries = _rated_rows()
    result = bootstrap_spearman(human, rng.permutation(human), queries, samples=300, seed=2)
    # One sample holds ~600 rows: its rho has a standard error of about 4 (x 100).
    assert abs(result["mean"]) < 8
    assert 1 < result["std"] < 10


def test_bootstrap_mean_tracks_the_full_data_correlation():
    rng, human, queries = _rated_rows(seed=9)
    model = human + rng.normal(scale=1.5, size=human.size)
    full = 100 * stats.spearmanr(human, model).statistic
    result = bootstrap_spearman(human, model, queries, samples=300, seed=0)
    assert 40 < full < 90
    assert result["mean"] == pytest.approx(full, abs=3)


def test_same_seed_same_figures_other_seed_other_samples():
    rng, human, queries = _rated_rows()
    model = human + rng.normal(size=human.size)
    first = bootstrap_spearman(human, model, queries, samples=100, seed=7)
    again = bootstrap_spearman(human, model, queries, samples=100, seed=7)
    other = bootstrap_spearman(human, model, queries, samples=100, seed=8)
    assert first == again
    assert (first["mean"], first["std"]) != (other["mean"], other["std"])


def test_each_sample_takes_half_of_the_queries_and_one_row_of_each():
    rng = np.random.default_rng(4)
    queries = rng.integers(0, 41, 300)  # 41 queries (some rows each): 20 per sample
    n_queries = np.unique(queries).size
    drawn = np.concatenate(list(bootstrap_rows(queries, samples=400, seed=3)))
    assert drawn.shape == (400, n_queries // 2)
    for rows in drawn:
        assert np.unique(queries[rows]).size == rows.size  # one row per query, no repeats
    # Over many samples every query and every row turns up, each query about half the time.
    assert np.unique(drawn).size == queries.size
    per_query = np.bincount(queries[drawn].ravel(), minlength=41) / 400
    assert np.all(np.abs(per_query - 20 / 41) < 0.1)


def test_bootstrap_spearman_reports_its_counts():
    _, human, queries = _rated_rows()
    result = bootstrap_spearman(human, human + 1, queries, samples=10, seed=4)
    n_queries = np.unique(queries).size
    assert result["samples"] == 10
    assert result["seed"] == 4
    assert result["queries"] == n_queries
    assert result["rows"] == human.size
    assert result["rows_per_sample"] == n_queries // 2


def test_bootstrap_needs_four_queries():
    with pytest.raises(EvaluationError, match="3 rated queries; the bootstrap needs at least 4"):
        bootstrap_spearman(np.arange(6.0), np.arange(6.0), np.array([0, 0, 1, 1, 2, 2]))


# --- the whole evaluation on the hand-built split ------------------------------------------


def test_hand_built_split_gives_every_known_rank_and_recall():
    images, captions = hand_spaces()
    report = evaluate(
        items=hand_items(), ratings=hand_ratings(), image_space=images, caption_space=captions, joint=True
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
    assert report["correlation"]["SITS"] == pytest.approx(expected)
    assert report["correlation"]["SITS"]["queries"] == 6


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
    assert report["retrieval"]["text_to_image"]["original"] == pytest.approx(EXPECTED["text_to_image"]["original"])
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
    assert first["retrieval"] == other["retrieval"]
    assert first["correlation"]["STS"]["mean"] != other["correlation"]["STS"]["mean"]


def test_the_table_has_the_papers_shape():
    images, captions = hand_spaces()
    report = evaluate(
        items=hand_items(), ratings=hand_ratings(), image_space=images, caption_space=captions, joint=True
    )
    text = format_report(report)
    lines = text.splitlines()
    assert any("Image -> Text" in line and "Text -> Image" in line for line in lines)
    assert any("Text -> Text (STS >= 3)" in line and "Image -> Image (SIS >= 2.5)" in line for line in lines)
    original = next(line for line in lines if line.startswith("original pairs"))
    assert original.split()[2:] == ["100.0", "100.0", "100.0", "1.0", "50.0", "100.0", "100.0", "1.5"]
    cxc = next(line for line in lines if line.startswith("CxC (+ SITS >= 3)"))
    assert cxc.split()[-4:] == ["83.3", "100.0", "100.0", "1.0"]
    assert "Not evaluated:" in text


def test_the_table_shows_correlations_as_mean_and_std():
    report = {
        "split": "val",
        "items": {"images": 1, "captions": 5},
        "spaces": "unimodal",
        "ratings": {},
        "retrieval": {},
        "correlation": {"STS": {"mean": 71.234, "std": 0.456}},
        "skipped": {},
        "settings": {"samples": 1000, "seed": 0},
    }
    text = format_report(report)
    assert "Spearman x 100 with human scores (mean ± std over 1000 samples, seed 0)" in text
    assert text.splitlines()[-1].split() == ["71.2", "±", "0.5", "-", "-"]


# --- bad input ---------------------------------------------------------------------------


def test_rated_ids_that_the_vectors_lack_are_named():
    images, captions = hand_spaces()
    ratings = hand_ratings()
    sts = ratings["STS"]
    ratings["STS"] = RatedPairs(
        "STS",
        sts.source,
        [*sts.first, "COCO_val2014:sentid:999"],
        [*sts.second, CAPTION_KEYS[0]],
        np.append(sts.scores, 1.0),
    )
    with pytest.raises(EvaluationError) as caught:
        evaluate(items=hand_items(), ratings=ratings, image_space=images, caption_space=captions, joint=True)
    message = str(caught.value)
    assert "hand/sts_val.csv" in message
    assert "the caption vectors (captions.npy) lack 1 caption id(s)" in message
    assert "'COCO_val2014:sentid:999'" in message


def test_rated_ids_outside_the_split_are_named_or_left_out_on_request():
    images, captions = hand_spaces()
    other = "COCO_val2014_000000000099.jpg"
    images = Space(np.vstack([IMAGE_VECTORS, np.ones((1, 3))]), [*IMAGE_KEYS, other], "images.npy")
    ratings = hand_ratings()
    sis = ratings["SIS"]
    ratings["SIS"] = RatedPairs(
        "SIS", sis.source, [*sis.first, other], [*sis.second, IMAGE_KEYS[0]], np.append(sis.scores, 4)
    )
    run = dict(items=hand_items(), ratings=ratings, image_space=images, caption_space=captions, joint=True)
    with pytest.raises(
        EvaluationError, match=r"1 image id\(s\) are not images of split 'val' of the dataset: '.*099.jpg'"
    ):
        evaluate(**run)
    report = evaluate(**run, restrict_to_split=True)
    assert report["ratings"]["SIS"] == {"file": "hand/sis_val.csv", "rows": 3, "rows_used": 2, "rows_left_out": 1}
    assert_retrieval_matches(report["retrieval"], EXPECTED)


def test_a_split_item_without_a_vector_is_named():
    images, captions = hand_spaces()
    captions = Space(CAPTION_VECTORS[:5], CAPTION_KEYS[:5], "captions.npy")
    with pytest.raises(
        EvaluationError, match=r"captions.npy: no vector for 1 caption\(s\) of the split: 'COCO_val2014:sentid:105'"
    ):
        evaluate(items=hand_items(), ratings=hand_ratings(), image_space=images, caption_space=captions, joint=True)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_vectors_with_nan_or_infinity_are_named(bad):
    images, captions = hand_spaces()
    vectors = CAPTION_VECTORS.copy()
    vectors[3, 1] = bad
    captions = Space(vectors, list(CAPTION_KEYS), "captions.npy")
    with pytest.raises(
        EvaluationError, match=r"captions.npy: row 3 \(id 'COCO_val2014:sentid:103'\) has a NaN or infinite value"
    ):
        evaluate(items=hand_items(), ratings=hand_ratings(), image_space=images, caption_space=captions, joint=True)


def test_a_zero_vector_is_named():
    images, captions = hand_spaces()
    images = Space(np.vstack([IMAGE_VECTORS[:2], np.zeros((1, 3))]), list(IMAGE_KEYS), "images.npy")
    with pytest.raises(EvaluationError, match=r"images.npy: row 2 \(id 'COCO_val2014_000000000003.jpg'\) is all zeros"):
        evaluate(items=hand_items(), ratings=hand_ratings(), image_space=images, caption_space=captions, joint=True)


def test_a_joint_space_needs_one_dimension():
    images, captions = hand_spaces()
    images = Space(np.eye(3, 4), list(IMAGE_KEYS), "images.npy")
    with pytest.raises(EvaluationError, match="image vectors have 4 dimensions and caption vectors 3"):
        evaluate(items=hand_items(), ratings=hand_ratings(), image_space=images, caption_space=captions, joint=True)


def test_nothing_to_evaluate_says_why():
    images, _ = hand_spaces()
    ratings = {"STS": hand_ratings()["STS"]}
    with pytest.raises(
        EvaluationError, match=r"nothing to evaluate on split 'val'.*image_to_image: no sis_<split>\.csv"
    ):
        evaluate(items=hand_items(), ratings=ratings, image_space=images, caption_space=None, joint=False)


def test_a_split_with_no_ratings_names_the_expected_files(tmp_path):
    with pytest.raises(EvaluationError) as caught:
        read_ratings_folder(tmp_path, "test")
    assert str(caught.value) == (
        f"split 'test' has no ratings files in {tmp_path}: "
        "expected rated rows in sts_test.csv, sis_test.csv, sits_test.csv"
    )
    (tmp_path / "sts_test.csv").write_text("caption1,caption2,agg_score,sampling_method\n")
    with pytest.raises(EvaluationError, match="split 'test' has only empty ratings files"):
        read_ratings_folder(tmp_path, "test")
    with pytest.raises(EvaluationError, match=r"ratings folder .*nowhere not found"):
        read_ratings_folder(tmp_path / "nowhere", "test")


def test_reads_the_files_of_the_split_only(tmp_path):
    paths = write_hand_files(tmp_path)
    (paths["ratings"] / "sts_test.csv").write_text("caption1,caption2,agg_score\n")
    ratings = read_ratings_folder(paths["ratings"], "val")
    assert set(ratings) == {"STS", "SIS", "SITS"}
    assert ratings["SITS"].first[:2] == CAPTION_KEYS[:2]
    assert ratings["SITS"].second[-1] == IMAGE_KEYS[0]
    assert ratings["SITS"].scores.tolist() == [s for _, _, s in SITS_ROWS]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "empty file; expected a header caption1,caption2,agg_score,sampling_method"),
        (
            "image1,image2,agg_score\n",
            "header is 'image1,image2,agg_score'; a STS file starts with caption1,caption2,agg_score",
        ),
        ("caption1,caption2,agg_score\na,b\n", "line 2 has 2 field(s); expected at least 3"),
        ("caption1,caption2,agg_score\na,,3\n", "line 2 has an empty item id"),
        ("caption1,caption2,agg_score\na,b,3\na,a,3\n", "line 3 pairs 'a' with itself"),
        ("caption1,caption2,agg_score\na,b,high\n", "line 2: agg_score 'high' is not a number"),
        ("caption1,caption2,agg_score\na,b,5.5\n", "line 2: agg_score 5.5 is outside 0-5"),
        ("caption1,caption2,agg_score\na,b,nan\n", "line 2: agg_score nan is outside 0-5"),
    ],
)
def test_bad_ratings_files_are_named_with_the_line(tmp_path, content, message):
    path = tmp_path / "sts_val.csv"
    path.write_text(content)
    with pytest.raises(EvaluationError) as caught:
        read_cxc_ratings(path, "STS")
    assert str(caught.value) == f"{path}: {message}"


def test_reads_the_public_release_files(shared_dir):
    for kind, name, rows in (
        ("STS", "sts_val.csv", 44_009),
        ("SIS", "sis_val.csv", 42_767),
        ("SITS", "sits_val.csv", 44_722),
    ):
        pairs = read_cxc_ratings(shared_dir / "cxc" / name, kind)
        assert len(pairs) == rows
        assert pairs.scores.min() >= 0 and pairs.scores.max() <= 5
    assert pairs.first[0].startswith("COCO_val2014:sentid:") and pairs.second[0].startswith("COCO_val2014_")


def test_load_space_checks_rows_against_ids(tmp_path):
    np.save(tmp_path / "v.npy", np.ones((3, 2), dtype=np.float32))
    (tmp_path / "ids.txt").write_text("a\nb\n")
    with pytest.raises(EvaluationError, match=r"has 3 rows but .*ids\.txt has 2 ids"):
        load_space(tmp_path / "v.npy", tmp_path / "ids.txt")
    (tmp_path / "ids.txt").write_text("a\nb\nc\n")
    space = load_space(tmp_path / "v.npy", tmp_path / "ids.txt")
    assert space.ids == ["a", "b", "c"] and space.dimension == 2
