"""The intervals of the figures that carry uncertainty beyond the means over queries: the
CxC correlation (the central 95% of its half-samples), the calibration's Spearman
(Fisher's z) and PR-AUC (the logit interval); and why a figure has no value.
Pure numpy, no database."""

import math

import numpy as np
import pytest

from annotation.evaluation.calibration import average_precision, global_calibration
from annotation.evaluation.compare import comparison_rows
from annotation.evaluation.correlation import FIRST_COLUMN, bootstrap_rows, bootstrap_spearman, spearman
from annotation.evaluation.intervals import fisher_z_interval, logit_interval, percentile_interval
from annotation.evaluation.report import evaluate
from tests.support.evaluation_data import hand_items, hand_ratings, hand_spaces


def correlated(n: int, r: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """n draws of a bivariate normal with Pearson r (Spearman 6/pi asin(r/2))."""
    x = rng.standard_normal(n)
    y = r * x + math.sqrt(1 - r * r) * rng.standard_normal(n)
    return x, y


def test_the_correlation_interval_is_the_central_95_percent_of_its_samples():
    rng = np.random.default_rng(7)
    human, model = correlated(60, 0.5, rng)
    queries = np.arange(60)
    result = bootstrap_spearman(human, model, queries, samples=400, seed=3)
    rhos = np.concatenate(
        [spearman(human[drawn], model[drawn]) for drawn in bootstrap_rows(queries, samples=400, seed=3)]
    )
    assert result["ci"] == pytest.approx(list(100 * np.percentile(rhos, [2.5, 97.5])))
    low, high = result["ci"]
    assert -100 <= low < result["mean"] < high <= 100
    assert bootstrap_spearman(human, model, queries, samples=400, seed=3) == result, "repeatable"


def test_the_correlation_interval_covers_the_true_rho_about_95_times_in_100():
    """Half-samples are a delete-half jackknife: their spread is that of rho over all the
    queries, so the interval covers the population's Spearman at about its level."""
    r = 0.5
    true_rho = 100 * 6 / math.pi * math.asin(r / 2)
    rng = np.random.default_rng(11)
    covered = []
    for _ in range(200):
        human, model = correlated(200, r, rng)
        low, high = bootstrap_spearman(human, model, np.arange(200), samples=200, seed=1)["ci"]
        covered.append(low <= true_rho <= high)
    assert 0.90 <= np.mean(covered) <= 0.99, np.mean(covered)


def test_the_correlation_interval_narrows_as_one_over_the_root_of_the_queries():
    rng = np.random.default_rng(5)
    widths = {}
    for n in (200, 800):
        human, model = correlated(n, 0.5, rng)
        low, high = bootstrap_spearman(human, model, np.arange(n), samples=500, seed=0)["ci"]
        widths[n] = high - low
    assert widths[800] / widths[200] == pytest.approx(0.5, abs=0.15)


def test_an_undefined_correlation_has_no_interval():
    result = bootstrap_spearman(np.ones(8), np.arange(8.0), np.arange(8), samples=20)
    assert result["mean"] is None and result["ci"] is None and result["undefined_samples"] == 20


def test_fisher_z_interval_by_hand():
    # z = atanh(0.5) = 0.5493; se = sqrt(1.125 / 100) = 0.10607; 1.96 se = 0.2079.
    low, high = fisher_z_interval(0.5, 103)
    assert (low, high) == pytest.approx((math.tanh(0.5493 - 0.2079), math.tanh(0.5493 + 0.2079)), abs=1e-3)
    assert fisher_z_interval(0.5, 3) is None and fisher_z_interval(float("nan"), 50) is None
    assert fisher_z_interval(1.0, 10) == [1.0, 1.0]
    with pytest.raises(ValueError, match="between 0 and 1"):
        fisher_z_interval(0.5, 10, level=95)


def test_percentile_interval():
    assert percentile_interval(np.arange(101.0)) == pytest.approx([2.5, 97.5])
    assert percentile_interval(np.array([])) is None
    with pytest.raises(ValueError, match="between 0 and 1"):
        percentile_interval(np.arange(3.0), level=1.0)


def test_a_logit_interval_at_the_edge_by_a_rounding_error_is_none_and_near_it_stays_in_range():
    # An average precision summed to one ulp under 1 over 17 positives overflowed exp().
    assert logit_interval(0.9999999999999999, 17) is None and logit_interval(1e-13, 17) is None
    for value in (1e-9, 1 - 1e-9):  # a few positives near the edge: wide, in range, no overflow
        low, high = logit_interval(value, 3)
        assert 0.0 <= low < value < high <= 1.0


def test_logit_interval_by_hand():
    # logit(0.8) = ln 4 = 1.3863; 1 / sqrt(100 * 0.8 * 0.2) = 0.25; 1.96 * 0.25 = 0.49.
    low, high = logit_interval(0.8, 100)
    expit = lambda x: 1 / (1 + math.exp(-x))  # noqa: E731
    assert (low, high) == pytest.approx((expit(1.3863 - 0.49), expit(1.3863 + 0.49)), abs=1e-3)
    assert logit_interval(1.0, 10) is None and logit_interval(0.5, 0) is None


def test_calibration_carries_intervals_that_hold_its_figures():
    rng = np.random.default_rng(2)
    human = rng.uniform(0, 5, 300)
    similarity = human + rng.normal(0, 2, 300)
    entry = global_calibration(similarity, human, 3.0)
    ap = average_precision(similarity, human >= 3)
    assert entry["pr_auc_ci"] == pytest.approx([100 * bound for bound in logit_interval(ap, entry["positives"])])
    low, high = entry["pr_auc_ci"]
    assert low < entry["pr_auc"] < high
    rho_low, rho_high = entry["spearman_ci"]
    assert rho_low < entry["spearman"] < rho_high
    rho = spearman(human, similarity)
    assert entry["spearman_ci"] == pytest.approx([100 * bound for bound in fisher_z_interval(rho, 300)])
    perfect = global_calibration(human, human, 3.0)
    assert perfect["pr_auc"] == pytest.approx(100.0) and perfect["pr_auc_ci"] is None, "no logit interval at 1"


def test_every_figure_without_a_value_says_why():
    top_k = {
        "k": 10,
        "queries": 12,
        "retrieved": 120,
        "judged": 7,
        "unrated": 113,
        "precision_judged": 42.0,
        "queries_fully_judged": 0,
        "P@10": None,
        "judged_by": ["audited"],
    }
    calibration = {"pairs": 5, "positives": 0, "positive_share": 0.0, "pr_auc": None, "spearman": None}
    report = {
        "own_top_k": {"text_to_text": top_k},
        "calibration": {"audited": {"SIS": calibration | {"positive_at": 2.5}}},
        "retrieval": {"text_to_text": {"cxc": {"queries": 0, "candidates": 59, **dict.fromkeys(RANKED_KEYS)}}},
    }
    rows = {(row["section"], row["metric"]): row["models"]["m"] for row in comparison_rows({"m": report})}
    assert rows[("own_top_k", "P@10")]["unavailable"] == (
        "none of the 12 queries has all 10 retrieved items rated (7 of 120 retrieved items rated)"
    )
    assert "unavailable" not in rows[("own_top_k", "precision_judged")]
    assert rows[("calibration", "pr_auc")]["unavailable"] == (
        "none of the 5 rated pairs is a positive (a mean score of 2.5 or more)"
    )
    assert rows[("calibration", "spearman")]["unavailable"] == (
        "the human or the model scores are constant over the 5 rated pairs"
    )
    assert rows[("retrieval", "R@1")]["unavailable"] == "no query has a positive among its 59 candidates"


RANKED_KEYS = ("R@1", "R@5", "R@10", "median_rank", "R-Precision", "mAP@R")


def test_the_report_carries_the_correlation_interval_and_why_it_is_not_coco_5k():
    images, captions = hand_spaces()
    report = evaluate(
        items=hand_items(),
        ratings=hand_ratings(),
        image_space=images,
        caption_space=captions,
        joint=True,
        queries=FIRST_COLUMN,
        samples=200,
    )
    row = next(r for r in comparison_rows({"m": report}) if r["metric"] == "spearman_mean")
    assert row["models"]["m"]["ci"] == report["correlation"]["SITS"]["ci"] is not None
    assert report["skipped"]["coco_5k"] == (
        "COCO 5K needs the 5,000-image test split; this split has 3 images "
        "(its image <-> text figures with the original pairs are over those 3)"
    )
    assert report["skipped"]["coco_1k"] == "COCO 1K needs at least 1000 images; the split has 3"
    unimodal = evaluate(
        items=hand_items(), ratings=hand_ratings(), image_space=images, caption_space=captions, joint=False, samples=20
    )
    assert unimodal["skipped"]["coco_5k"] == "unimodal spaces: no image-caption similarity"
