"""Sampling method model_topk on hand-built vectors: a model's own top-k as pairs, query first,
several models pooled, queued pairs left out, the budget keeping the best ranks. No database."""

import numpy as np
import pytest

from sampling.methods.model_topk import AuditedModel, model_topk, query_sample
from sampling.methods.pair_arrays import BudgetError


def unit(rows):
    rows = np.asarray(rows, np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


# Three images on the axes of a plane, four captions: caption c is nearest image c (c < 3),
# caption 3 lies between images 0 and 1, nearer 1.
IMAGES = unit([[1, 0, 0], [0, 1, 0], [0, 0, 1]])
CAPTIONS = unit([[1, 0.1, 0], [0.1, 1, 0], [0, 0.1, 1], [0.5, 1, 0]])
GOOD = AuditedModel("good", image=IMAGES, caption=CAPTIONS)
ALL = {d: np.arange(n) for d, n in (("c2i", 4), ("i2c", 3), ("c2c", 4), ("i2i", 3))}


def run(models, directions, *, k=1, budget=None, queued=None, seed=0):
    return model_topk(
        models,
        directions,
        k=k,
        queries={d: ALL.get(d, np.arange(3)) for d in directions},
        budget=budget,
        rng=np.random.default_rng(seed),
        queued=queued or {},
    )


def test_caption_to_image_top_1_pairs_each_caption_with_its_nearest_image():
    out = run([GOOD], ["c2i"])
    assert out["c2i"].pairs.tolist() == [[0, 0], [1, 1], [2, 2], [3, 1]]
    # (pair, model, direction, rank): every pair retrieved once, at rank 1.
    assert out["c2i"].retrievals.tolist() == [[0, 0, 0, 1], [1, 0, 0, 1], [2, 0, 0, 1], [3, 0, 0, 1]]


def test_image_to_caption_pairs_are_stored_caption_first_and_shared_with_c2i():
    out = run([GOOD], ["c2i", "i2c"], k=1)
    # i2c's top-1: image 0 -> caption 0, image 1 -> caption 1 (0.995 beats caption 3's 0.894), image 2 -> 2.
    # All three are c2i pairs already: one pair each, with both retrievals recorded.
    assert out["i2c"].pairs.shape == (0, 2)
    records = sorted(map(tuple, out["c2i"].retrievals.tolist()))
    assert records == [(0, 0, 0, 1), (0, 0, 1, 1), (1, 0, 0, 1), (1, 0, 1, 1), (2, 0, 0, 1), (2, 0, 1, 1), (3, 0, 0, 1)]


def test_intramodal_pairs_are_query_first_and_never_self():
    out = run([GOOD], ["c2c"], k=1)
    # Caption 3's nearest caption is 1; caption 1's is 3; the pair is kept once, as first retrieved.
    pairs = out["c2c"].pairs.tolist()
    assert all(a != b for a, b in pairs)
    assert len({tuple(sorted(p)) for p in pairs}) == len(pairs)
    assert [1, 3] in pairs or [3, 1] in pairs
    # Four rank-1 retrievals; the pair both of whose captions retrieved the other is recorded once.
    assert len(out["c2c"].retrievals) == len(pairs) == 3


def test_two_models_pool_each_pair_once_with_every_model_recorded():
    # The second model sees caption 3 nearest image 0.
    other = AuditedModel("other", image=IMAGES, caption=unit([[1, 0.1, 0], [0.1, 1, 0], [0, 0.1, 1], [1, 0.5, 0]]))
    out = run([GOOD, other], ["c2i"])
    assert sorted(map(tuple, out["c2i"].pairs.tolist())) == [(0, 0), (1, 1), (2, 2), (3, 0), (3, 1)]
    retrieved_by = {}
    for pair, model, _, _ in out["c2i"].retrievals.tolist():
        retrieved_by.setdefault(tuple(out["c2i"].pairs[pair]), set()).add(model)
    assert retrieved_by[(0, 0)] == {0, 1} and retrieved_by[(3, 1)] == {0} and retrieved_by[(3, 0)] == {1}


def test_queued_pairs_are_left_out_and_the_budget_keeps_the_best_ranks():
    out = run([GOOD], ["c2i"], k=2, queued={"SITS": np.array([[0, 0]])})
    pairs = set(map(tuple, out["c2i"].pairs.tolist()))
    assert (0, 0) not in pairs and len(pairs) == 7
    best = run([GOOD], ["c2i"], k=2, budget=3, seed=4)
    ranks = [rank for _, _, _, rank in best["c2i"].retrievals.tolist()]
    assert len(best["c2i"].pairs) == 3 and ranks == [1, 1, 1]
    with pytest.raises(BudgetError, match="budget 9 is more than the 8 fresh pairs"):
        run([GOOD], ["c2i"], k=2, budget=9)


def test_same_seed_same_pairs_and_query_samples_are_sorted_draws():
    assert run([GOOD], ["c2i"], k=2, budget=5, seed=3)["c2i"].pairs.tolist() == (
        run([GOOD], ["c2i"], k=2, budget=5, seed=3)["c2i"].pairs.tolist()
    )
    rows = query_sample(100, 10, np.random.default_rng(1))
    assert rows.tolist() == sorted(set(rows.tolist())) and rows.size == 10
    assert query_sample(5, None, np.random.default_rng(1)).tolist() == [0, 1, 2, 3, 4]


def test_a_model_without_the_needed_vectors_and_unknown_directions_are_refused():
    with pytest.raises(ValueError, match="has no caption or image vectors for c2i"):
        run([AuditedModel("images only", image=IMAGES, caption=None)], ["c2i"])
    with pytest.raises(ValueError, match="directions are"):
        run([GOOD], ["x2y"])


def test_items_beyond_the_pair_key_space_are_refused(monkeypatch):
    import sampling.methods.model_topk as module

    monkeypatch.setattr(module, "KEY_SPAN", 4)
    with pytest.raises(ValueError, match="4 rows; an audit takes fewer than 4"):
        run([GOOD], ["c2c"])


def test_retrievals_of_queued_pairs_are_kept_apart_for_the_record():
    out = run([GOOD], ["c2i"], k=2, queued={"SITS": np.array([[0, 0], [3, 1]])})
    assert sorted(map(tuple, out["c2i"].known.tolist())) == [(0, 0, 0, 0, 1), (3, 1, 0, 0, 1)]
    assert not {(0, 0), (3, 1)} & set(map(tuple, out["c2i"].pairs.tolist()))
    # Intramodal: a queued pair reached from both of its items is one record, its best rank.
    both = run([GOOD], ["c2c"], k=1, queued={"STS": np.array([[1, 3]])})
    assert both["c2c"].known.tolist() == [[1, 3, 0, 0, 1]]
