"""Each sampling method on arrays small enough to check by hand. No database."""

import numpy as np
import pytest

from sampling.methods import strategies
from sampling.methods.pair_arrays import BudgetError, CaptionGroups
from sampling.methods.strategies import (
    Pivots,
    SplitArrays,
    c2c_cocaption,
    c2c_isim,
    c2i_intrasim,
    c2i_original,
    i2i_csim,
    mean_caption_vectors,
    sample_split,
)
from sampling.search.index import IndexConfig
from sampling.search.neighbours import nearest_neighbours

EXACT = IndexConfig(kind="exact")


def unit_circle(degrees):
    radians = np.deg2rad(np.asarray(degrees, dtype=np.float64))
    return np.stack([np.cos(radians), np.sin(radians)], axis=1).astype(np.float32)


def as_set(pairs):
    return {tuple(int(v) for v in row) for row in pairs}


def rng(seed=0):
    return np.random.default_rng(seed)


# Four images with two captions each (caption rows 0-7, image of caption = row // 2).
CAPTION_IMAGE = np.array([0, 0, 1, 1, 2, 2, 3, 3])
GROUPS = CaptionGroups.build(CAPTION_IMAGE, 4)
# Caption space A puts the captions of images 0 and 1 close (means at 5 and 25 degrees)
# and those of 2 and 3 close (175, 195); space B pairs 0 with 2 and 1 with 3.
SPACE_A = unit_circle([0, 10, 20, 30, 170, 180, 190, 200])
SPACE_B = unit_circle([0, 10, 170, 180, 20, 30, 190, 200])
# The image space disagrees with both: images 0 and 3 look alike, and 1 and 2.
IMAGE_SPACE = unit_circle([0, 90, 100, 10])


def test_caption_groups_list_each_images_captions():
    groups = CaptionGroups.build(np.array([2, 0, 2, 1, 0]), 4)
    members = [groups.order[groups.starts[i] : groups.starts[i + 1]].tolist() for i in range(4)]
    assert members == [[1, 4], [3], [0, 2], []]


def test_mean_caption_vectors_are_the_normalized_mean_of_each_group():
    means = mean_caption_vectors(SPACE_A, GROUPS, chunk_images=3)
    assert np.allclose(means, unit_circle([5, 25, 175, 195]), atol=1e-6)


def test_mean_caption_vectors_refuse_an_image_without_captions():
    with pytest.raises(ValueError, match="image row 2 has no caption"):
        mean_caption_vectors(SPACE_A[:4], CaptionGroups.build(np.array([0, 0, 1, 1]), 3))


def test_i2i_csim_pairs_images_through_their_co_captions_union_over_spaces():
    per_space = [nearest_neighbours(mean_caption_vectors(space, GROUPS), 1, EXACT)[0] for space in (SPACE_A, SPACE_B)]
    assert as_set(i2i_csim(per_space[:1], budget=None, rng=rng())) == {(0, 1), (2, 3)}
    pairs = i2i_csim(per_space, budget=None, rng=rng())
    assert pairs.tolist() == [[0, 1], [0, 2], [1, 3], [2, 3]]


def test_i2i_csim_budget_picks_a_subset_and_never_a_queued_pair():
    neighbours = [np.array([[1, 2], [0, 3], [0, 3], [1, 2]])]  # pairs (0,1) (0,2) (1,3) (2,3)
    pairs = i2i_csim(neighbours, budget=2, rng=rng(), queued=np.array([[0, 1]]))
    assert len(pairs) == 2
    assert as_set(pairs) <= {(0, 2), (1, 3), (2, 3)}
    assert i2i_csim(neighbours, budget=3, rng=rng(), queued=np.array([[0, 1]])).tolist() == [[0, 2], [1, 3], [2, 3]]
    with pytest.raises(BudgetError, match="i2i_csim: budget 4 is more than the 3 fresh image pairs"):
        i2i_csim(neighbours, budget=4, rng=rng(), queued=np.array([[0, 1]]))


