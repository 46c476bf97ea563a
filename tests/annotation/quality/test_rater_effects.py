"""The rater-effects model (annotation/quality/rater_effects.py) on generated ratings: it finds
the biases and noise it was given, is never worse than the plain mean, its intervals
cover, it agrees with Netflix's sureal (MLE, content-oblivious) where both apply, and it
refuses input it cannot fit. No database."""

from __future__ import annotations

import contextlib
import io
import types

import numpy as np
import pytest
from scipy import stats

from annotation.quality import rater_effects, score_grid
from annotation.quality.rater_effects import (
    RaterModelError,
    RaterModelSettings,
    chi_square_quantile,
    fit,
)


def generated(
    rng, *, n_pairs: int, n_raters: int, per_pair: int = 5, noise_levels=(0.5, 0.8, 1.1), poor=0.0, clip=True
):
    """Ratings of ``n_pairs`` pairs, each by ``per_pair`` distinct raters drawn at random:
    latent uniform 0-5, bias sd 0.3, noise sd drawn from ``noise_levels`` (a ``poor``
    share of raters 2.0). Returns (pair, rater, score, truth)."""
    latent = rng.uniform(0, 5, n_pairs)
    bias = rng.normal(0, 0.3, n_raters)
    noise = rng.choice(noise_levels, n_raters)
    noise[: round(poor * n_raters)] = 2.0
    pair = np.repeat(np.arange(n_pairs), per_pair)
    rater = np.concatenate([rng.choice(n_raters, per_pair, replace=False) for _ in range(n_pairs)])
    score = latent[pair] + bias[rater] + rng.normal(0, 1, pair.size) * noise[rater]
    if clip:
        score = np.clip(score, 0, 5)
    truth = types.SimpleNamespace(latent=latent, bias=bias, noise=noise)
    return pair, rater, score, truth


def rmse(estimate, truth) -> float:
    return float(np.sqrt(np.mean((estimate - truth) ** 2)))


def plain_mean(pair, score, n_pairs):
    return np.bincount(pair, weights=score, minlength=n_pairs) / np.bincount(pair, minlength=n_pairs)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_it_recovers_the_raters_biases_and_noise(seed):
    rng = np.random.default_rng(seed)
    # 40 raters, 4,000 pairs x 5: 500 ratings per rater on average, none under 200; the
    # ratings clipped to the slider, as they are (the ends censored, so still recovered).
    pair, rater, score, truth = generated(rng, n_pairs=4000, n_raters=40)
    assert np.bincount(rater).min() >= 200
    model = fit(pair, rater, score)
    assert model.converged
    assert np.corrcoef(truth.bias, model.rater_bias)[0, 1] >= 0.95
    assert np.corrcoef(truth.noise, model.rater_noise_sd)[0, 1] >= 0.95
    # Not only ranked alike: the values themselves, within their sampling error (one
    # rater of seed 1 is 0.146 off even unclipped under the normal model; on these clipped
    # ratings the normal model alone misses the noise by up to 0.22).
    assert np.max(np.abs(model.rater_bias - (truth.bias - truth.bias.mean()))) < 0.16
    assert np.max(np.abs(model.rater_noise_sd - truth.noise)) < 0.15


@pytest.mark.parametrize("levels", [(0.8,), (0.5, 0.8, 1.1), (0.3, 2.0)])
@pytest.mark.parametrize("seed", range(5))
def test_it_is_never_worse_than_the_plain_mean(seed, levels):
    rng = np.random.default_rng(100 + seed)
    pair, rater, score, truth = generated(rng, n_pairs=1500, n_raters=30, noise_levels=levels, poor=0.1)
    model = fit(pair, rater, score)
    assert rmse(model.pair_score, truth.latent) <= rmse(plain_mean(pair, score, 1500), truth.latent)


def test_equal_raters_rank_the_pairs_as_their_mean_does():
    """With one noise level, no bias and as many ratings a pair, a pair's ratings inside the
    scale say little but their mean: the model's score may move it towards where pairs
    lie, but hardly past a pair whose mean is higher (only the fitted raters' small
    differences reorder a few)."""
    rng = np.random.default_rng(7)
    pair, rater, score, truth = generated(rng, n_pairs=1000, n_raters=20, noise_levels=(0.8,), clip=False)
    score = score - truth.bias[rater]
    model = fit(pair, rater, score)
    mean = plain_mean(pair, score, 1000)
    inside = np.bincount(pair, weights=(score <= 0) | (score >= 5), minlength=1000) == 0
    assert stats.spearmanr(mean[inside], model.pair_score[inside]).statistic > 0.998
    assert np.ptp(model.rater_noise_sd) < 0.3


