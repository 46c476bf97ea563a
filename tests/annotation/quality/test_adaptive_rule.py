"""Adaptive N's rule (annotation/quality/adaptive_rule.py) and its budget and precision
solver (annotation/quality/adaptive_solver.py). Pure numpy, no database."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.quality import score_grid
from annotation.quality.adaptive_rule import (
    Z_95,
    AdaptiveRule,
    PairRatings,
    adaptive_extends,
    extends,
    gain_floor,
    pair_posterior,
)
from annotation.quality.adaptive_solver import KindMix, Planner, RaterPool
from annotation.quality.score_grid import GRID, posterior_mean, posterior_var


def ratings(score, bias=None, noise_sd=None, prior=None) -> PairRatings:
    score = np.asarray(score, dtype=np.float64)
    bias = np.zeros_like(score) if bias is None else np.asarray(bias, dtype=np.float64)
    noise_sd = np.ones_like(score) if noise_sd is None else np.asarray(noise_sd, dtype=np.float64)
    return PairRatings(score=score, bias=bias, noise_var=noise_sd**2, prior=prior)


def mean_var(pair: PairRatings) -> tuple[float, float]:
    post = pair_posterior(pair)
    return float(posterior_mean(post)[0]), float(posterior_var(post)[0])


def normal_prior(mean: float, sd: float) -> np.ndarray:
    return score_grid.stored_prior({"mean": mean, "sd": sd})


def rule(**values) -> AdaptiveRule:
    return AdaptiveRule(**{"maximum": 8, "half_width": 1.0, "threshold": 2.5, "next_noise_var": 1.0, **values})


def test_the_raters_biases_come_out_and_the_prior_pulls_and_narrows():
    biased = ratings([3.5, 2.5, 3.0], bias=[0.5, -0.5, 0.0])
    assert mean_var(biased) == pytest.approx(mean_var(ratings([3.0, 3.0, 3.0])))
    plain, pulled = mean_var(ratings([2.0, 3.0, 4.0])), mean_var(ratings([2.0, 3.0, 4.0], prior=normal_prior(1.0, 1.0)))
    assert pulled[0] == pytest.approx((1.0 + 9.0) / 4, abs=0.05)  # the prior weighs as one unit-noise rating
    assert pulled[1] < plain[1]


def test_a_noisy_raters_outlier_moves_the_pair_less_than_a_precise_raters():
    noisy = mean_var(ratings([2.0, 2.0, 4.0], noise_sd=[0.5, 0.5, 2.0]))
    precise = mean_var(ratings([2.0, 2.0, 4.0], noise_sd=[2.0, 2.0, 0.5]))
    assert noisy[0] < precise[0] and noisy[1] < precise[1]


def test_a_rating_at_the_top_end_says_at_least_five():
    """Two raters at 5: the plain mean says 5, the censored posterior that the latent is
    high, most likely near the top, with the scale's end leaving it little room."""
    at_end = mean_var(ratings([5.0, 5.0], noise_sd=[0.8, 0.8]))
    assert 4.3 < at_end[0] < 4.9
    assert at_end[1] < 0.5 * mean_var(ratings([4.0, 4.0], noise_sd=[0.8, 0.8]))[1]


def post_at(mean: float, sd: float) -> np.ndarray:
    weights = np.exp(-0.5 * ((GRID - mean) / sd) ** 2)
    return (weights / weights.sum())[None]


def test_a_rating_removes_the_plain_posterior_width_mid_scale_and_less_at_an_end():
    var, noise = 0.1, 0.64
    plain = var - 1 / (1 / var + 1 / noise)
    assert gain_floor(Z_95 * math.sqrt(var), noise) == pytest.approx(plain)
    # Just wider than the target mid-scale: extended; just narrower: closed (the grid's
    # gain is the normal's within 0.1%); wider than the target at an end: closed.
    wider = rule(half_width=Z_95 * math.sqrt(var) * 0.98, next_noise_var=noise, settled=0.0)
    narrower = rule(half_width=Z_95 * math.sqrt(var) * 1.02, next_noise_var=noise, settled=0.0)
    assert bool(extends(post_at(2.5, math.sqrt(var)), 3, wider)[0])
    assert not bool(extends(post_at(2.5, math.sqrt(var)), 3, narrower)[0])
    assert not bool(extends(post_at(4.9, math.sqrt(var)), 3, wider)[0])