def test_i2i_csim_never_pairs_an_image_with_itself_and_counts_a_pair_once():
    # Row 0 lists itself (a duplicate vector can do that) and 1 twice; 1 lists 0 back.
    neighbours = [np.array([[0, 1, 1], [0, -1, -1], [1, 0, -1]])]
    assert i2i_csim(neighbours, budget=None, rng=rng()).tolist() == [[0, 1], [0, 2], [1, 2]]


def test_c2c_isim_pairs_one_caption_of_each_neighbouring_image():
    # One caption per image: caption 0 is image 2's, caption 1 image 0's, and so on.
    caption_image = np.array([2, 0, 3, 1])
    groups = CaptionGroups.build(caption_image, 4)
    neighbours = [nearest_neighbours(unit_circle([0, 10, 100, 110]), 1, EXACT)[0]]
    # Image pairs (0,1) and (2,3) become caption pairs (1,3) and (0,2).
    assert c2c_isim(neighbours, groups, budget=None, rng=rng()).tolist() == [[0, 2], [1, 3]]


def test_c2c_isim_draws_a_random_caption_from_each_group():
    neighbours = [nearest_neighbours(IMAGE_SPACE, 1, EXACT)[0]]  # image pairs (0,3) and (1,2)
    pairs = c2c_isim(neighbours, GROUPS, budget=None, rng=rng(7))
    assert len(pairs) == 2
    images = {tuple(sorted(int(CAPTION_IMAGE[c]) for c in pair)) for pair in pairs}
    assert images == {(0, 3), (1, 2)}
    draws = {tuple(map(tuple, c2c_isim(neighbours, GROUPS, budget=None, rng=rng(seed)))) for seed in range(40)}
    assert len(draws) > 1
    assert np.array_equal(pairs, c2c_isim(neighbours, GROUPS, budget=None, rng=rng(7)))


def test_c2c_isim_budget_and_queue():
    neighbours = [np.array([[1], [2], [3], [0]])]  # image pairs (0,1) (1,2) (2,3) (0,3)
    one_each = CaptionGroups.build(np.arange(4), 4)
    assert c2c_isim(neighbours, one_each, budget=None, rng=rng(), queued=np.array([[1, 2]])).tolist() == [
        [0, 1],
        [0, 3],
        [2, 3],
    ]
    assert len(c2c_isim(neighbours, one_each, budget=2, rng=rng())) == 2
    with pytest.raises(BudgetError, match="c2c_isim: budget 5 is more than the 4"):
        c2c_isim(neighbours, one_each, budget=5, rng=rng())


def test_c2c_cocaption_takes_every_pair_within_a_group():
    groups = CaptionGroups.build(np.array([0, 0, 0, 1, 1, 2]), 3)
    assert c2c_cocaption(groups, budget=None, rng=rng()).tolist() == [[0, 1], [0, 2], [1, 2], [3, 4]]


def test_c2c_cocaption_cycles_through_each_group_so_every_caption_is_in_two_pairs():
    # 50 images of five captions (the CxC shape) and groups of 4, 6 and 2 captions.
    sizes = [5] * 50 + [4, 6, 2]
    caption_image = np.repeat(np.arange(len(sizes)), sizes)
    groups = CaptionGroups.build(caption_image, len(sizes))
    pairs = c2c_cocaption(groups, budget=None, rng=rng())
    assert len(pairs) == 5 * 50 + 4 + 6 + 1  # CxC: five pairs per five-caption image
    assert (caption_image[pairs[:, 0]] == caption_image[pairs[:, 1]]).all()
    assert (pairs[:, 0] < pairs[:, 1]).all() and len(as_set(pairs)) == len(pairs)
    appearances = np.bincount(pairs.ravel(), minlength=len(caption_image))
    in_pair_groups = caption_image < 52
    assert (appearances[in_pair_groups] == 2).all()
    assert (appearances[~in_pair_groups] == 1).all()  # the group of two has its one pair
    # Seeded: the same generator seed gives the same cycles; another seed other ones.
    assert c2c_cocaption(groups, budget=None, rng=rng()).tolist() == pairs.tolist()
    assert c2c_cocaption(groups, budget=None, rng=rng(1)).tolist() != pairs.tolist()
    everything = c2c_cocaption(groups, budget=None, rng=rng(), mode="all")
    assert len(everything) == 10 * 50 + 6 + 15 + 1
    with pytest.raises(ValueError, match="cycle or all, got 'some'"):
        c2c_cocaption(groups, budget=None, rng=rng(), mode="some")


