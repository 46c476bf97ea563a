"""Caption-to-corpus ranking and its failure set (annotation/evaluation/explain/ranking.py):
worked examples by hand, and the blocked computation against a brute-force reference on
random data. Pure, no database."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.evaluation.explain.ranking import build_corpora, rank_queries, ranking_figures


def _unit(rows) -> np.ndarray:
    rows = np.asarray(rows, np.float64)
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def brute_force(captions, caption_image, n_images):
    """(rank, first) of every answerable query, by building each corpus of each query
    from scratch in float64."""
    captions = np.asarray(captions, np.float64)
    ranks, firsts, queries = [], [], []
    for query, own in enumerate(caption_image):
        if np.sum(caption_image == own) < 2:
            continue
        scores = np.full(n_images, -np.inf)
        for image in range(n_images):
            members = [c for c in range(len(captions)) if caption_image[c] == image and c != query]
            if members:
                mean = captions[members].mean(axis=0)
                scores[image] = captions[query] @ mean / np.linalg.norm(mean)
        others = np.delete(np.arange(n_images), own)
        rank = 1 + int(np.sum(scores[others] >= scores[own]))
        queries.append(query)
        ranks.append(rank)
        firsts.append(own if rank == 1 else int(others[np.argmax(scores[others])]))
    return np.array(queries), np.array(ranks), np.array(firsts)


# --- worked examples --------------------------------------------------------------------
#
# Image 0 has captions a = e0, b = e0 + e1 (normalized); image 1 has c = e1, d = e1.
# Query a: its own corpus is b alone, cosine 0.707; image 1's corpus (c + d) is e1,
# cosine 0: rank 1. Query b: own corpus a = e0, cosine 0.707; image 1: e1, cosine 0.707:
# a tie, counted against the model, rank 2, retrieved image 1. Queries c and d: own corpus
# e1, cosine 1: rank 1.


def test_worked_example_with_a_tie_counted_against_the_model():
    captions = _unit([[1, 0], [1, 1], [0, 1], [0, 1]])
    caption_image = np.array([0, 0, 1, 1])
    ranking = rank_queries(captions, caption_image, build_corpora(captions, caption_image, 2))
    assert ranking.rank.tolist() == [1, 2, 1, 1]
    assert ranking.first.tolist() == [0, 1, 1, 1]
    assert ranking.failures.tolist() == [1]
    assert ranking.truth[ranking.failures].tolist() == [0]


def test_the_query_is_left_out_of_its_own_corpus_only():
    # With itself in its corpus query b would score 0.92 on image 0 and win; left out it ties.
    captions = _unit([[1, 0], [1, 1], [0, 1], [0, 1]])
    caption_image = np.array([0, 0, 1, 1])
    corpora = build_corpora(captions, caption_image, 2)
    assert corpora.counts.tolist() == [2, 2]
    assert rank_queries(captions, caption_image, corpora, queries=np.array([1])).rank.tolist() == [2]


def test_a_query_whose_image_has_no_other_caption_is_not_asked():
    captions = _unit([[1, 0], [0, 1], [0, 1]])
    caption_image = np.array([0, 1, 1])
    ranking = rank_queries(captions, caption_image, build_corpora(captions, caption_image, 3))
    assert ranking.queries.tolist() == [1, 2]
    assert ranking.unanswerable == 1
    # Image 2 has no caption: no candidate, so it never outranks anything.
    assert ranking.rank.tolist() == [1, 1]


def test_changed_query_vectors_keep_the_original_caption_out_of_the_own_corpus():
    captions = _unit([[1, 0], [1, 1], [0, 1], [0, 1]])
    caption_image = np.array([0, 0, 1, 1])
    corpora = build_corpora(captions, caption_image, 2)
    # Query a changed to e1: its own corpus is still b (0.707), image 1 scores 1: rank 2.
    changed = rank_queries(captions, caption_image, corpora, np.array([0]), _unit([[0, 1]]))
    assert changed.rank.tolist() == [2]
    assert changed.first.tolist() == [1]


def test_figures_of_known_ranks():
    figures = ranking_figures(np.array([1, 2, 6, 11]), 20)
    assert figures["queries"] == 4
    assert figures["failures"] == 3
    assert figures["R@5"] == 50.0
    assert figures["R@10"] == 75.0
    assert figures["R@N"] == 100.0
    assert figures["MRR@5"] == pytest.approx((1 + 1 / 2) / 4)
    assert figures["MRR@10"] == pytest.approx((1 + 1 / 2 + 1 / 6) / 4)
    assert figures["MRR@N"] == pytest.approx((1 + 1 / 2 + 1 / 6 + 1 / 11) / 4)
    assert figures["median_rank"] == 4.0


def test_figures_without_queries_have_no_values():
    figures = ranking_figures(np.array([], np.int64), 5)
    assert figures["failures"] == 0
    assert figures["R@5"] is None and figures["MRR@N"] is None and figures["median_rank"] is None


def test_bad_shapes_are_named():
    captions = _unit([[1, 0], [0, 1]])
    with pytest.raises(ValueError, match="caption_image"):
        build_corpora(captions, np.array([0]), 1)
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        build_corpora(captions, np.array([0, 1]), 1)


# --- against brute force ------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_images=st.integers(2, 7),
    n_captions=st.integers(2, 25),
    dims=st.integers(2, 6),
    block=st.integers(1, 8),
)
def test_blocked_ranking_matches_brute_force(seed, n_images, n_captions, dims, block):
    rng = np.random.default_rng(seed)
    captions = _unit(rng.normal(size=(n_captions, dims)))
    caption_image = rng.integers(0, n_images, n_captions)
    ranking = rank_queries(captions, caption_image, build_corpora(captions, caption_image, n_images), block=block)
    queries, ranks, firsts = brute_force(captions, caption_image, n_images)
    assert ranking.queries.tolist() == queries.tolist()
    assert ranking.rank.tolist() == ranks.tolist()
    assert ranking.first.tolist() == firsts.tolist()
    assert ranking.unanswerable == n_captions - queries.size
