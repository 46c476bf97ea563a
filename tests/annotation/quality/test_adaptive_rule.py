"""Adaptive N's rule (annotation/quality/adaptive_rule.py) and its budget and precision
solver (annotation/quality/adaptive_solver.py). Pure numpy, no database."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from annotation.quality import adaptive_rule
from annotation.quality.adaptive_rule import (
    Z_95,
    AdaptiveRule,
    PairRatings,
    adaptive_extends,
    crossing_probability,
    expected_gain,
    extends,
    gain_floor,
    normal_cdf,
    pair_posterior,
    truncated_variance,
)
from annotation.quality.adaptive_solver import KindMix, Planner, RaterPool


def ratings(score, bias=None, noise_sd=None, latent_var=math.inf, prior_mean=0.0) -> PairRatings:
    score = np.asarray(score, dtype=np.float64)
    bias = np.zeros_like(score) if bias is None else np.asarray(bias, dtype=np.float64)
    noise_sd = np.ones_like(score) if noise_sd is None else np.asarray(noise_sd, dtype=np.float64)
    return PairRatings(score=score, bias=bias, noise_var=noise_sd**2, latent_var=latent_var, prior_mean=prior_mean)


def rule(**values) -> AdaptiveRule:
    return AdaptiveRule(**{"maximum": 8, "half_width": 1.0, "threshold": 2.5, "next_noise_var": 1.0, **values})


def test_agreeing_ratings_leave_a_narrower_posterior_than_disputed_ones():
    assert pair_posterior(ratings([3.0, 3.1, 2.9]))[1] < pair_posterior(ratings([1.0, 3.0, 5.0]))[1]
    # Without any spread: the model's variance shrunk by the prior's weight alone.
    df = adaptive_rule.DISPERSION_PRIOR_DF
    assert pair_posterior(ratings([3.0, 3.0, 3.0])) == pytest.approx((3.0, df / (2 + df) / 3))


def test_the_raters_biases_come_out_and_the_prior_pulls_and_narrows():
    biased = ratings([3.5, 2.5, 3.0], bias=[0.5, -0.5, 0.0])
    assert pair_posterior(biased) == pytest.approx(pair_posterior(ratings([3.0, 3.0, 3.0])))
    mean, var = pair_posterior(ratings([2.0, 3.0, 4.0], latent_var=1.0, prior_mean=1.0))
    assert mean == pytest.approx((1.0 + 9.0) / 4)  # the prior weighs as one unit-noise rating
    assert var < pair_posterior(ratings([2.0, 3.0, 4.0]))[1]


def test_a_noisy_raters_outlier_moves_the_pair_less_than_a_precise_raters():
    noisy = pair_posterior(ratings([3.0, 3.0, 5.0], noise_sd=[0.5, 0.5, 2.0]))
    precise = pair_posterior(ratings([3.0, 3.0, 5.0], noise_sd=[2.0, 2.0, 0.5]))
    assert noisy[0] < precise[0] and noisy[1] < precise[1]


@given(st.floats(-8, 8))
def test_the_normal_distribution_function_is_scipys(x):
    assert normal_cdf(x) == pytest.approx(stats.norm.cdf(x), abs=2e-7)


@given(st.floats(-3.0, 8.0), st.floats(0.002, 4.0))
def test_the_truncated_variance_is_scipys_and_never_above_the_normals(mean, var):
    sd = math.sqrt(var)
    expected = stats.truncnorm.var((0 - mean) / sd, (5 - mean) / sd, loc=mean, scale=sd)
    assert truncated_variance(mean, var) == pytest.approx(expected, rel=2e-3, abs=1e-9)
    assert truncated_variance(mean, var) <= var


def test_far_off_the_scale_the_truncated_variance_is_an_exponential_tails():
    # a sds off: variance (1 / a)^2 (1 - 6 / a^2) to the next order.
    assert truncated_variance(-30.0, 1.0) == pytest.approx((1 / 30) ** 2 * (1 - 6 / 900), rel=1e-4)
    assert truncated_variance(85.0, 4.0) == pytest.approx((2.0 / 40) ** 2 * (1 - 6 / 1600), rel=1e-4)
    assert truncated_variance(-0.5, 0.0036) == pytest.approx(stats.truncnorm.var(8.33, 91.7, -0.5, 0.06), rel=2e-3)


def test_a_rating_removes_the_plain_posterior_width_mid_scale_and_less_at_an_end():
    var, noise = 0.1, 0.64
    plain = var - 1 / (1 / var + 1 / noise)
    assert expected_gain(2.5, var, noise) == pytest.approx(plain, rel=1e-4)
    assert expected_gain(4.9, var, noise) < 0.5 * plain
    assert gain_floor(Z_95 * math.sqrt(var), noise) == pytest.approx(plain)


def test_the_chance_of_crossing_falls_with_the_distance_to_the_threshold():
    near, far = crossing_probability(np.array([2.6, 4.5]), 0.2, 1.0, 2.5)
    assert near > 0.25 and far < 1e-3


@given(
    mean=st.floats(0, 5),
    var=st.floats(0.005, 3),
    count=st.integers(1, 10),
    maximum=st.integers(1, 10),
    half_width=st.floats(0.05, 3),
)
def test_no_pair_goes_over_its_maximum_and_a_wider_target_never_extends_more(mean, var, count, maximum, half_width):
    narrow = bool(extends(mean, var, count, rule(maximum=maximum, half_width=half_width)))
    wide = bool(extends(mean, var, count, rule(maximum=maximum, half_width=half_width * 1.5)))
    assert not (count >= maximum and narrow)
    assert narrow or not wide


def test_a_pair_whose_use_is_settled_is_held_to_the_looser_target():
    # Near the threshold the target itself decides; far from it, the widened target.
    mean_var = 0.0625  # posterior sd 0.25: half-width 0.49
    strict = rule(half_width=0.45)
    assert bool(extends(2.6, mean_var, 3, strict))
    assert not bool(extends(4.0, mean_var, 3, strict))  # settled: 0.45 * 1.25 > 0.49
    assert bool(extends(4.0, mean_var, 3, rule(half_width=0.45, settled_widening=1.0)))


def test_the_rule_closes_agreeing_pairs_extends_disputed_ones_and_caps():
    agreeing, disputed = ratings([4.8, 4.9, 5.0]), ratings([0.0, 2.5, 5.0])
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
        prior_mean=np.array([3.0, 1.2]),
        prior_var=np.array([1.0, 0.8]),
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
    assert wide.error >= narrow.error - 1e-12


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