@given(
    mean=st.floats(0, 5),
    sd=st.floats(0.07, 1.7),
    count=st.integers(1, 10),
    maximum=st.integers(1, 10),
    half_width=st.floats(0.05, 3),
)
def test_no_pair_goes_over_its_maximum_and_a_wider_target_never_extends_more(mean, sd, count, maximum, half_width):
    post = post_at(mean, sd)
    narrow = bool(extends(post, count, rule(maximum=maximum, half_width=half_width))[0])
    wide = bool(extends(post, count, rule(maximum=maximum, half_width=half_width * 1.5))[0])
    assert not (count >= maximum and narrow)
    assert narrow or not wide


def test_a_pair_whose_use_is_settled_is_held_to_the_looser_target():
    # Posterior sd 0.25 (half-width 0.49). Near the threshold the target itself decides;
    # far from it (settled), the widened target: 0.45 x 1.25 > 0.49.
    strict = rule(half_width=0.45, settled_widening=1.25)
    assert bool(extends(post_at(2.6, 0.25), 3, strict)[0])
    assert not bool(extends(post_at(3.8, 0.25), 3, strict)[0])
    assert bool(extends(post_at(3.8, 0.25), 3, rule(half_width=0.45, settled_widening=1.0))[0])


def test_the_rule_closes_agreeing_pairs_extends_disputed_ones_and_caps():
    agreeing, disputed = ratings([4.8, 4.9, 5.0]), ratings([0.5, 2.5, 4.5])
    assert not adaptive_extends(agreeing, rule())
    assert adaptive_extends(disputed, rule())
    assert not adaptive_extends(disputed, rule(maximum=3))


def test_a_rule_without_a_target_or_a_pool_noise_is_refused():
    with pytest.raises(ValueError, match="no adaptive rule"):
        rule(half_width=0)
    with pytest.raises(ValueError, match="no adaptive rule"):
        rule(next_noise_var=0)


def pool(seed=0) -> RaterPool:
    rng = np.random.default_rng(seed)
    noise_var = np.full(30, 0.64)
    noise_var[:3] = 4.0
    return RaterPool(bias=rng.normal(0, 0.3, 30), noise_var=noise_var, weight=np.ones(30), pooled_var=0.9)


def sts_like(pairs=1000) -> KindMix:
    return KindMix(
        pairs=pairs,
        threshold=3.0,
        prior=np.array([normal_prior(3.0, 1.0), normal_prior(1.2, 0.9)]),
        prior_share=np.array([0.57, 0.43]),
        pool=pool(),
    )


def planner(**values) -> Planner:
    return Planner([sts_like()], **{"minimum": 2, "maximum": 8, "draws": 400, **values})


@settings(max_examples=15, deadline=None)
@given(st.floats(0.05, 2.0), st.floats(1.05, 3.0))
def test_a_wider_target_spends_no_more_and_reaches_no_less_error(half_width, factor):
    plans = planner()
    narrow, wide = plans.plan(half_width), plans.plan(half_width * factor)
    assert 2 <= wide.ratings_per_pair <= narrow.ratings_per_pair <= 8
    # One more rating lowers a pair's posterior variance on average, not in every draw (a
    # rating at odds with the others can widen it): the error within a hair of monotone.
    assert wide.error >= narrow.error - 1e-5


def test_a_budget_is_met_from_below_and_told_its_target():
    plans = planner()
    plan = plans.for_budget(3.3)
    assert 3.2 < plan.ratings_per_pair <= 3.3
    assert plans.plan(plan.half_width * 0.97).ratings_per_pair > plan.ratings_per_pair
    assert plans.plan(plan.half_width) == plan  # the same draws each time: the same answer


def test_budgets_beyond_the_minimum_or_the_maximum_take_the_ends():
    plans = planner()
    assert plans.for_budget(1.0).ratings_per_pair == 2.0
    assert plans.for_budget(20.0).half_width == pytest.approx(0.01)


def test_an_error_target_gets_the_widest_target_that_reaches_it():
    plans = planner()
    fixed5 = Planner([sts_like()], minimum=5, maximum=6, draws=400).plan(None)
    plan = plans.for_error(fixed5.error)
    assert plan.error <= fixed5.error
    assert plans.plan(plan.half_width * 1.03).error > fixed5.error


def test_kinds_weigh_by_their_pairs_and_a_plan_needs_pairs():
    one = Planner([sts_like(100)], minimum=2, maximum=8, draws=400).plan(0.8)
    both = Planner([sts_like(100), sts_like(0)], minimum=2, maximum=8, draws=400).plan(0.8)
    assert both.ratings_per_pair == one.ratings_per_pair
    with pytest.raises(ValueError, match="needs pairs"):
        Planner([sts_like(0)], minimum=2, maximum=8)
    with pytest.raises(ValueError, match="above the minimum"):
        Planner([sts_like()], minimum=3, maximum=3)
