"""Adaptive N's rule: whether a pair whose slots are all rated gets one more. Pure numpy,
no Django.

A pair's latent score has a normal posterior from its ratings (each corrected by its
rater's bias and weighed by its rater's own noise, around the prior of its sampling
method), widened by how much these ratings disagree beyond their raters' noise. The
score lies on the 0-5 scale, so what a pair's error can be is that posterior cut to the
scale (a truncated normal): a pair rated near an end of the scale has less room to be
wrong. A pair gets one more rating only while

- it is below its maximum;
- the next rating, from a rater of the pool's noise, would remove at least as much of
  its expected squared error as it removes from a pair exactly at the precision target
  (``half_width``: half a 95% interval): ratings go where they reduce the expected error
  most, and the target sets how much reduction is still worth a rating;
- and, once its use in the dataset is settled (the probability that one more rating moves
  its posterior mean across the kind's positive threshold is below ``settled``), the
  rating would still meet the looser target ``half_width * SETTLED_WIDENING``: a pair far
  on one side of the threshold closes sooner, and the ratings go to the pairs whose use is
  in doubt.

Arrays of one shape broadcast throughout: ``mean`` and ``var`` are posterior means and
variances of latent scores, ``count`` ratings so far.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from annotation.core.cxc import SCORE_MAX, SCORE_MIN

Z_95 = 1.959963984540054

# The chance of crossing the threshold with one more rating below which a pair's use is
# settled, and how much looser a settled pair's precision target is. A settled pair's
# extra ratings serve the scores' error (correlations) but not the positives (retrieval):
# closing it outright (an infinite widening) left pairs far from the threshold at their
# minimum, about twice the squared error of the rest, and with the use stop that strict
# no target spent a budget of 3.3 ratings a pair in bench-adaptive's simulations.
SETTLED_PROBABILITY = 0.01
SETTLED_WIDENING = 1.25

# How many ratings' worth of belief a pair's dispersion starts from: with 3 ratings their
# own spread weighs 2 against the model's 6 (three ratings' spread says little).
DISPERSION_PRIOR_DF = 6.0

# Gauss-Hermite (probabilists') nodes and weights for the expectation over the next rating.
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(8)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


@dataclass(frozen=True)
class PairRatings:
    """One pair's ratings as the rule weighs them, each array ``(m,)``: the scores, their
    raters' biases and noise variances; the prior of its latent score (``latent_var``
    ``math.inf`` for none, then ``prior_mean`` is unused)."""

    score: np.ndarray
    bias: np.ndarray
    noise_var: np.ndarray
    latent_var: float
    prior_mean: float = 0.0


@dataclass(frozen=True)
class AdaptiveRule:
    """The rule of one pair: its maximum, the precision target (half a 95% interval on the
    0-5 scale), its kind's positive threshold, the noise variance of the rater the next
    rating is expected from (the pool's pooled noise), the settled probability and how
    much looser a settled pair's target is."""

    maximum: int
    half_width: float
    threshold: float
    next_noise_var: float
    settled: float = SETTLED_PROBABILITY
    settled_widening: float = SETTLED_WIDENING

    def __post_init__(self) -> None:
        numbers = (self.half_width > 0, self.next_noise_var > 0, 0 <= self.settled < 1, self.settled_widening >= 1)
        if not (all(numbers) and self.maximum >= 1):
            raise ValueError(f"no adaptive rule: {self!r}")


def pair_posterior(ratings: PairRatings) -> tuple[float, float]:
    """(mean, variance) of the pair's latent score: bias-corrected, precision-weighted,
    around its prior, the variance scaled by the ratings' dispersion beyond their raters'
    noise (shrunk towards 1 with ``DISPERSION_PRIOR_DF``), so raters who disagree keep a
    pair open longer than the model's noise alone would."""
    corrected = ratings.score - ratings.bias
    weight = 1.0 / ratings.noise_var
    prior_precision = 0.0 if math.isinf(ratings.latent_var) else 1.0 / ratings.latent_var
    precision = prior_precision + float(np.sum(weight))
    mean = (prior_precision * ratings.prior_mean + float(np.sum(weight * corrected))) / precision
    own = float(np.sum(weight * corrected) / np.sum(weight))
    spread = float(np.sum(weight * (corrected - own) ** 2))
    dispersion = (spread + DISPERSION_PRIOR_DF) / (corrected.size - 1 + DISPERSION_PRIOR_DF)
    return mean, dispersion / precision


def normal_cdf(x: np.ndarray) -> np.ndarray:
    """The standard normal distribution function, without SciPy: the complementary error
    function's Chebyshev fit of Numerical Recipes (``erfcc``: relative error below 1.2e-7
    everywhere), so a tail keeps its relative precision however small it is."""
    x = np.asarray(x, dtype=np.float64)
    z = np.abs(x) / math.sqrt(2.0)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (
        0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))))  # fmt: skip
    tail = 0.5 * t * np.exp(-z * z + poly)
    return np.where(x >= 0, 1.0 - tail, tail)