def test_c2c_cocaption_budget_spreads_over_images():
    groups = CaptionGroups.build(np.array([0, 0, 0, 1, 1, 2]), 3)
    for seed in range(10):
        pairs = as_set(c2c_cocaption(groups, budget=2, rng=rng(seed)))
        assert (3, 4) in pairs
        assert len(pairs & {(0, 1), (0, 2), (1, 2)}) == 1
    queued = np.array([[3, 4]])
    assert len(as_set(c2c_cocaption(groups, budget=2, rng=rng(), queued=queued)) & {(0, 1), (0, 2), (1, 2)}) == 2
    with pytest.raises(BudgetError, match="c2c_cocaption: budget 4 is more than the 3 fresh co-caption pairs"):
        c2c_cocaption(groups, budget=4, rng=rng(), queued=queued)


def test_c2i_original_takes_every_caption_with_its_own_image():
    assert c2i_original(np.array([0, 0, 1]), budget=None, rng=rng()).tolist() == [[0, 0], [1, 0], [2, 1]]
    for seed in range(10):
        pairs = as_set(c2i_original(np.array([0, 0, 1]), budget=2, rng=rng(seed)))
        assert (2, 1) in pairs
        assert len(pairs & {(0, 0), (1, 0)}) == 1
    assert c2i_original(np.array([0, 0, 1]), budget=None, rng=rng(), queued=np.array([[1, 0]])).tolist() == [
        [0, 0],
        [2, 1],
    ]


# c2i_intrasim: images 0-4; captions 0, 1, 2 are image 0's, 1's and 2's only captions,
# captions 3 and 4 image 3's, captions 5, 6 and 7 image 4's.
INTRA_CAPTION_IMAGE = np.array([0, 1, 2, 3, 3, 4, 4, 4])
INTRA_GROUPS = CaptionGroups.build(INTRA_CAPTION_IMAGE, 5)
# A pivot (a, b) gives (a caption of b's image, the image of a):
# STS (0, 1) 5.0 -> (1, 0); (3, 4) 4.8 co-captions -> (3 or 4, 3), an original pair;
#     (2, 0) 4.0 -> (0, 2); (1, 2) 1.0 -> (2, 1).
# SIS (0, 1) 4.5 -> (1, 0), which the STS half took; (2, 1) 3.0 -> (1, 2);
#     (2, 0) 2.0 -> (0, 2), taken too; (1, 3) 0.5 -> (3 or 4, 1).
INTRA_PIVOTS = Pivots(
    sts=np.array([[0, 1], [3, 4], [2, 0], [1, 2]]),
    sts_scores=np.array([5.0, 4.8, 4.0, 1.0]),
    sis=np.array([[0, 1], [2, 1], [2, 0], [1, 3]]),
    sis_scores=np.array([4.5, 3.0, 2.0, 0.5]),
)


def intrasim(budget, queued=None, pivots=INTRA_PIVOTS, seed=0):
    return c2i_intrasim(pivots, INTRA_CAPTION_IMAGE, INTRA_GROUPS, budget=budget, rng=rng(seed), queued=queued)


def intrasim_pairs(budget, **kwargs):
    return intrasim(budget, **kwargs).pairs.tolist()


def test_c2i_intrasim_makes_one_pair_per_pivot_in_the_papers_direction():
    one_each = Pivots(sts=np.array([[0, 2]]), sts_scores=np.array([3.0]), sis=np.array([[1, 0]]), sis_scores=[2.0])
    # STS (c0, c2): c2's image's caption with c0's image; SIS (i1, i0): i0's caption with i1.
    assert intrasim_pairs(None, pivots=one_each) == [[2, 0], [0, 1]]
    reversed_order = Pivots(sts=np.array([[2, 0]]), sts_scores=[3.0], sis=np.array([[0, 1]]), sis_scores=[2.0])
    assert intrasim_pairs(None, pivots=reversed_order) == [[0, 2], [1, 0]]


