"""A rater-effects model for continuous ratings. Pure numpy, no Django.

    rating[k] = latent[pair[k]] + bias[rater[k]] + noise,  noise ~ N(0, noise_sd[rater[k]]^2)

fitted over all valid ratings of a dataset by alternating weighted least squares with
the expected squared residuals of EM, each part shrunk by a prior, so a rater or a pair
with few ratings stays near the crowd:

- a pair's latent score has a normal prior around the ratings' grand mean, whose spread
  is estimated from the data (empirical Bayes);
- a rater's bias has a normal prior at 0 (sd ``bias_prior_sd``); the biases are
  re-centred to weighted mean 0 each round (bias and latent scores are otherwise only
  known up to a shared shift);
- a rater's noise variance has a scaled inverse chi-square prior at the pooled variance
  with ``noise_prior_df`` pseudo ratings.

Ratings travel as flat arrays of equal length ``n``: ``pair: int (n,)`` in
0 .. n_pairs-1, ``rater: int (n,)`` in 0 .. n_raters-1, ``score: float (n,)``. Every
index from 0 up to the largest may occur or not; pairs and raters without ratings get
their prior.

The rater effects come from that normal model. The pairs' scores then come from
``annotation.quality.score_grid``: each pair's posterior on a grid of the scale, a rating
at an end of the slider taken as censored (it says only "this far or beyond"), under a
prior per group fitted from the data on the same grid (empirical Bayes, free in shape:
CxC's scores pile up near the ends). Per pair the fit gives that posterior's mean and its
95% interval; per rater the bias and noise sd with their 95% intervals (the noise
interval from the scaled chi-square with the Wilson-Hilferty approximation, so no SciPy
at run time).
:func:`pair_interval_half_width` is the interval of one pair given its raters' noise;
adaptive N's rule is ``annotation.quality.adaptive_rule``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from annotation.quality import censored_raters, score_grid

Z_95 = 1.959963984540054
MODEL_NAME = (
    "rater-effects (latent + rater bias + per-rater noise), EM with shrinkage; scores: posterior means on a "
    "grid, ratings at the slider's ends censored, an empirical-Bayes prior per sampling method"
)


CENSORED_ROUNDS = censored_raters.ROUNDS


class RaterModelError(ValueError):
    """Ratings the model cannot be fitted on; the message names the problem."""


@dataclass(frozen=True)
class RaterModelSettings:
    """The priors and the stopping rule; all are recorded with a fit."""

    bias_prior_sd: float = 0.5
    noise_prior_df: float = 4.0
    max_iterations: int = 200
    tolerance: float = 1e-5

    def as_dict(self) -> dict:
        return asdict(self)


DEFAULT_SETTINGS = RaterModelSettings()


@dataclass(frozen=True)
class FittedRaterEffects:
    """A fitted model. Pair arrays ``(n_pairs,)``, rater arrays ``(n_raters,)``.

    ``pair_score`` and its interval: the posterior on the grid (on the scale);
    ``pair_precision`` is the normal model's posterior precision of the latent score;
    raters without ratings have bias 0 and the pooled noise. ``grand_mean`` and
    ``latent_sd``: all pairs' latent scores; ``group_mean`` and ``group_sd``
    ``(n_groups,)``: each group's normal prior; ``group_prior`` ``(n_groups, G)``: each
    group's prior on the grid, the one the scores have."""

    pair_score: np.ndarray
    pair_low: np.ndarray
    pair_high: np.ndarray
    pair_precision: np.ndarray
    rater_bias: np.ndarray
    rater_bias_low: np.ndarray
    rater_bias_high: np.ndarray
    rater_noise_sd: np.ndarray
    rater_noise_low: np.ndarray
    rater_noise_high: np.ndarray
    rater_count: np.ndarray
    grand_mean: float
    latent_sd: float
    group_mean: np.ndarray
    group_sd: np.ndarray
    group_prior: np.ndarray
    pooled_noise_sd: float
    iterations: int
    converged: bool
    settings: RaterModelSettings


