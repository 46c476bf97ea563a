"""Adaptive N's budget and precision target, each told from the other. Pure numpy, no Django.

A campaign sets either a budget (ratings per pair on average, from its total) or a
precision target (half a 95% interval); what the other will be depends on its raters and
its pairs, which the rater-effects model knows. So the rule
(``annotation.quality.adaptive_rule``) is run on simulated pairs drawn from the fit: per
kind, latent scores from its sampling methods' priors, raters drawn from its pool (each
with their fitted bias and noise, as often as they rated), their ratings clipped to the
scale and rounded as the slider stores them. The same draws serve every target tried
(``seed``), so the ratings spent fall as the target widens and a bisection finds the
target that meets a budget, or the error of another plan (fixed N with the model).

A plan's ``error`` is the expected squared error of a pair's score (its truncated
posterior variance, ``adaptive_rule.truncated_variance``), averaged over the pairs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from annotation.core.cxc import SCORE_MAX, SCORE_MIN
from annotation.quality import adaptive_rule
from annotation.quality.adaptive_rule import DISPERSION_PRIOR_DF, AdaptiveRule

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
    methods' priors (arrays ``(g,)``: mean, variance, share of the pairs) and raters."""

    pairs: int
    threshold: float
    prior_mean: np.ndarray
    prior_var: np.ndarray
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
    """Simulated pairs of one kind: each pair's rating sequence ``(n, maximum)`` as the
    rule sees it (bias-corrected score, weight) and its prior."""

    corrected: np.ndarray
    weight: np.ndarray
    prior_mean: np.ndarray
    prior_precision: np.ndarray
    mix: KindMix


def _draw(mix: KindMix, maximum: int, rng: np.random.Generator, n: int) -> _Draws:
    share = mix.prior_share / mix.prior_share.sum()
    group = rng.choice(share.size, size=n, p=share)
    latent = np.clip(rng.normal(mix.prior_mean[group], np.sqrt(mix.prior_var[group])), SCORE_MIN, SCORE_MAX)
    pool = mix.pool
    rater = rng.choice(pool.bias.size, size=(n, maximum), p=pool.weight / pool.weight.sum())
    noise = rng.normal(0.0, 1.0, (n, maximum)) * np.sqrt(pool.noise_var[rater])
    score = np.round(np.clip(latent[:, None] + pool.bias[rater] + noise, SCORE_MIN, SCORE_MAX), 2)
    return _Draws(
        corrected=score - pool.bias[rater],
        weight=1.0 / pool.noise_var[rater],
        prior_mean=mix.prior_mean[group],
        prior_precision=1.0 / mix.prior_var[group],
        mix=mix,
    )


def _posterior(draws: _Draws, count: int, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, variance with the dispersion, the model's variance) of the simulated pairs
    ``rows`` after ``count`` ratings."""
    w, c = draws.weight[rows, :count], draws.corrected[rows, :count]
    sum_w, sum_wc = w.sum(axis=1), (w * c).sum(axis=1)
    prior_precision = draws.prior_precision[rows]
    precision = prior_precision + sum_w
    mean = (prior_precision * draws.prior_mean[rows] + sum_wc) / precision
    spread = np.maximum((w * c * c).sum(axis=1) - sum_wc**2 / sum_w, 0.0)
    dispersion = (spread + DISPERSION_PRIOR_DF) / (count - 1 + DISPERSION_PRIOR_DF)
    return mean, dispersion / precision, 1.0 / precision


def _run(draws: _Draws, half_width: float | None, minimum: int, maximum: int, settled: tuple[float, float]):
    """Ratings per simulated pair under the rule (``half_width`` None: fixed ``minimum``),
    and the expected squared error of each."""
    n = draws.corrected.shape[0]
    count = np.full(n, minimum)
    if half_width is not None:
        rule = AdaptiveRule(
            maximum=maximum, half_width=half_width, threshold=draws.mix.threshold,
            next_noise_var=draws.mix.pool.pooled_var, settled=settled[0], settled_widening=settled[1],
        )  # fmt: skip
        active = np.arange(n)
        for done in range(minimum, maximum):
            mean, var, _ = _posterior(draws, done, active)
            active = active[adaptive_rule.extends(mean, var, done, rule)]
            count[active] += 1
    error = np.empty(n)
    for done in np.unique(count):
        at = np.flatnonzero(count == done)
        mean, _, model_var = _posterior(draws, int(done), at)
        error[at] = adaptive_rule.truncated_variance(mean, model_var)
    return count, error


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
        self.kinds = [_draw(mix, maximum, rng, draws) for mix in kinds if mix.pairs > 0]
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
