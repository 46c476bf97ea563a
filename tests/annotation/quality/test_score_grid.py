"""Pair scores on the grid (annotation/quality/score_grid.py): ratings at the slider's ends
are censored, the prior is fitted from the data, and the next rating's effect is exact
for the model. Pure numpy, no database."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from annotation.quality import score_grid
from annotation.quality.score_grid import (
    GRID,
    fit_scores,
    gain_and_crossing,
    next_rating_matrix,
    normal_cdf,
    pair_loglik,
    posterior,
    posterior_interval,
    posterior_mean,
    posterior_var,
    rating_loglik,
    score_pairs,
    stored_prior,
)


def clipped_ratings(latent, per_pair, noise_sd, rng):
    pair = np.repeat(np.arange(latent.size), per_pair)
    score = np.round(np.clip(latent[pair] + rng.normal(0, noise_sd, pair.size), 0, 5), 2)
    return pair, score


def test_a_worked_censored_example_where_the_plain_mean_is_biased_and_the_grid_is_not():
    """400 pairs at latent 0 among 600 spread over the scale, 5 ratings each of noise sd
    0.8, clipped to the slider: half the ratings of a pair at 0 are 0, the rest above, so
    its plain mean is about 0.8 x phi(0) = 0.32 too high. The censored likelihood knows a
    0 means "0 or below", and the fitted prior that many pairs sit at 0: the bias falls
    by a quarter and the error by more than 10%."""
    rng = np.random.default_rng(5)
    latent = np.concatenate([np.zeros(400), rng.uniform(0, 5, 600)])
    pair, score = clipped_ratings(latent, 5, 0.8, rng)
    mean = np.bincount(pair, weights=score) / 5
    zero = latent == 0
    assert mean[zero].mean() == pytest.approx(0.8 * stats.norm.pdf(0), abs=0.03)  # biased
    scores, prior = fit_scores(
        pair, score, np.zeros(pair.size), np.full(pair.size, 0.64), n_pairs=1000,
        group=np.zeros(1000, dtype=np.int64), n_groups=1,
    )  # fmt: skip
    # Not 0: a score on the scale cannot sit below a latent 0, only near it, and the
    # prior's smoothing (PRIOR_KERNEL_SD) spreads the pile at 0 a little inwards.
    assert scores.score[zero].mean() < 0.75 * mean[zero].mean()
    assert prior[0, GRID <= 0.5].sum() > 0.3  # the prior found the pile at 0 (40% of the pairs), smoothed
    error = np.sqrt(np.mean((scores.score - latent) ** 2))
    assert error < 0.9 * np.sqrt(np.mean((mean - latent) ** 2))


def test_a_rating_at_an_end_is_the_normals_tail_beyond_it():
    bias, sd = np.array([0.2, 0.2, 0.2]), np.array([0.8, 0.8, 0.8])
    loglik = rating_loglik(np.array([0.0, 5.0, 2.5]), bias, sd)
    at = np.searchsorted(GRID, 1.0)  # latent 1.0: expected rating 1.2
    assert loglik[0, at] == pytest.approx(stats.norm.logcdf((0 - 1.2) / 0.8))
    assert loglik[1, at] == pytest.approx(stats.norm.logsf((5 - 1.2) / 0.8))
    assert loglik[2, at] == pytest.approx(stats.norm.logpdf(2.5, 1.2, 0.8) + 0.5 * math.log(2 * math.pi))
    far = rating_loglik(np.array([5.0]), np.array([0.0]), np.array([0.05]))
    assert np.all(np.isfinite(far)) and far[0, 0] < far[0, -1]  # 100 sds off: finite, and least likely


@given(st.floats(-8, 8))
def test_the_normal_distribution_function_is_scipys(x):
    assert normal_cdf(x) == pytest.approx(stats.norm.cdf(x), abs=2e-7)


def test_a_pairs_ratings_in_any_block_sum_to_the_same_likelihood(monkeypatch):
    rng = np.random.default_rng(2)
    pair = rng.integers(0, 40, 300)
    score, bias, var = rng.uniform(0, 5, 300).round(2), rng.normal(0, 0.3, 300), rng.uniform(0.3, 2, 300)
    whole = pair_loglik(pair, score, bias, var, n_pairs=45)
    monkeypatch.setattr(score_grid, "CHUNK", 7)
    assert np.allclose(pair_loglik(pair, score, bias, var, n_pairs=45), whole, rtol=1e-12, atol=1e-9)
    assert np.all(whole[40:] == 0)  # unrated pairs: nothing learnt
    monkeypatch.setattr(score_grid, "PAIR_BLOCK", 6)
    prior = np.tile(score_grid.even_prior(), (45, 1))
    by_blocks = score_pairs(pair, score, bias, var, prior=prior, group=np.arange(45))
    assert np.allclose(by_blocks.score, posterior_mean(posterior(whole, prior)))


def test_a_pair_mid_scale_has_the_normal_posterior_and_its_interval():
    loglik = rating_loglik(np.full(4, 2.5), np.zeros(4), np.full(4, 0.8)).sum(axis=0)[None]
    post = posterior(loglik, score_grid.even_prior())
    assert posterior_mean(post)[0] == pytest.approx(2.5, abs=1e-9)
    assert posterior_var(post)[0] == pytest.approx(0.16, rel=0.02)  # 0.64 / 4
    low, high = posterior_interval(post)
    assert (low[0], high[0]) == pytest.approx((2.5 - 1.96 * 0.4, 2.5 + 1.96 * 0.4), abs=0.03)


def test_a_rating_removes_the_normal_width_mid_scale_and_less_at_an_end():
    def post_at(mean, sd):
        weights = np.exp(-0.5 * ((GRID - mean) / sd) ** 2)
        return (weights / weights.sum())[None]

    matrix = next_rating_matrix(0.8)
    var = 0.09
    plain = var - 1 / (1 / var + 1 / 0.64)
    mid, crossing_mid = gain_and_crossing(post_at(2.5, 0.3), matrix, 2.6)
    end, crossing_end = gain_and_crossing(post_at(4.9, 0.3), matrix, 3.0)
    assert mid[0] == pytest.approx(plain, rel=0.03)
    assert end[0] < 0.5 * plain
    assert crossing_mid[0] > 0.05 and crossing_end[0] < 1e-6


def test_the_next_ratings_bins_are_a_distribution_for_every_latent():
    matrix = next_rating_matrix(0.8, bias=0.3)
    assert matrix.shape == (52, GRID.size)
    assert np.allclose(matrix.sum(axis=0), 1.0)
    assert matrix[-1, -1] > 0.5 > matrix[0, -1]  # latent 5 with bias 0.3: mostly at the top end


def test_the_next_ratings_bins_stay_a_distribution_at_the_fits_noise_floor():
    # The fit floors a rater's noise variance at 1e-6 (sd 0.001): raters who agree exactly.
    matrix = next_rating_matrix(0.001)
    assert np.all(np.isfinite(matrix)) and np.allclose(matrix.sum(axis=0), 1.0)
    assert matrix[0, 0] == pytest.approx(0.5) and matrix[-1, -1] == pytest.approx(0.5)  # an end: half censored
    gain, crossing = gain_and_crossing(score_grid.even_prior()[None], matrix, 3.0)
    assert gain[0] == pytest.approx(np.var(GRID), rel=0.05)  # the rating tells the score
    assert np.isfinite(crossing[0])
    with pytest.raises(ValueError, match="above 0"):
        next_rating_matrix(0.0)


def test_a_stored_prior_is_its_weights_or_its_normal_or_even():
    weights = np.arange(GRID.size, dtype=float)
    assert stored_prior({"mean": 1.0, "sd": 1.0, "weights": list(weights)}) == pytest.approx(weights / weights.sum())
    normal = stored_prior({"mean": 4.0, "sd": 0.5})
    assert GRID @ normal == pytest.approx(4.0, abs=0.05)
    assert np.all(stored_prior(None) == score_grid.even_prior())
    with pytest.raises(ValueError, match="51 values"):
        stored_prior({"mean": 1.0, "sd": 1.0, "weights": [1.0, 2.0]})