def fit(
    pair: np.ndarray,
    rater: np.ndarray,
    score: np.ndarray,
    *,
    n_pairs: int | None = None,
    n_raters: int | None = None,
    group: np.ndarray | None = None,
    settings: RaterModelSettings = DEFAULT_SETTINGS,
) -> FittedRaterEffects:
    """Fit the model to flat ratings (see the module docstring for the shapes).
    ``group: int (n_pairs,)`` in 0 .. n_groups-1 gives pairs of each group a prior of their
    own (e.g. one per sampling method); None: one prior for all pairs."""
    pair, rater, score = _checked(pair, rater, score)
    n_pairs = int(pair.max()) + 1 if n_pairs is None else n_pairs
    n_raters = int(rater.max()) + 1 if n_raters is None else n_raters
    if pair.max() >= n_pairs or rater.max() >= n_raters:
        raise RaterModelError("a pair or rater index is beyond n_pairs or n_raters")
    group = _checked_group(group, n_pairs)
    rater_count = np.bincount(rater, minlength=n_raters).astype(np.float64)
    state = _State.start(pair, score, n_pairs, n_raters, group)
    iterations, converged = 0, False
    while iterations < settings.max_iterations and not converged:
        iterations += 1
        previous = state.latent.copy()
        _update_latent(state, pair, rater, score)
        _update_bias(state, pair, rater, score, rater_count, settings)
        _update_noise(state, pair, rater, score, rater_count, settings)
        _update_prior(state)
        converged = bool(np.max(np.abs(state.latent - previous)) < settings.tolerance)
    _update_latent(state, pair, rater, score)
    if CENSORED_ROUNDS:
        state.bias, state.noise_var, state.pooled_var = censored_raters.refit(
            pair, rater, score, bias=state.bias, noise_var=state.noise_var, group=group,
            n_groups=state.group_mean.size, bias_prior_sd=settings.bias_prior_sd,
            noise_prior_df=settings.noise_prior_df, rounds=CENSORED_ROUNDS,
        )  # fmt: skip
        _update_latent(state, pair, rater, score)  # the normal model's precision under them
    scores, group_prior = score_grid.fit_scores(
        pair, score, state.bias[rater], state.noise_var[rater], n_pairs=n_pairs, group=group,
        n_groups=state.group_mean.size,
    )  # fmt: skip
    return _result(state, scores, group_prior, rater_count, settings, iterations, converged)


def pair_interval_half_width(noise_var: np.ndarray, latent_var: float) -> float:
    """Half the 95% interval of one pair's latent score rated by raters of noise
    variances ``noise_var: float (m,)``, under a latent prior of variance ``latent_var``."""
    return Z_95 / math.sqrt(1.0 / latent_var + float(np.sum(1.0 / noise_var)))


@dataclass(frozen=True)
class PairModelScores:
    """Per pair ``(n_pairs,)``: the model's posterior mean and 95% interval, on the scale."""

    score: np.ndarray
    low: np.ndarray
    high: np.ndarray


def pair_posterior(
    pair_index: np.ndarray,
    score: np.ndarray,
    bias: np.ndarray,
    noise_var: np.ndarray,
    *,
    n_pairs: int,
    prior: np.ndarray,
) -> PairModelScores:
    """Each pair's posterior from its ratings, given the raters' fitted effects: ratings
    ``pair_index: int (m,)`` in 0 .. n_pairs-1, ``score``, and their raters' ``bias`` and
    ``noise_var`` (each ``(m,)``); the pairs' priors on the grid from the fit (``(G,)``
    for all, or ``(n_pairs, G)``). For the ratings a model was fitted on this is its own
    pair score (the fit's last step computes exactly this)."""
    prior = np.broadcast_to(prior, (n_pairs, score_grid.GRID.size)) if prior.ndim == 1 else prior
    scores = score_grid.score_pairs(
        pair_index, score, bias, noise_var, prior=prior, group=np.arange(n_pairs, dtype=np.int64)
    )
    return PairModelScores(score=scores.score, low=scores.low, high=scores.high)


# --- the fit's steps --------------------------------------------------------------------