def test_the_intervals_cover_as_stated():
    rng = np.random.default_rng(11)
    pair, rater, score, truth = generated(rng, n_pairs=4000, n_raters=40, clip=False)
    truth.latent[:] = np.clip(truth.latent, 0.5, 4.5)  # far from the clipped ends of the scale
    score = truth.latent[pair] + truth.bias[rater] + rng.normal(0, 1, pair.size) * truth.noise[rater]
    model = fit(pair, rater, score)
    covered = np.mean((truth.latent >= model.pair_low) & (truth.latent <= model.pair_high))
    assert 0.93 <= covered <= 0.97
    centred = truth.bias - truth.bias.mean()
    assert np.mean((centred >= model.rater_bias_low) & (centred <= model.rater_bias_high)) >= 0.85
    assert np.mean((truth.noise >= model.rater_noise_low) & (truth.noise <= model.rater_noise_high)) >= 0.85
    assert np.all(model.rater_noise_low < model.rater_noise_sd)
    assert np.all(model.rater_noise_sd < model.rater_noise_high)


def test_few_ratings_are_shrunk_towards_the_crowd():
    rng = np.random.default_rng(3)
    pair, rater, score, _ = generated(rng, n_pairs=600, n_raters=12, clip=False)
    # A newcomer with two ratings, both 1.5 above the pairs' other ratings.
    newcomer = 12
    extra_pairs = np.array([0, 1])
    extra = plain_mean(pair, score, 600)[extra_pairs] + 1.5
    model = fit(
        np.concatenate([pair, extra_pairs]),
        np.concatenate([rater, [newcomer, newcomer]]),
        np.concatenate([score, extra]),
    )
    assert 0.1 < model.rater_bias[newcomer] < 0.75  # towards 0, not the raw 1.5
    assert model.rater_bias_high[newcomer] - model.rater_bias_low[newcomer] > 1.0  # and unsure of it
    assert model.rater_count[newcomer] == 2


def test_a_pair_without_ratings_gets_the_prior_and_a_wide_interval():
    rng = np.random.default_rng(5)
    pair, rater, score, _ = generated(rng, n_pairs=300, n_raters=10)
    model = fit(pair, rater, score, n_pairs=301, n_raters=11)
    assert model.pair_score[300] == pytest.approx(score_grid.GRID @ model.group_prior[0])  # the prior's mean
    assert (model.pair_high - model.pair_low)[300] > 2 * (model.pair_high - model.pair_low)[:300].max()
    assert (model.rater_bias[10], model.rater_count[10]) == (0.0, 0)


def test_the_half_width_of_one_pair_matches_the_fit():
    rng = np.random.default_rng(9)
    pair, rater, score, _ = generated(rng, n_pairs=800, n_raters=16)
    model = fit(pair, rater, score)
    for index in (0, 17, 799):
        noise_var = model.rater_noise_sd[rater[pair == index]] ** 2
        half = rater_effects.pair_interval_half_width(noise_var, model.group_sd[0] ** 2)
        assert half == pytest.approx(rater_effects.Z_95 / np.sqrt(model.pair_precision[index]), rel=1e-9)
    assert rater_effects.pair_interval_half_width(np.array([0.64] * 8), 1.0) < (
        rater_effects.pair_interval_half_width(np.array([0.64] * 3), 1.0)
    )


@pytest.mark.parametrize(("df", "within"), [(3, 0.2), (5, 0.05), (10, 0.01), (50, 0.01), (400, 0.01)])
def test_the_chi_square_quantiles_are_close_to_scipys(df, within):
    for z in (-rater_effects.Z_95, rater_effects.Z_95):
        exact = stats.chi2.ppf(stats.norm.cdf(z), df)
        assert chi_square_quantile(np.array([df]), z)[0] == pytest.approx(exact, rel=within)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # sureal divides by zero on its way
