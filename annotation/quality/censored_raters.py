"""The raters' bias and noise re-estimated with the slider's ends as censoring. Pure numpy,
no Django.

The normal model (``annotation.quality.rater_effects``) takes a rating of 0 or 5 as an
exact value, so a rater's residuals near the ends come out too small: at noise sd 0.8 it
put raters at 0.76 and raters of noise sd 2.0 at 1.4, weighing those twice as much as they
deserve and making every pair's posterior narrower than its real error. Starting from
its estimates, a few rounds of EM on the grid (``annotation.quality.score_grid``) give
each rating its expected residual and squared residual under its pair's posterior, a
rating at an end the moments of the normal cut there (the latent rating lies beyond the
end), and each rater's bias and noise are updated with the same priors as the normal
model's: a bias prior at 0 and a noise prior at the pooled variance.
"""

from __future__ import annotations

import math

import numpy as np

from annotation.core.cxc import SCORE_MAX, SCORE_MIN
from annotation.quality import score_grid

ROUNDS = 4  # EM rounds from the normal model's estimates: the noise settles within 1%
# The rounds run on at most this many pairs (every k-th): at CxC's scale (267,095 pairs,
# 670 ratings a rater) a fifth says as much about each rater and takes a fifth of the time.
ROUND_PAIRS = 50_000


def refit(
    pair: np.ndarray,
    rater: np.ndarray,
    score: np.ndarray,
    *,
    bias: np.ndarray,
    noise_var: np.ndarray,
    group: np.ndarray,
    n_groups: int,
    bias_prior_sd: float,
    noise_prior_df: float,
    rounds: int = ROUNDS,
) -> tuple[np.ndarray, np.ndarray, float]:
    """(bias, noise variance) ``(n_raters,)`` of each rater after ``rounds`` of EM with
    censored ends, from the normal model's ``bias`` and ``noise_var``, and the pooled noise
    variance; ``group: (n_pairs,)`` the pairs' prior groups. Raters without ratings keep
    bias 0 and get the pooled noise; with more than ``ROUND_PAIRS`` pairs the rounds see
    every k-th pair, and a rater none of whose pairs is among them keeps the normal
    model's estimates."""
    if group.size > ROUND_PAIRS:
        return _refit_sample(pair, rater, score, bias=bias, noise_var=noise_var, group=group, n_groups=n_groups,
                             bias_prior_sd=bias_prior_sd, noise_prior_df=noise_prior_df, rounds=rounds)  # fmt: skip
    n_raters = bias.size
    count = np.bincount(rater, minlength=n_raters).astype(np.float64)
    rated = count > 0
    pooled = float(np.average(noise_var[rated], weights=count[rated]))
    for _ in range(rounds):
        residual, square = _expected_residuals(pair, score, bias[rater], noise_var[rater], group, n_groups)
        precision = 1.0 / bias_prior_sd**2 + count / noise_var
        updated = (np.bincount(rater, weights=residual + bias[rater], minlength=n_raters) / noise_var) / precision
        updated = np.where(rated, updated - np.average(updated[rated], weights=count[rated]), 0.0)
        step = bias[rater] - updated[rater]
        square = square + 2.0 * step * residual + step * step  # about the new bias
        pooled = max(float(square.sum() / count.sum()), 1e-6)
        sums = np.bincount(rater, weights=square, minlength=n_raters)
        noise_var = np.maximum((sums + noise_prior_df * pooled) / (count + noise_prior_df), 1e-6)
        bias = updated
    return bias, noise_var, pooled


def _refit_sample(pair, rater, score, *, bias, noise_var, group, **settings) -> tuple[np.ndarray, np.ndarray, float]:
    chosen = np.zeros(group.size, dtype=bool)
    chosen[:: math.ceil(group.size / ROUND_PAIRS)] = True
    keep = chosen[pair]
    renumbered = np.cumsum(chosen) - 1
    sampled_bias, sampled_var, pooled = refit(
        renumbered[pair[keep]], rater[keep], score[keep], bias=bias, noise_var=noise_var, group=group[chosen],
        **settings,
    )  # fmt: skip
    seen = np.bincount(rater[keep], minlength=bias.size) > 0
    return np.where(seen, sampled_bias, bias), np.where(seen, sampled_var, noise_var), pooled


def _expected_residuals(pair, score, bias, noise_var, group, n_groups) -> tuple[np.ndarray, np.ndarray]:
    """Per rating ``(m,)``: E[latent rating - latent - bias] and E[(the same)^2] under its
    pair's posterior (the latent rating being the rating itself inside the scale, the
    normal beyond the end at an end)."""
    n_pairs = group.size
    scores, prior = score_grid.fit_scores(pair, score, bias, noise_var, n_pairs=n_pairs, group=group, n_groups=n_groups)
    residual = score - bias - scores.score[pair]
    square = residual * residual + scores.var[pair]
    ends = (score <= SCORE_MIN) | (score >= SCORE_MAX)
    if not ends.any():
        return residual, square
    # The pairs with a rating at an end: their posteriors on the grid, for those ratings,
    # in blocks of ratings (a (CHUNK, G) array at a time, as the likelihood's).
    touched = np.zeros(n_pairs, dtype=bool)
    touched[pair[ends]] = True
    renumbered = np.cumsum(touched) - 1
    keep = touched[pair]
    loglik = score_grid.pair_loglik(
        renumbered[pair[keep]], score[keep], bias[keep], noise_var[keep], n_pairs=int(touched.sum())
    )
    post = score_grid.posterior(loglik, prior[group[touched]])
    del loglik
    rows = np.flatnonzero(ends)
    for start in range(0, rows.size, score_grid.CHUNK):
        block = rows[start : start + score_grid.CHUNK]
        shift, shift_square = _cut_normal_moments(score[block], bias[block], np.sqrt(noise_var[block]))
        weights = post[renumbered[pair[block]]]
        residual[block] = np.sum(weights * shift, axis=1)
        square[block] = np.sum(weights * shift_square, axis=1)
    return residual, square


def _cut_normal_moments(score, bias, sd) -> tuple[np.ndarray, np.ndarray]:
    """``(k, G)``: for ratings at an end, at each latent of the grid, the mean and mean
    square of (latent rating - latent - bias), the latent rating normal around latent +
    bias and beyond the end (below 0 for a 0, above 5 for a 5)."""
    sd = sd[:, None]
    expected = score_grid.GRID[None, :] + bias[:, None]
    low = (score <= SCORE_MIN)[:, None]
    # Distance from the expected rating to the end, in sds, signed so the kept side is
    # below it: a 0 keeps (-inf, a], a 5 keeps [a', inf) = (-inf, -a'] mirrored.
    a = np.where(low, (SCORE_MIN - expected) / sd, (expected - SCORE_MAX) / sd)
    mass = np.maximum(score_grid.normal_cdf(a), 1e-300)
    ratio = np.exp(-0.5 * a * a) / math.sqrt(2.0 * math.pi) / mass  # phi(a) / Phi(a)
    ratio = np.where(mass > 1e-300, ratio, np.maximum(-a, 0.0))  # far in the tail: about -a
    shift = np.where(low, -sd * ratio, sd * ratio)
    square = sd * sd * (1.0 - a * ratio)
    return shift, square
