"""First-correct ranks and recall (annotation/evaluation/ranks.py): pure numpy, no database."""

import numpy as np
import pytest

from annotation.evaluation.ranked import first_correct_ranks
from annotation.evaluation.ranks import Positives, retrieval_summary

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