def _latent_posterior(
    pair_index, corrected, weight, *, n_pairs: int, prior_mean, latent_var
) -> tuple[np.ndarray, np.ndarray]:
    """(posterior mean, posterior precision) ``(n_pairs,)`` of each pair's latent score
    under the normal model, from its bias-corrected ratings ``corrected`` weighted by
    ``weight`` (each ``(m,)``)."""
    precision = 1.0 / latent_var + np.bincount(pair_index, weights=weight, minlength=n_pairs)
    weighted = np.bincount(pair_index, weights=weight * corrected, minlength=n_pairs)
    return (prior_mean / latent_var + weighted) / precision, precision


@dataclass
class _State:
    latent: np.ndarray  # (n_pairs,)
    precision: np.ndarray  # (n_pairs,) posterior precision of latent
    bias: np.ndarray  # (n_raters,)
    noise_var: np.ndarray  # (n_raters,)
    group: np.ndarray  # (n_pairs,) the prior's group of each pair
    group_mean: np.ndarray  # (n_groups,)
    group_var: np.ndarray  # (n_groups,)
    pooled_var: float

    @classmethod
    def start(cls, pair, score, n_pairs: int, n_raters: int, group: np.ndarray) -> _State:
        sums = np.bincount(pair, weights=score, minlength=n_pairs)
        counts = np.bincount(pair, minlength=n_pairs)
        grand = float(score.mean())
        latent = np.where(counts > 0, sums / np.maximum(counts, 1), grand)
        pooled = max(float(np.var(score - latent[pair])), 1e-4)
        state = cls(
            latent=latent,
            precision=np.full(n_pairs, 1.0 / pooled),
            bias=np.zeros(n_raters),
            noise_var=np.full(n_raters, pooled),
            group=group,
            group_mean=np.zeros(int(group.max()) + 1),
            group_var=np.ones(int(group.max()) + 1),
            pooled_var=pooled,
        )
        _update_prior(state)
        return state

    @property
    def prior_mean(self) -> np.ndarray:
        return self.group_mean[self.group]

    @property
    def prior_var(self) -> np.ndarray:
        return self.group_var[self.group]


def _update_latent(state: _State, pair, rater, score) -> None:
    state.latent, state.precision = _latent_posterior(
        pair,
        score - state.bias[rater],
        1.0 / state.noise_var[rater],
        n_pairs=state.latent.size,
        prior_mean=state.prior_mean,
        latent_var=state.prior_var,
    )


def _update_bias(state: _State, pair, rater, score, rater_count, settings: RaterModelSettings) -> None:
    n_raters = state.bias.size
    residual = np.bincount(rater, weights=score - state.latent[pair], minlength=n_raters)
    precision = 1.0 / settings.bias_prior_sd**2 + rater_count / state.noise_var
    bias = (residual / state.noise_var) / precision
    rated = rater_count > 0
    shift = float(np.average(bias[rated], weights=rater_count[rated]))
    state.bias = np.where(rated, bias - shift, 0.0)
    state.latent = state.latent + shift  # the same ratings, the shared shift moved to the pairs


def _update_noise(state: _State, pair, rater, score, rater_count, settings: RaterModelSettings) -> None:
    """E-step expectation of each squared residual (the latent's posterior variance
    added) and the posterior mode of each rater's variance under its prior."""
    n_raters = state.bias.size
    residual = score - state.latent[pair] - state.bias[rater]
    expected = residual**2 + 1.0 / state.precision[pair]
    sums = np.bincount(rater, weights=expected, minlength=n_raters)
    state.pooled_var = max(float(sums.sum() / rater_count.sum()), 1e-6)
    df = settings.noise_prior_df
    state.noise_var = np.maximum((sums + df * state.pooled_var) / (rater_count + df), 1e-6)


# A group of fewer pairs takes the prior of all pairs: its own spread would be guesswork.
MIN_GROUP_PAIRS = 20


