"""Per-block export work on hand-made rating rows: pure, no database. Expected numbers
are worked out by hand in the comments."""

import math
import os
import subprocess
import sys

import numpy as np
import pytest

from annotation.export import ExportError
from annotation.export.blocks import ExportAgreement, ExportCounts, block_build, cut_blocks
from tests.conftest import REPO_DIR


def row(pair, rater, score, *, required=None, batch=7, method="c2c_isim", ms=1000):
    """A rating row as the export streams it (pair id, required, batch, method, keys, rater, score, ms)."""
    return (pair, required, batch, method, f"a{pair}", f"b{pair}", rater, score, ms)


def rows_of(pairs):
    """``{pair: [(rater, score), ...]}`` -> rows, each pair requiring the ratings it holds."""
    return [
        row(pair, rater, score, required=len(ratings)) for pair, ratings in pairs.items() for rater, score in ratings
    ]


def names(raters):
    return {rater: f"r{rater}" for rater in raters}


def test_cut_blocks_never_splits_a_pair():
    pair_ids = [1, 1, 1, 2, 2, 3, 4, 4, 4, 4, 5]
    rows = [(pair, index) for index, pair in enumerate(pair_ids)]
    blocks = list(cut_blocks(iter(rows), 4))
    # 4 rows end inside pair 2 -> [1,1,1]; the carry [2] + next 4 [2,3,4,4] ends inside
    # pair 4 -> [2,2,3]; the carry [4,4] + next 4 [4,4,5] is short: the rest.
    assert [[pair for pair, _ in block] for block in blocks] == [[1, 1, 1], [2, 2, 3], [4, 4, 4, 4, 5]]
    assert [r for block in blocks for r in block] == rows


def test_cut_blocks_keeps_a_pair_longer_than_a_block_whole():
    rows = [(1, i) for i in range(5)] + [(2, 5)]
    assert [len(block) for block in cut_blocks(iter(rows), 2)] == [5, 1]
    assert list(cut_blocks(iter([]), 3)) == []
    assert [len(block) for block in cut_blocks(iter([(1, 0), (2, 1)]), 2)] == [1, 1]


def test_block_build_aggregates_each_pair():
    rows = rows_of({10: [(1, 2.0), (2, 3.0), (3, 4.0)], 11: [(2, 5.0)], 12: [(1, 1.0), (3, 2.0)]})
    asked = []

    def rater_names(raters):
        asked.append(raters)
        return names(raters)

    rated = block_build(rows, task="STS", rater_names=rater_names)
    block = rated.block
    assert asked == [{1, 2, 3}]
    assert (block.item1, block.item2) == (["a10", "a11", "a12"], ["b10", "b11", "b12"])
    assert block.batch_id.tolist() == [7, 7, 7] and block.sampling_method == ["c2c_isim"] * 3
    assert block.pair_index.tolist() == [0, 0, 0, 1, 2, 2]
    assert block.rater_id == ["r1", "r2", "r3", "r2", "r1", "r3"]
    assert (block.pairs, block.ratings) == (3, 6)
    # Means 3.0, 5.0, 1.5; sample std 1.0, none (one rating), sqrt(0.5); STS positive at 3.
    assert block.stats.agg_score.tolist() == [3.0, 5.0, 1.5]
    assert block.stats.count.tolist() == [3, 1, 2]
    assert block.stats.std[0] == pytest.approx(1.0) and math.isnan(block.stats.std[1])
    assert block.stats.std[2] == pytest.approx(math.sqrt(0.5))
    assert block.stats.positive.tolist() == [True, True, False]
    assert rated.counts.tolist() == [3, 1, 2] and rated.raters.tolist() == [1, 2, 3, 2, 1, 3]
    assert rated.padded.shape == (3, 3) and np.isnan(rated.padded[1, 1:]).all()