def _normal_pdf(x: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


FAR_SD = 8.0


def truncated_variance(mean, var) -> np.ndarray:
    """The variance of a normal (``mean``, ``var``) cut to the 0-5 scale: the expected
    squared error of the best estimate of a score known to lie on the scale."""
    mean, var = np.broadcast_arrays(np.asarray(mean, dtype=np.float64), np.asarray(var, dtype=np.float64))
    sd = np.sqrt(var)
    low, high = (SCORE_MIN - mean) / sd, (SCORE_MAX - mean) / sd
    # Above the scale's middle the mass is a difference of upper tails: taken as such, not
    # as one minus a tail, it keeps its digits however small it is.
    mass = np.where(low > 0, normal_cdf(-low) - normal_cdf(-high), normal_cdf(high) - normal_cdf(low))
    safe = np.where(mass > 1e-300, mass, 1.0)
    pdf_low, pdf_high = _normal_pdf(low), _normal_pdf(high)
    ratio = (low * pdf_low - high * pdf_high) / safe
    shift = (pdf_low - pdf_high) / safe
    cut = np.clip(var * (1.0 + ratio - shift**2), 0.0, var)
    # Far off the scale that difference cancels (it loses a^4 of its precision, a sds off):
    # there the cut normal is a tail at the near end, of variance var (1/a^2 - 6/a^4 +
    # 50/a^6) to within 518/a^6 of itself, 0.2% from FAR_SD on.
    a = np.maximum(np.maximum(low, -high), FAR_SD)
    tail = var * (1.0 / a**2 - 6.0 / a**4 + 50.0 / a**6)
    return np.where(np.maximum(low, -high) > FAR_SD, tail, cut)


def _variance_after(var, next_noise_var):
    return 1.0 / (1.0 / var + 1.0 / next_noise_var)


def expected_gain(mean, var, next_noise_var: float) -> np.ndarray:
    """How much of the truncated posterior variance one more rating of noise variance
    ``next_noise_var`` is expected to remove: now, less its expectation over the next
    rating (the posterior mean then moves with variance ``var - var_after``)."""
    mean, var = np.broadcast_arrays(np.asarray(mean, dtype=np.float64), np.asarray(var, dtype=np.float64))
    after = _variance_after(var, next_noise_var)
    moves = np.sqrt(np.maximum(var - after, 0.0))
    # All the quadrature's points in one call (the nodes on a last axis): a decision is one
    # pair, where numpy's cost is per call, not per element.
    points = truncated_variance(mean[..., None] + _NODES * moves[..., None], after[..., None])
    return truncated_variance(mean, var) - points @ _WEIGHTS


def gain_floor(half_width: float, next_noise_var: float) -> float:
    """The gain of one more rating for a pair in the scale's middle exactly at the
    precision target (posterior sd ``half_width / Z_95``): the least a rating must bring.
    An array of half-widths gives an array of floors."""
    target = (np.asarray(half_width, dtype=np.float64) / Z_95) ** 2
    return target - _variance_after(target, next_noise_var)


def crossing_probability(mean, var, next_noise_var: float, threshold: float) -> np.ndarray:
    """The probability that one more rating moves the posterior mean across ``threshold``."""
    mean, var = np.broadcast_arrays(np.asarray(mean, dtype=np.float64), np.asarray(var, dtype=np.float64))
    moves = np.sqrt(np.maximum(var - _variance_after(var, next_noise_var), 1e-300))
    return normal_cdf(-np.abs(mean - threshold) / moves)


def extends(mean, var, count, rule: AdaptiveRule) -> np.ndarray:
    """Whether each pair (posterior ``mean``, ``var``, ``count`` ratings) gets one more slot."""
    gain = expected_gain(mean, var, rule.next_noise_var)
    settled = crossing_probability(mean, var, rule.next_noise_var, rule.threshold) < rule.settled
    half_width = np.where(settled, rule.half_width * rule.settled_widening, rule.half_width)
    return (np.asarray(count) < rule.maximum) & (gain >= gain_floor(half_width, rule.next_noise_var))


def adaptive_extends(ratings: PairRatings, rule: AdaptiveRule) -> bool:
    """Whether a pair whose slots are all rated gets one more (False: it closes)."""
    mean, var = pair_posterior(ratings)
    return bool(extends(mean, var, ratings.score.size, rule))
