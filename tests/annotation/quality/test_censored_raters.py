"""The raters re-estimated with the slider's ends censored (annotation/quality/censored_raters.py):
on clipped ratings the normal model's noise is too small, the censored rounds' is not; on
a sample of the pairs they say about the same. Pure numpy, no database."""

from __future__ import annotations

import numpy as np
import pytest

from annotation.quality import censored_raters, rater_effects


def clipped(seed: int, n_pairs: int = 1500, n_raters: int = 30):
    """Pairs spread over the scale with a pile at each end (as CxC's), rated 4 times each;
    raters of noise sd 0.8, the first five of 2.0; ratings clipped to 0-5."""
    rng = np.random.default_rng(seed)
    latent = np.concatenate(
        [np.zeros(n_pairs // 5), np.full(n_pairs // 5, 5.0), rng.uniform(0, 5, n_pairs - 2 * (n_pairs // 5))]
    )
    noise = np.full(n_raters, 0.8)
    noise[:5] = 2.0
    bias = rng.normal(0, 0.3, n_raters)
    pair = np.repeat(np.arange(n_pairs), 4)
    rater = np.concatenate([rng.choice(n_raters, 4, replace=False) for _ in range(n_pairs)])
    score = np.round(np.clip(latent[pair] + bias[rater] + rng.normal(0, 1, pair.size) * noise[rater], 0, 5), 2)
    return pair, rater, score, noise


def normal_then_censored(pair, rater, score, rounds):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rater_effects, "CENSORED_ROUNDS", rounds)
        return rater_effects.fit(pair, rater, score)


def test_the_normal_model_takes_clipped_ratings_as_exact_and_the_censored_rounds_do_not():
    pair, rater, score, noise = clipped(3)
    normal = normal_then_censored(pair, rater, score, 0)
    censored = normal_then_censored(pair, rater, score, censored_raters.ROUNDS)
    good, poor = noise == 0.8, noise == 2.0
    assert normal.rater_noise_sd[good].mean() < 0.75 and normal.rater_noise_sd[poor].mean() < 1.7
    assert censored.rater_noise_sd[good].mean() == pytest.approx(0.8, abs=0.05)
    assert censored.rater_noise_sd[poor].mean() == pytest.approx(2.0, abs=0.15)


def test_the_rounds_on_a_sample_of_the_pairs_say_about_the_same(monkeypatch):
    pair, rater, score, _ = clipped(4, n_pairs=1200)
    settings = {"group": np.zeros(1200, dtype=np.int64), "n_groups": 1, "bias_prior_sd": 0.5, "noise_prior_df": 4.0}
    start_bias, start_var = np.zeros(31), np.full(31, 0.6)  # rater 30 never rates
    full_bias, full_var, _ = censored_raters.refit(pair, rater, score, bias=start_bias, noise_var=start_var, **settings)
    monkeypatch.setattr(censored_raters, "ROUND_PAIRS", 400)
    bias, var, _ = censored_raters.refit(pair, rater, score, bias=start_bias, noise_var=start_var, **settings)
    assert np.max(np.abs(np.sqrt(var[:30]) - np.sqrt(full_var[:30]))) < 0.3
    assert np.corrcoef(bias[:30], full_bias[:30])[0, 1] > 0.8
    assert (bias[30], var[30]) == (0.0, 0.6)  # unseen by the sample: kept as given
    assert not np.array_equal(var, full_var)  # the sample was used