def test_block_build_refuses_a_pair_with_missing_ratings():
    rows = [row(10, 1, 2.0, required=1), row(11, 1, 3.0, required=3), row(11, 2, 4.0, required=3)]
    with pytest.raises(ExportError, match="pair #11 is marked complete with 3 ratings but has 2"):
        block_build(rows, task="SIS", rater_names=names)


def test_counts_tally_per_split_task_method_and_batch():
    rows = [
        row(1, 1, 4.0, required=2, method="c2c_isim", batch=3),
        row(1, 2, 3.0, required=2, method="c2c_isim", batch=3),
        row(2, 1, 1.0, required=1, method="c2c_cocaption", batch=3),
        row(3, 2, 2.0, required=1, method="c2c_isim", batch=4),
    ]
    counts = ExportCounts()
    counts.add(split="val", task="STS", block=block_build(rows, task="STS", rater_names=names).block)
    # Scores 3.5 (positive), 1.0, 2.0.
    assert counts.by_method(split="val", task="STS") == {
        "c2c_cocaption": {"pairs": 1, "ratings": 1, "positive": 0, "mean_score": 1.0},
        "c2c_isim": {"pairs": 2, "ratings": 3, "positive": 1, "mean_score": 2.75},
    }
    assert counts.total(split="val", task="STS") == {"pairs": 3, "ratings": 4, "positive": 1, "mean_score": 6.5 / 3}
    assert counts.total(split="val", task="SIS") == {"pairs": 0, "ratings": 0, "positive": 0, "mean_score": None}
    assert counts.of_batch(4) == {"c2c_isim": {"pairs": 1, "ratings": 1, "positive": 0, "mean_score": 2.0}}
    assert counts.of_batch(3)["c2c_isim"] == {"pairs": 1, "ratings": 2, "positive": 1, "mean_score": 3.5}


def test_agreement_over_blocks_matches_hand_computed_alpha_and_rater_bias():
    # Two pairs, two raters each: (1, 2) and (3, 5). Pairable values 1,2,3,5: mean 2.75;
    # within-pair disagreement D_o = (2*1^2 + 2*2^2) / 4 = 2.5; all pairs of values
    # D_e = 2 * (sum of squared differences over the 6 pairs = 1+4+16+1+9+4=35) / (4*3) = 35/6;
    # alpha = 1 - D_o / D_e = 1 - 15/35 = 4/7.
    first = rows_of({1: [(1, 1.0), (2, 2.0)]})
    second = [row(2, 1, 3.0, required=2, batch=8), row(2, 2, 5.0, required=2, batch=8)]
    agreement = ExportAgreement()
    for rows in (first, second):
        agreement.add(task="STS", rated=block_build(rows, task="STS", rater_names=names))
    (by_task,) = agreement.by_task(["STS", "SIS"]).values()
    assert by_task["alpha_interval"] == pytest.approx(4 / 7) and by_task["units"] == 2 and by_task["values"] == 4
    # One pair per batch: a batch alone has no pairable disagreement to compare with.
    assert [(entry["batch_id"], entry["units"]) for entry in agreement.by_batch()] == [(7, 1), (8, 1)]
    rater_one, rater_two = agreement.raters(["STS"])["STS"]
    # Rater 1 scores 1 and 3 against the other's 2 and 5: bias (-1 - 2) / 2 = -1.5;
    # both move up together, so the leave-one-out correlation is 1.
    assert (rater_one.rater, rater_one.ratings, rater_one.compared) == (1, 2, 2)
    assert rater_one.mean_bias == pytest.approx(-1.5) and rater_two.mean_bias == pytest.approx(1.5)
    assert rater_one.loo_correlation == pytest.approx(1.0)
    assert rater_one.median_time_ms == 1000.0


def test_the_pure_export_modules_import_without_django():
    code = (
        "import sys; import annotation.export.blocks, annotation.export.writers, annotation.export.parquet; "
        "print(sorted(m for m in sys.modules if m == 'django' or m.startswith('django.')))"
    )
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_DIR, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