def test_c2i_intrasim_draws_the_caption_of_bs_image_with_the_seed():
    pivots = Pivots(sts=np.array([[0, 5]]), sts_scores=[4.0], sis=np.array([[1, 4]]), sis_scores=[4.0])
    drawn = [intrasim_pairs(None, pivots=pivots, seed=seed) for seed in range(300)]
    for pairs in drawn:
        # Any caption of the second item's image, the pivot's own caption 5 included.
        assert pairs[0][0] in (5, 6, 7) and pairs[0][1] == 0
        assert pairs[1][0] in (5, 6, 7) and pairs[1][1] == 1
    for position in (0, 1):
        counts = np.bincount([pairs[position][0] for pairs in drawn], minlength=8)[5:]
        assert counts.min() > 60, counts
    assert intrasim_pairs(None, pivots=pivots, seed=7) == drawn[7]


def test_c2i_intrasim_takes_half_from_each_side_by_decreasing_score():
    assert intrasim_pairs(4)[:3] == [[1, 0], [0, 2], [1, 2]]
    assert intrasim_pairs(4)[3] in ([3, 1], [4, 1])
    assert intrasim_pairs(3) == [[1, 0], [0, 2], [1, 2]]  # the odd one from the STS half
    assert intrasim_pairs(2) == [[1, 0], [1, 2]]
    assert intrasim_pairs(5)[:4] == [[1, 0], [0, 2], [2, 1], [1, 2]]


def test_c2i_intrasim_reports_the_rule_and_each_skip():
    report = intrasim(4).report
    assert report["rule"] == "one_per_pivot"
    assert {"direction", "order", "halves"} <= set(report)
    assert report["sts"] == {
        "pivots": 4,
        "skipped_original": 1,
        "skipped_queued": 0,
        "skipped_repeat": 0,
        "skipped_taken_by_sis": 0,
        "taken": 2,
        "lowest_score_taken": 4.0,
    }
    assert report["sis"] == {
        "pivots": 4,
        "skipped_original": 0,
        "skipped_queued": 0,
        "skipped_repeat": 0,
        "skipped_taken_by_sts": 2,
        "taken": 2,
        "lowest_score_taken": 0.5,
    }
    queued = intrasim(3, queued=np.array([[1, 2], [0, 2]]))
    assert queued.pairs.tolist() == [[1, 0], [2, 1], queued.pairs.tolist()[2]]
    assert queued.report["sts"]["skipped_queued"] == 1 and queued.report["sis"]["skipped_queued"] == 2
    assert queued.report["sis"]["skipped_taken_by_sts"] == 1


def test_c2i_intrasim_counts_repeats_within_a_half():
    # STS (1, 3) and (1, 4): both give (a caption of image 3, image 1); equal when the draws are.
    pivots = Pivots(sts=np.array([[1, 3], [1, 4]]), sts_scores=[2.0, 1.0])
    outcomes = set()
    for seed in range(20):
        chosen = intrasim(None, pivots=pivots, seed=seed)
        repeats = chosen.report["sts"]["skipped_repeat"]
        assert len(chosen.pairs) == 2 - repeats
        assert len(as_set(chosen.pairs)) == len(chosen.pairs)
        outcomes.add(repeats)
    assert outcomes == {0, 1}


def test_c2i_intrasim_fills_from_the_other_side_when_one_runs_short():
    # The SIS half has one fresh pair left: the STS half gives the fourth.
    short_sis = intrasim_pairs(4, queued=np.array([[1, 2]]))
    assert short_sis[:3] == [[1, 0], [0, 2], [2, 1]] and short_sis[3] in ([3, 1], [4, 1])
    only_sis = Pivots(sis=np.array([[0, 1], [2, 1]]), sis_scores=[1.0, 3.0])
    assert intrasim_pairs(2, pivots=only_sis) == [[1, 2], [1, 0]]


