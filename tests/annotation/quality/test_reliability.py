"""The reliability curve of the campaign page (annotation/quality/group_stats.py
split_half_reliability) and the noise flag (annotation/quality/flags.py). No database."""

from __future__ import annotations

import numpy as np
import pytest

from annotation.quality.aggregation import pad_ragged
from annotation.quality.flags import MIN_RATINGS, FlagThresholds, RaterFigures, flag_reasons
from annotation.quality.group_stats import RELIABILITY_UP_TO, split_half_reliability


def ratings(n_pairs: int, per_pair: int, noise_sd: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    latent = rng.normal(0, 1, n_pairs)
    scores = latent[:, None] + rng.normal(0, noise_sd, (n_pairs, per_pair))
    counts = np.full(n_pairs, per_pair)
    return pad_ragged(scores.ravel(), counts), counts


def test_halves_and_spearman_brown_find_the_reliability_they_were_given():
    """Latent and noise variance 1: one rating's reliability is 0.5, the mean of five 0.83."""
    padded, counts = ratings(6000, 5, 1.0)
    curve = split_half_reliability(padded, counts, np.random.default_rng(0))
    assert [m["raters"] for m in curve["measured"]] == [1, 2]
    assert curve["measured"][0]["correlation"] == pytest.approx(0.5, abs=0.03)
    assert curve["measured"][1]["correlation"] == pytest.approx(2 / 3, abs=0.03)
    assert curve["single_rating"] == pytest.approx(0.5, abs=0.03)
    predicted = {p["raters"]: p["reliability"] for p in curve["predicted"]}
    assert sorted(predicted) == list(range(1, RELIABILITY_UP_TO + 1))
    assert predicted[5] == pytest.approx(5 / 6, abs=0.02)
    assert all(predicted[n] < predicted[n + 1] for n in range(1, RELIABILITY_UP_TO))


def test_noisier_raters_buy_less_with_each_rating():
    quiet = split_half_reliability(*ratings(3000, 5, 0.5), np.random.default_rng(0))
    noisy = split_half_reliability(*ratings(3000, 5, 2.0), np.random.default_rng(0))
    assert noisy["predicted"][4]["reliability"] < quiet["predicted"][4]["reliability"]


def test_the_same_seed_gives_the_same_curve_and_too_few_pairs_none():
    padded, counts = ratings(200, 4, 1.0, seed=3)
    assert split_half_reliability(padded, counts, np.random.default_rng(5)) == split_half_reliability(
        padded, counts, np.random.default_rng(5)
    )
    few_padded, few_counts = ratings(5, 5, 1.0)
    assert split_half_reliability(few_padded, few_counts, np.random.default_rng(0)) == {
        "measured": [],
        "single_rating": None,
        "predicted": [],
    }


def test_pairs_with_fewer_ratings_count_only_where_they_have_both_halves():
    padded, counts = ratings(300, 4, 1.0)
    counts[:100] = 2  # these pairs have 2 ratings: only the 1-vs-1 comparison uses them
    padded[:100, 2:] = np.nan
    curve = split_half_reliability(padded, counts, np.random.default_rng(0))
    assert [(m["raters"], m["pairs"]) for m in curve["measured"]] == [(1, 300), (2, 200)]


def model(noise_sd: float, ratings_of_kind: int) -> dict:
    return {"sts": {"noise_sd": noise_sd, "ratings": ratings_of_kind, "bias": 0.0}}


@pytest.mark.parametrize(
    ("row", "flagged"),
    [
        ({"model": model(1.8, MIN_RATINGS)}, True),
        ({"model": model(1.8, MIN_RATINGS - 1)}, False),  # too few ratings of the kind to judge
        ({"model": model(1.4, 500)}, False),
        ({"model": {**model(0.6, 500), "sis": {"noise_sd": 1.9, "ratings": 40, "bias": 0.2}}}, True),
        ({}, False),  # no fit yet
    ],
)
def test_a_rater_is_flagged_by_their_noisiest_kind(row, flagged):
    reasons = flag_reasons(RaterFigures.from_rater_row(row), FlagThresholds(noise_above=1.5))
    assert bool(reasons) is flagged
    if flagged:
        assert reasons[0].startswith("model noise sd 1.") and reasons[0].endswith("> 1.50")
    assert flag_reasons(RaterFigures.from_rater_row(row), FlagThresholds(noise_above=None)) == []
    assert "model noise sd above 1.50" in " ".join(FlagThresholds(noise_above=1.5).describe())


def test_adaptive_n_choosing_which_pairs_get_more_ratings_does_not_bend_the_curve():
    """As adaptive N does: pairs whose first three ratings disagree get four more, the rest
    close at three. The curve starts from each pair's first two ratings, which every pair
    got before any decision: it still finds one rating's reliability of 0.5."""
    rng = np.random.default_rng(8)
    latent = rng.normal(0, 1, 8000)
    scores = latent[:, None] + rng.normal(0, 1.0, (8000, 7))
    disputed = np.ptp(scores[:, :3], axis=1) > 1.8
    counts = np.where(disputed, 7, 3)
    padded = np.where(np.arange(7)[None, :] < counts[:, None], scores, np.nan)
    curve = split_half_reliability(padded, counts, np.random.default_rng(0))
    assert 0.2 < disputed.mean() < 0.8
    assert curve["single_rating"] == pytest.approx(0.5, abs=0.03)
    # The disputed pairs alone (those with 4 vs 4 ... halves) are noisier than the rest.
    assert curve["measured"][1]["pairs"] == int(disputed.sum())