def test_it_agrees_with_sureals_content_oblivious_mle():
    """sureal (Netflix) fits the same model without priors; on well-filled data both
    must find the same raters."""
    from sureal import dataset_reader as reader
    from sureal import subjective_model

    rng = np.random.default_rng(1)
    pair, rater, score, _ = generated(rng, n_pairs=300, n_raters=20, clip=False)
    dataset = types.SimpleNamespace(
        dataset_name="generated",
        ref_videos=[{"content_id": j, "content_name": f"c{j}"} for j in range(300)],
        dis_videos=[{"asset_id": j, "content_id": j, "os": {}} for j in range(300)],
    )
    for p, r, s in zip(pair, rater, score, strict=True):
        dataset.dis_videos[p]["os"][f"r{r:03d}"] = float(s)
    with contextlib.redirect_stdout(io.StringIO()):  # it prints every iteration
        oracle = subjective_model.MaximumLikelihoodEstimationModelContentOblivious(
            reader.RawDatasetReader(dataset)
        ).run_modeling()
    model = fit(pair, rater, score)
    assert np.corrcoef(oracle["observer_bias"], model.rater_bias)[0, 1] > 0.99
    assert np.corrcoef(oracle["observer_inconsistency"], model.rater_noise_sd)[0, 1] > 0.9
    assert np.corrcoef(oracle["quality_scores"], model.pair_score)[0, 1] > 0.99


@pytest.mark.parametrize(
    ("pair", "rater", "score", "message"),
    [
        ([0, 1], [0], [1.0, 2.0], "flat arrays of one length"),
        ([], [], [], "no ratings"),
        ([0.5], [0], [1.0], "integer indices"),
        ([-1], [0], [1.0], "0 or more"),
        ([0], [0], [float("nan")], "NaN or infinite"),
    ],
)
def test_bad_input_is_refused_naming_the_problem(pair, rater, score, message):
    with pytest.raises(RaterModelError, match=message):
        fit(np.array(pair), np.array(rater, dtype=np.int64), np.array(score))


def test_an_index_beyond_the_stated_counts_is_refused():
    with pytest.raises(RaterModelError, match="beyond n_pairs"):
        fit(np.array([0, 3]), np.array([0, 1]), np.array([1.0, 2.0]), n_pairs=2)


def test_the_settings_are_kept_with_the_fit():
    settings = RaterModelSettings(bias_prior_sd=0.25, noise_prior_df=8.0)
    rng = np.random.default_rng(0)
    pair, rater, score, _ = generated(rng, n_pairs=100, n_raters=8)
    assert fit(pair, rater, score, settings=settings).settings.as_dict()["bias_prior_sd"] == 0.25


def test_pairs_of_a_group_share_a_prior_of_their_own():
    """Two sampling methods far apart (originals near 5, the rest low): a prior per group
    shrinks each pair towards its own group, not towards the middle of both."""
    rng = np.random.default_rng(21)
    n_pairs = 600
    group = np.repeat([0, 1], n_pairs // 2)
    latent = np.where(group == 0, rng.normal(4.7, 0.2, n_pairs), rng.normal(1.5, 0.8, n_pairs)).clip(0, 5)
    pair = np.repeat(np.arange(n_pairs), 3)
    rater = np.concatenate([rng.choice(30, 3, replace=False) for _ in range(n_pairs)])
    score = np.clip(latent[pair] + rng.normal(0, 0.8, pair.size), 0, 5)
    alone, grouped = fit(pair, rater, score), fit(pair, rater, score, group=group)
    assert rmse(grouped.pair_score, latent) < rmse(alone.pair_score, latent)
    high = score_grid.GRID >= 4.0
    assert grouped.group_prior[0, high].sum() > 0.9 > grouped.group_prior[1, high].sum()
    assert grouped.group_mean == pytest.approx([4.6, 1.5], abs=0.15)
    assert grouped.group_sd[0] < grouped.group_sd[1] < alone.latent_sd
    assert alone.group_mean.shape == (1,)


def test_a_group_of_few_pairs_takes_the_prior_of_all():
    rng = np.random.default_rng(4)
    pair, rater, score, truth = generated(rng, n_pairs=300, n_raters=10)
    group = np.zeros(300, dtype=np.int64)
    group[np.argsort(truth.latent)[-(rater_effects.MIN_GROUP_PAIRS - 1) :]] = 1  # the highest pairs
    model = fit(pair, rater, score, group=group)
    assert model.group_mean[1] == pytest.approx(model.grand_mean, abs=0.1)  # not its own 4.7 or so
    assert model.group_sd[1] == pytest.approx(model.latent_sd, rel=0.05)
    with pytest.raises(RaterModelError, match="group index"):
        fit(pair, rater, score, group=np.zeros(5, dtype=np.int64))