def test_c2i_intrasim_counts_only_the_spare_pairs_the_sis_half_took_before_the_last_one_used():
    # One caption per image (caption i is image i's), so every pivot (a, b) gives (b, a).
    # STS by score: (1, 0), (2, 0), (3, 0) fill its half of 6; the SIS half has only
    # P = (5, 4) and Q = (7, 4), one short; the spares are P, F = (6, 4), Q: F is used,
    # P was passed over (taken by SIS), Q lies after the last spare used and is not counted.
    one_each = np.arange(10)
    pivots = Pivots(
        sts=np.array([[0, 1], [0, 2], [0, 3], [4, 5], [4, 6], [4, 7]]),
        sts_scores=np.array([9.0, 8.0, 7.0, 6.0, 5.0, 4.0]),
        sis=np.array([[4, 5], [4, 7]]),
        sis_scores=np.array([2.0, 1.0]),
    )
    chosen = c2i_intrasim(pivots, one_each, CaptionGroups.build(one_each, 10), budget=6, rng=rng())
    assert chosen.pairs.tolist() == [[1, 0], [2, 0], [3, 0], [6, 4], [5, 4], [7, 4]]
    assert chosen.report["sts"]["skipped_taken_by_sis"] == 1
    assert chosen.report["sts"]["taken"] == 4 and chosen.report["sis"]["taken"] == 2


def test_c2i_intrasim_breaks_equal_scores_in_a_seeded_order():
    tied = Pivots(sis=np.array([[0, 1], [2, 1], [3, 2]]), sis_scores=[3.0, 3.0, 4.0])
    orders = {tuple(map(tuple, intrasim_pairs(None, pivots=tied, seed=seed))) for seed in range(20)}
    assert orders == {((2, 3), (1, 0), (1, 2)), ((2, 3), (1, 2), (1, 0))}
    assert intrasim_pairs(None, pivots=tied, seed=3) == intrasim_pairs(None, pivots=tied, seed=3)


def test_c2i_intrasim_refuses_a_budget_the_pivots_cannot_give():
    assert len(intrasim_pairs(None)) == 5
    with pytest.raises(BudgetError, match=r"c2i_intrasim: budget 6 is more than the 5 .* from 8 pivots"):
        intrasim(6)
    assert intrasim_pairs(None, pivots=Pivots()) == []


def split_arrays(seed=0, n_images=60, captions_per_image=3, d=8):
    generator = np.random.default_rng(seed)

    def unit(x):
        return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)

    caption_image = np.repeat(np.arange(n_images), captions_per_image)
    return SplitArrays(
        n_images=n_images,
        caption_image=caption_image,
        image_spaces={"img": unit(generator.standard_normal((n_images, d)))},
        caption_spaces={
            "txt-a": unit(generator.standard_normal((len(caption_image), d))),
            "txt-b": unit(generator.standard_normal((len(caption_image), d))),
        },
    )


def test_sample_split_searches_the_other_modality_for_each_method():
    data = SplitArrays(
        n_images=4,
        caption_image=CAPTION_IMAGE,
        image_spaces={"img": IMAGE_SPACE},
        caption_spaces={"a": SPACE_A},
    )
    steps = []
    result = sample_split(
        data, {"i2i_csim": None, "c2c_isim": None, "c2c_cocaption": None}, k=1, seed=3, index=EXACT, step=steps.append
    )
    assert result.pairs["i2i_csim"].tolist() == [[0, 1], [2, 3]]
    images = {tuple(sorted(int(CAPTION_IMAGE[c]) for c in pair)) for pair in result.pairs["c2c_isim"]}
    assert images == {(0, 3), (1, 2)}
    assert result.pairs["c2c_cocaption"].tolist() == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert result.index_kinds == {"a": "exact", "img": "exact"}
    assert result.search_seconds > 0
    assert steps[0] == "searching caption space a"
    assert "searching image space img" in steps


