"""Adaptive N's rule: whether a pair whose slots are all rated gets one more. Pure numpy,
no Django.

A pair's latent score has a posterior on a grid of the 0-5 scale
(``annotation.quality.score_grid``): each rating weighed by its rater's bias and own
noise, a rating at an end of the slider as censored, around the fitted prior of its
sampling method. Its expected squared error is that posterior's variance. A pair gets one
more rating only while

- it is below its maximum;
- the next rating, from a rater of the pool's noise, is expected to remove at least as
  much of its posterior variance as one removes from a pair in the scale's middle exactly
  at the precision target (``half_width``: half a 95% interval): ratings go where they
  reduce the expected error most, and the target sets how much reduction is still worth
  a rating;
- and, once its use in the dataset is settled (the probability that one more rating moves
  its score across the kind's positive threshold is below ``settled``), the rating would
  still meet the looser target ``half_width * SETTLED_WIDENING``: a pair far on one side
  of the threshold closes sooner, and the ratings go to the pairs whose use is in doubt.

``post`` is a posterior on the grid, ``(n, G)`` for n pairs; ``count`` their ratings so far.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from annotation.quality import score_grid

Z_95 = score_grid.Z_95

# The chance of crossing the threshold with one more rating below which a pair's use is
# settled, and how much looser a settled pair's precision target is. A settled pair's
# extra ratings serve the scores' error (correlations) but not the positives (retrieval):
# closing it outright (an infinite widening) left pairs far from the threshold at their
# minimum, about twice the squared error of the rest; 1.25 still cost RMSE (bench-adaptive's
# STS at 3.3 ratings a pair, 5 seeds, the same ratings: 0.435 against 0.427 without), so
# by default a settled pair is held to the same target (the use still decides nothing on
# its own; a campaign that values its positives over its scores' error may widen).
SETTLED_PROBABILITY = 0.01
SETTLED_WIDENING = 1.0


@dataclass(frozen=True)
class PairRatings:
    """One pair's ratings as the rule weighs them, each array ``(m,)``: the scores, their
    raters' biases and noise variances; the prior of its latent score on the grid
    (``prior: (G,)``; None: even over the scale)."""

    score: np.ndarray
    bias: np.ndarray
    noise_var: np.ndarray
    prior: np.ndarray | None = None


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

    def next_rating(self) -> np.ndarray:
        """The next rating's bins given each latent score (``score_grid.next_rating_matrix``)."""
        return score_grid.next_rating_matrix(float(np.sqrt(self.next_noise_var)))


def pair_posterior(ratings: PairRatings) -> np.ndarray:
    """``(1, G)``: the pair's posterior on the grid."""
    loglik = score_grid.rating_loglik(ratings.score, ratings.bias, np.sqrt(ratings.noise_var)).sum(axis=0)
    prior = score_grid.even_prior() if ratings.prior is None else ratings.prior
    return score_grid.posterior(loglik[None, :], prior)


def gain_floor(half_width, next_noise_var: float):
    """The gain of one more rating for a pair in the scale's middle exactly at the
    precision target (a normal posterior of sd ``half_width / Z_95``): the least a rating
    must bring. An array of half-widths gives an array of floors."""
    target = (np.asarray(half_width, dtype=np.float64) / Z_95) ** 2
    return target - 1.0 / (1.0 / target + 1.0 / next_noise_var)


def extends(post: np.ndarray, count, rule: AdaptiveRule) -> np.ndarray:
    """Whether each pair (posterior ``post`` ``(n, G)``, ``count`` ratings) gets one more
    slot."""
    gain, crossing = score_grid.gain_and_crossing(post, rule.next_rating(), rule.threshold)
    return extends_by_gain(gain, crossing, count, rule)


def extends_by_gain(gain, crossing, count, rule: AdaptiveRule) -> np.ndarray:
    """``extends`` given each pair's expected gain and chance of crossing the threshold
    (``score_grid.gain_and_crossing`` under the rule's next rating)."""
    half_width = np.where(np.asarray(crossing) < rule.settled, rule.half_width * rule.settled_widening, rule.half_width)
    return (np.asarray(count) < rule.maximum) & (np.asarray(gain) >= gain_floor(half_width, rule.next_noise_var))


def adaptive_extends(ratings: PairRatings, rule: AdaptiveRule) -> bool:
    """Whether a pair whose slots are all rated gets one more (False: it closes)."""
    return bool(extends(pair_posterior(ratings), ratings.score.size, rule)[0])