def _update_prior(state: _State) -> None:
    """Empirical Bayes: each group's latent mean and spread, the posterior variances added."""
    overall_mean = float(state.latent.mean())
    overall_var = max(float(np.mean((state.latent - overall_mean) ** 2 + 1.0 / state.precision)), 1e-4)
    counts = np.bincount(state.group, minlength=state.group_mean.size)
    means = np.bincount(state.group, weights=state.latent, minlength=counts.size) / np.maximum(counts, 1)
    spread = (state.latent - means[state.group]) ** 2 + 1.0 / state.precision
    variances = np.bincount(state.group, weights=spread, minlength=counts.size) / np.maximum(counts, 1)
    own = counts >= MIN_GROUP_PAIRS
    state.group_mean = np.where(own, means, overall_mean)
    state.group_var = np.where(own, np.maximum(variances, 1e-4), overall_var)


def _result(
    state: _State, pairs: score_grid.GridScores, group_prior, rater_count, settings, iterations: int, converged: bool
) -> FittedRaterEffects:
    bias_half = Z_95 / np.sqrt(1.0 / settings.bias_prior_sd**2 + rater_count / state.noise_var)
    df = rater_count + settings.noise_prior_df
    noise_sd = np.sqrt(state.noise_var)
    return FittedRaterEffects(
        pair_score=pairs.score,
        pair_low=pairs.low,
        pair_high=pairs.high,
        pair_precision=state.precision,
        rater_bias=state.bias,
        rater_bias_low=state.bias - bias_half,
        rater_bias_high=state.bias + bias_half,
        rater_noise_sd=noise_sd,
        rater_noise_low=noise_sd * np.sqrt(df / chi_square_quantile(df, Z_95)),
        rater_noise_high=noise_sd * np.sqrt(df / chi_square_quantile(df, -Z_95)),
        rater_count=rater_count.astype(np.int64),
        grand_mean=float(state.latent.mean()),
        latent_sd=math.sqrt(float(np.mean((state.latent - state.latent.mean()) ** 2 + 1.0 / state.precision))),
        group_mean=state.group_mean,
        group_sd=np.sqrt(state.group_var),
        group_prior=group_prior,
        pooled_noise_sd=math.sqrt(state.pooled_var),
        iterations=iterations,
        converged=converged,
        settings=settings,
    )


def chi_square_quantile(df: np.ndarray, z: float) -> np.ndarray:
    """The chi-square quantile with ``df`` degrees of freedom at the standard normal
    quantile ``z`` (Wilson-Hilferty: within 1% of the exact value from 10 degrees up, 5%
    at 5; a rater's degrees of freedom are its ratings plus the prior's 4)."""
    df = np.asarray(df, dtype=np.float64)
    c = 2.0 / (9.0 * df)
    return df * np.maximum(1.0 - c + z * np.sqrt(c), 1e-3) ** 3


def _checked_group(group, n_pairs: int) -> np.ndarray:
    if group is None:
        return np.zeros(n_pairs, dtype=np.int64)
    group = np.asarray(group)
    if group.shape != (n_pairs,) or not np.issubdtype(group.dtype, np.integer) or (n_pairs and group.min() < 0):
        raise RaterModelError("group must give every pair a group index of 0 or more")
    return group.astype(np.int64, copy=False)


def _checked(pair, rater, score) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    pair = np.asarray(pair)
    rater = np.asarray(rater)
    score = np.asarray(score, dtype=np.float64)
    if not (pair.ndim == rater.ndim == score.ndim == 1 and pair.size == rater.size == score.size):
        raise RaterModelError("pair, rater and score must be flat arrays of one length")
    if score.size == 0:
        raise RaterModelError("no ratings to fit")
    if not (np.issubdtype(pair.dtype, np.integer) and np.issubdtype(rater.dtype, np.integer)):
        raise RaterModelError("pair and rater must be integer indices")
    if pair.min() < 0 or rater.min() < 0:
        raise RaterModelError("pair and rater indices must be 0 or more")
    if not np.all(np.isfinite(score)):
        raise RaterModelError("a score is NaN or infinite")
    return pair.astype(np.int64, copy=False), rater.astype(np.int64, copy=False), score
