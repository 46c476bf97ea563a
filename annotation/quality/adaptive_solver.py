"""Adaptive N's budget and precision target, each told from the other. Pure numpy, no Django.

A campaign sets either a budget (ratings per pair on average, from its total) or a
precision target (half a 95% interval); what the other will be depends on its raters and
its pairs, which the rater-effects model knows. So the rule
(``annotation.quality.adaptive_rule``) is run on simulated pairs drawn from the fit: per
kind, latent scores from its sampling methods' priors on the grid, raters drawn from its
pool (each with their fitted bias and noise, as often as they rated), their ratings
clipped to the scale and rounded as the slider stores them. The same draws serve every
target tried (``seed``), so the ratings spent fall as the target widens and a bisection
finds the target that meets a budget, or the error of another plan (fixed N with the
model).

A plan's ``error`` is the expected squared error of a pair's score (its posterior variance
on the grid, ``score_grid``), averaged over the pairs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from annotation.core.cxc import SCORE_MAX, SCORE_MIN
from annotation.quality import adaptive_rule, score_grid
from annotation.quality.adaptive_rule import AdaptiveRule

DRAWS = 2_000  # simulated pairs per kind
WIDEST, NARROWEST = 5.0, 0.01  # the precision targets searched (half-widths on the scale)
BISECTIONS = 24  # the target to within 0.03% of itself


class AdaptivePlanError(ValueError):
    """A plan that cannot be made; the message names the problem."""


@dataclass(frozen=True)
class RaterPool:
    """The raters of one kind, arrays ``(k,)``: fitted bias, noise variance and how often
    each rates (weights, any scale); ``pooled_var`` the noise the rule expects of the next
    rater."""

    bias: np.ndarray
    noise_var: np.ndarray
    weight: np.ndarray
    pooled_var: float

    @classmethod
    def unknown(cls) -> RaterPool:
        """No fit yet: one rater of bias 0 and unit noise, as the rule then assumes."""
        return cls(bias=np.zeros(1), noise_var=np.ones(1), weight=np.ones(1), pooled_var=1.0)


@dataclass(frozen=True)
class KindMix:
    """One kind's pairs in a batch: how many, its positive threshold, its sampling
    methods' priors on the grid (``prior: (g, G)``) and shares of the pairs (``(g,)``),
    and its raters."""

    pairs: int
    threshold: float
    prior: np.ndarray
    prior_share: np.ndarray
    pool: RaterPool


@dataclass(frozen=True)
class Plan:
    """A precision target and what it is expected to spend and reach, per pair."""

    half_width: float
    ratings_per_pair: float
    error: float


@dataclass(frozen=True)
class _Draws:
    """Simulated pairs of one kind, arrays ``(n, maximum + 1)`` by the ratings so far (0 to
    the maximum): each pair's expected squared error (its posterior variance), and, for
    the next rating from a rater of the pool's noise, its expected gain and chance of
    crossing the threshold. None of them depends on the target, so every target tried
    reads them."""

    error: np.ndarray
    gain: np.ndarray
    crossing: np.ndarray
    mix: KindMix


def _draw(mix: KindMix, minimum: int, maximum: int, rng: np.random.Generator, n: int) -> _Draws:
    share = mix.prior_share / mix.prior_share.sum()
    group = rng.choice(share.size, size=n, p=share)
    grid = score_grid.GRID
    cell = _draw_cells(mix.prior, group, rng)
    step = grid[1] - grid[0]
    latent = np.clip(grid[cell] + rng.uniform(-step / 2, step / 2, n), SCORE_MIN, SCORE_MAX)
    pool = mix.pool
    rater = rng.choice(pool.bias.size, size=(n, maximum), p=pool.weight / pool.weight.sum())
    noise_sd = np.sqrt(pool.noise_var[rater])
    noise = rng.normal(0.0, 1.0, (n, maximum)) * noise_sd
    score = np.round(np.clip(latent[:, None] + pool.bias[rater] + noise, SCORE_MIN, SCORE_MAX), 2)
    loglik = score_grid.rating_loglik(score.ravel(), pool.bias[rater].ravel(), noise_sd.ravel())
    loglik = np.cumsum(loglik.reshape(n, maximum, grid.size), axis=1)
    prior = mix.prior[group] / mix.prior[group].sum(axis=1, keepdims=True)
    matrix = score_grid.next_rating_matrix(math.sqrt(mix.pool.pooled_var))
    error, gain, crossing = (np.full((n, maximum + 1), np.nan) for _ in range(3))
    for done in range(minimum, maximum + 1):
        post = score_grid.posterior(loglik[:, done - 1], prior)
        error[:, done] = score_grid.posterior_var(post)
        if done < maximum:
            gain[:, done], crossing[:, done] = score_grid.gain_and_crossing(post, matrix, mix.threshold)
    return _Draws(error=error, gain=gain, crossing=crossing, mix=mix)


def _draw_cells(prior: np.ndarray, group: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A grid cell for each pair from its group's prior (inverse distribution function)."""
    cumulative = np.cumsum(prior / prior.sum(axis=1, keepdims=True), axis=1)
    uniform = rng.uniform(0.0, 1.0, group.size)
    return np.minimum(np.sum(cumulative[group] < uniform[:, None], axis=1), prior.shape[1] - 1)


