"""bench-phase2-cxc's figures (benchmarks/_phase2_cxc_data.py) on rows small enough to
count by hand. No database."""

import sys

from tests.conftest import REPO_DIR

sys.path.insert(0, str(REPO_DIR / "benchmarks"))
import _phase2_cxc_data as data

SITS = [
    {"caption": "c1", "image": "i1", "sampling_method": "c2i_original"},
    {"caption": "c2", "image": "i2", "sampling_method": "c2i_original"},
    {"caption": "c3", "image": "i2", "sampling_method": "c2i_original"},
    {"caption": "c4", "image": "i3", "sampling_method": "c2i_original"},
    {"caption": "c2", "image": "i1", "sampling_method": "c2i_intrasim"},
    {"caption": "c3", "image": "i3", "sampling_method": "c2i_intrasim"},
    {"caption": "c4", "image": "i1", "sampling_method": "c2i_intrasim"},
]
IMAGE_OF = data.caption_images(SITS)


def test_overlap_counts_exact_pairs_and_ordered_image_pairs():
    release = data.intrasim_rows(SITS)
    assert release == [("c2", "i1"), ("c3", "i3"), ("c4", "i1")]
    # (c3, i1) is (i2, i1) like the release's (c2, i1): one image pair, not exact; (c1, i2)
    # is (i1, i2), the reverse of it: no match; (c4, i1) is exact.
    figures = data.overlap([("c3", "i1"), ("c1", "i2"), ("c4", "i1")], release, IMAGE_OF)
    assert figures == {
        "pairs": 3,
        "exact_overlap": 1,
        "image_level_overlap": 2,
        "release_image_pairs": 3,
        "image_level_reach": round(2 / 3, 4),
    }


def test_first_scores_keep_the_first_row_of_a_pair_in_either_order():
    rows = [
        {"image1": "i2", "image2": "i1", "agg_score": "4.5"},
        {"image1": "i1", "image2": "i2", "agg_score": "1.0"},
        {"image1": "i1", "image2": "i3", "agg_score": "2.0"},
    ]
    assert data.first_scores(rows, ("image1", "image2")) == {("i1", "i2"): 4.5, ("i1", "i3"): 2.0}


def test_release_rows_are_told_by_the_pivot_kind_that_gives_them():
    sts = [{"caption1": "c1", "caption2": "c2"}, {"caption1": "c2", "caption2": "c3"}]  # (i2, i1); co-captions
    sis = [{"image1": "i1", "image2": "i2"}, {"image1": "i3", "image2": "i2"}, {"image1": "i1", "image2": "i3"}]
    pivots = data.pivot_image_pairs(sts, sis, IMAGE_OF)
    assert pivots == {"sts": {("i2", "i1")}, "sis": {("i2", "i1"), ("i2", "i3"), ("i3", "i1")}}
    counts = data.release_by_pivot_kind([*data.intrasim_rows(SITS), ("c1", "i3")], IMAGE_OF, pivots)
    assert counts == {"sts_only": 0, "sis_only": 2, "both": 1, "neither": 1}