def test_same_seed_same_pairs_and_methods_do_not_disturb_each_other():
    data = split_arrays()
    methods = {"i2i_csim": 100, "c2c_isim": 80, "c2c_cocaption": 50, "c2i_original": 40}
    first = sample_split(data, methods, k=3, seed=11, index=EXACT)
    second = sample_split(data, methods, k=3, seed=11, index=EXACT)
    for method in methods:
        assert np.array_equal(first.pairs[method], second.pairs[method])
        assert len(first.pairs[method]) == methods[method]
    other_seed = sample_split(data, methods, k=3, seed=12, index=EXACT)
    assert not np.array_equal(first.pairs["c2c_isim"], other_seed.pairs["c2c_isim"])
    alone = sample_split(data, {"c2c_isim": 80}, k=3, seed=11, index=EXACT)
    assert np.array_equal(alone.pairs["c2c_isim"], first.pairs["c2c_isim"])


def test_sample_split_uses_each_methods_queue():
    data = split_arrays()
    full = sample_split(data, {"i2i_csim": None}, k=3, seed=0, index=EXACT).pairs["i2i_csim"]
    data.queued = {"i2i_csim": full[:10]}
    rest = sample_split(data, {"i2i_csim": None}, k=3, seed=0, index=EXACT).pairs["i2i_csim"]
    assert as_set(rest) == as_set(full[10:])


@pytest.mark.parametrize(
    ("methods", "k", "seed", "message"),
    [
        ({"x2y": None}, 5, 0, "unknown sampling method"),
        ({"i2i_csim": None}, 0, 0, "k must be at least 1"),
        ({"i2i_csim": None}, 5, -1, "seed must be 0 or positive"),
    ],
)
def test_sample_split_refuses_bad_arguments(methods, k, seed, message):
    with pytest.raises(ValueError, match=message):
        sample_split(split_arrays(), methods, k=k, seed=seed)


def test_sample_split_needs_a_space_of_the_searched_modality():
    data = split_arrays()
    data.image_spaces = {}
    with pytest.raises(ValueError, match="no image embedding space"):
        sample_split(data, {"c2c_isim": None}, k=3, seed=0)


def test_method_names_are_the_released_ones():
    from annotation.models import METHOD_KIND
    from sampling.methods.model_topk import DIRECTION_METHOD

    # The CxC release's five names, and the audit's one per direction.
    assert set(strategies.METHODS) | set(DIRECTION_METHOD.values()) == {str(method) for method in METHOD_KIND}
    assert not set(strategies.METHODS) & set(DIRECTION_METHOD.values())


# For the fill-in: STS pivots give (1, 0) 5.0, (0, 2) 4.0, (1, 2) 3.0, (2, 1) 2.0, (2, 0) 1.0.
FILL_STS = {"sts": np.array([[0, 1], [2, 0], [2, 1], [1, 2], [0, 2]]), "sts_scores": [5.0, 4.0, 3.0, 2.0, 1.0]}


def test_the_sts_half_fills_in_without_the_pairs_the_sis_half_took():
    # The SIS half has one pair, (1, 2), which the STS half's spare pairs must not repeat.
    one_sis = Pivots(**FILL_STS, sis=np.array([[2, 1]]), sis_scores=[4.5])
    filled = intrasim(4, pivots=one_sis)
    assert filled.pairs.tolist() == [[1, 0], [0, 2], [2, 1], [1, 2]]
    assert filled.report["sts"]["skipped_taken_by_sis"] == 1  # its (1, 2), passed for (2, 1)
    # The SIS half has nothing fresh (its pair is the STS half's first): two spares, in order.
    no_sis = Pivots(**FILL_STS, sis=np.array([[0, 1]]), sis_scores=[4.5])
    chosen = intrasim(4, pivots=no_sis)
    assert chosen.pairs.tolist() == [[1, 0], [0, 2], [1, 2], [2, 1]]
    assert (chosen.report["sts"]["taken"], chosen.report["sis"]["taken"]) == (4, 0)
    assert chosen.report["sis"]["skipped_taken_by_sts"] == 1
    assert chosen.report["sts"]["skipped_taken_by_sis"] == 0


def test_the_lowest_score_taken_is_rounded_to_four_places():
    report = intrasim(None, pivots=Pivots(sis=np.array([[0, 1]]), sis_scores=[1 / 3])).report
    assert report["sis"]["lowest_score_taken"] == 0.3333