def _run(draws: _Draws, half_width: float | None, minimum: int, maximum: int, settled: tuple[float, float]):
    """Ratings per simulated pair under the rule (``half_width`` None: fixed ``minimum``),
    and the expected squared error of each."""
    n = draws.error.shape[0]
    count = np.full(n, minimum)
    if half_width is not None:
        rule = AdaptiveRule(
            maximum=maximum, half_width=half_width, threshold=draws.mix.threshold,
            next_noise_var=draws.mix.pool.pooled_var, settled=settled[0], settled_widening=settled[1],
        )  # fmt: skip
        active = np.arange(n)
        for done in range(minimum, maximum):
            gain, crossing = draws.gain[active, done], draws.crossing[active, done]
            active = active[adaptive_rule.extends_by_gain(gain, crossing, done, rule)]
            count[active] += 1
    return count, draws.error[np.arange(n), count]


class Planner:
    """Plans for one batch: its kinds, its minimum and maximum, the settled probability."""

    def __init__(
        self,
        kinds: list[KindMix],
        *,
        minimum: int,
        maximum: int,
        settled: float = adaptive_rule.SETTLED_PROBABILITY,
        settled_widening: float = adaptive_rule.SETTLED_WIDENING,
        seed: int = 0,
        draws: int = DRAWS,
    ):
        if not kinds or sum(mix.pairs for mix in kinds) <= 0:
            raise AdaptivePlanError("a plan needs pairs")
        if not 1 <= minimum < maximum:
            raise AdaptivePlanError(f"the maximum ({maximum}) must be above the minimum ({minimum})")
        rng = np.random.default_rng(seed)
        self.kinds = [_draw(mix, minimum, maximum, rng, draws) for mix in kinds if mix.pairs > 0]
        self.minimum, self.maximum = minimum, maximum
        self.settled, self.settled_widening = settled, settled_widening
        total = sum(d.mix.pairs for d in self.kinds)
        self.shares = [d.mix.pairs / total for d in self.kinds]

    def plan(self, half_width: float | None) -> Plan:
        """What the precision target ``half_width`` spends and reaches (None: fixed at the
        minimum, the model's error with that many ratings)."""
        ratings = error = 0.0
        for share, draws in zip(self.shares, self.kinds, strict=True):
            count, errors = _run(draws, half_width, self.minimum, self.maximum, (self.settled, self.settled_widening))
            ratings += share * float(count.mean())
            error += share * float(errors.mean())
        return Plan(half_width=math.nan if half_width is None else half_width, ratings_per_pair=ratings, error=error)

    def for_budget(self, ratings_per_pair: float) -> Plan:
        """The narrowest target whose ratings stay within ``ratings_per_pair``. A budget of
        the minimum or less gets the widest target, which closes every pair at its minimum
        (the narrowest target that spends nothing on the simulated pairs could still extend
        a pair whose raters disagree more than any simulated one)."""
        if ratings_per_pair <= self.minimum:
            return self.plan(WIDEST)
        return self._bisect(lambda plan: plan.ratings_per_pair <= ratings_per_pair)

    def for_error(self, error: float) -> Plan:
        """The widest target whose expected error is at most ``error``."""
        return self._bisect(lambda plan: plan.error <= error, widest_first=False)

    def _bisect(self, meets, *, widest_first: bool = True) -> Plan:
        """Bisect on the log of the target. With ``widest_first`` the narrowest target that
        ``meets`` (ratings fall as the target widens), else the widest (error rises)."""
        low, high = math.log(NARROWEST), math.log(WIDEST)
        edge = self.plan(WIDEST if widest_first else NARROWEST)
        if not meets(edge):
            return edge
        other = self.plan(NARROWEST if widest_first else WIDEST)
        if meets(other):
            return other
        best = edge
        for _ in range(BISECTIONS):
            middle = (low + high) / 2
            plan = self.plan(math.exp(middle))
            if meets(plan):
                best = plan
                high, low = (middle, low) if widest_first else (high, middle)
            else:
                low, high = (middle, high) if widest_first else (low, middle)
        return best
