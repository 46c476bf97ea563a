"""Pair scores on a grid of the 0-5 scale, with the slider's ends as censoring. Pure numpy,
no Django.

A rating is the pair's latent score plus its rater's bias and noise, clipped to the 0-5
slider: a rating at 0 says only "0 or below", one at 5 "5 or above". Taken as exact
values (the plain mean, or a normal likelihood) such ratings pull a pair near an end
inwards: a pair of latent 0 rated with noise sd 0.85 has ratings averaging 0.34. Here
each rating's likelihood is its normal density inside the scale and the normal's tail
mass at an end (a censored, Tobit likelihood), over latent scores on a grid of the scale
(``GRID``, 0.1 apart: a pair's true score lies on the scale).

The latent scores' prior is fitted from the data (empirical Bayes): per group of pairs
(a sampling method), a distribution on the grid, the mixing distribution found by
smoothed EM (each step's weights spread by a normal of ``PRIOR_KERNEL_SD``, plus
``PRIOR_SMOOTHING`` pseudo pairs spread evenly). CxC's scores pile up near the ends
and in modes a normal prior cannot follow; a pair with two ratings is shrunk towards
where pairs of its kind really lie.

Per pair the posterior on the grid gives the score (its mean: the least expected squared
error), its variance and a 95% interval. For adaptive N the next rating's effect is
computed on the same grid: its predictive distribution over binned ratings (the two ends
as masses) and the posterior after each, so the expected variance it removes and the
chance it moves the score across a threshold are exact for the model.

Arrays: ``loglik`` and ``post`` are ``(n_pairs, G)``; ``weights`` of a prior ``(G,)``, or
``(n_groups, G)`` for several.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from annotation.core.cxc import SCORE_MAX, SCORE_MIN

GRID = np.linspace(SCORE_MIN, SCORE_MAX, 51)
Z_95 = 1.959963984540054

PRIOR_SMOOTHING = 1.0  # pseudo pairs spread evenly over the grid, per group
# Smoothed EM (EMS): after each step the prior's weights are spread by a normal of this
# sd. The maximum-likelihood mixing distribution is spiky (a few atoms); a pair with two
# ratings shrunk onto an atom looks surer than its ratings allow, and adaptive N, which
# decides on that sureness, then closed such pairs too early: in bench-adaptive's
# simulations (STS, 5 seeds, the same ratings) the spread took the RMSE at 3.3 ratings a
# pair from 0.438 to 0.427.
PRIOR_KERNEL_SD = 0.2
PRIOR_ITERATIONS = 100
PRIOR_TOLERANCE = 1e-7
CHUNK = 50_000  # ratings per block of the likelihood: a (CHUNK, G) array at a time
PAIR_BLOCK = 20_000  # pairs scored at a time: a (PAIR_BLOCK, G) posterior at a time
# Pairs per group the prior is fitted on, at most (evenly spaced): 51 weights need no more,
# and at CxC's scale (267,095 pairs) the EM over all would take most of the fit's time.
PRIOR_PAIRS = 20_000

# The next rating's bins: the two ends (censored masses) and the inside in 0.1 steps,
# between these edges.
_EDGES = np.linspace(SCORE_MIN, SCORE_MAX, 51)


def normal_cdf(x: np.ndarray) -> np.ndarray:
    """The standard normal distribution function without SciPy: the complementary error
    function's Chebyshev fit of Numerical Recipes (relative error below 1.2e-7
    everywhere), so a far tail keeps its relative precision (its log is taken)."""
    x = np.asarray(x, dtype=np.float64)
    z = np.abs(x) / math.sqrt(2.0)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (
        0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))))  # fmt: skip
    tail = 0.5 * t * np.exp(-z * z + poly)
    return np.where(x >= 0, 1.0 - tail, tail)


def _log_normal_cdf(x: np.ndarray) -> np.ndarray:
    """log Phi(x), finite however far the tail (the asymptotic form below -37)."""
    x = np.asarray(x, dtype=np.float64)
    far = x < -37.0
    safe = np.where(far, -37.0, x)
    near = np.log(np.maximum(normal_cdf(safe), 1e-320))
    asymptotic = -0.5 * x * x - np.log(-np.minimum(x, -1.0)) - 0.5 * math.log(2.0 * math.pi)
    return np.where(far, asymptotic, near)


def rating_loglik(score: np.ndarray, bias: np.ndarray, noise_sd: np.ndarray, grid: np.ndarray = GRID) -> np.ndarray:
    """``(m, G)``: the log-likelihood of each rating (``score``, its rater's ``bias`` and
    ``noise_sd``, each ``(m,)``) at each latent score of the grid; a rating at an end of
    the scale has the normal's tail beyond it. A rating's constants (the same at every
    grid point, so no posterior sees them) are left out."""
    # One (m, G) array worked in place: at CxC's scale this is most of the fit's time.
    # z = (score - expected) / sd, the expected rating being the grid point plus the bias.
    z = np.subtract.outer(score - bias, grid)
    z *= (1.0 / noise_sd)[:, None]
    low, high = score <= SCORE_MIN, score >= SCORE_MAX
    ends = {}
    if low.any():  # (SCORE_MIN - expected) / sd
        ends["low"] = ((SCORE_MIN - score[low]) / noise_sd[low])[:, None] + z[low]
    if high.any():  # (expected - SCORE_MAX) / sd
        ends["high"] = ((score[high] - SCORE_MAX) / noise_sd[high])[:, None] - z[high]
    loglik = z
    loglik *= loglik
    loglik *= -0.5
    loglik -= np.log(noise_sd)[:, None]
    if "low" in ends:
        loglik[low] = _log_normal_cdf(ends["low"])
    if "high" in ends:
        loglik[high] = _log_normal_cdf(ends["high"])
    return loglik


def pair_loglik(
    pair_index: np.ndarray, score: np.ndarray, bias: np.ndarray, noise_var: np.ndarray, *, n_pairs: int
) -> np.ndarray:
    """``(n_pairs, G)``: each pair's log-likelihood on the grid, summed over its ratings
    (``pair_index`` in 0 .. n_pairs-1; ``score``, ``bias``, ``noise_var`` of each rating),
    in blocks of about ``CHUNK`` ratings so a million ratings never make one huge array.
    Each pair's ratings are summed in their given order."""
    total = np.zeros((n_pairs, GRID.size))
    order = np.argsort(pair_index, kind="stable")
    by_pair = pair_index[order]
    noise_sd = np.sqrt(noise_var)
    start = 0
    while start < score.size:
        # A block ends at a pair's end, so each pair is one sum of its ratings in order,
        # the same bits however the ratings were split (an export's blocks, the fit).
        stop = min(start + CHUNK, score.size)
        stop = int(np.searchsorted(by_pair, by_pair[stop - 1], side="right"))
        rows = order[start:stop]
        pairs = by_pair[start:stop]
        first = np.flatnonzero(np.concatenate([[True], pairs[1:] != pairs[:-1]]))
        total[pairs[first]] = np.add.reduceat(rating_loglik(score[rows], bias[rows], noise_sd[rows]), first, axis=0)
        start = stop
    return total


@dataclass(frozen=True)
class GridScores:
    """Per pair ``(n_pairs,)``: the posterior mean (the score), its 95% interval and its
    variance (the score's expected squared error under the model)."""

    score: np.ndarray
    low: np.ndarray
    high: np.ndarray
    var: np.ndarray


def fit_scores(
    pair_index: np.ndarray,
    score: np.ndarray,
    bias: np.ndarray,
    noise_var: np.ndarray,
    *,
    n_pairs: int,
    group: np.ndarray,
    n_groups: int,
) -> tuple[GridScores, np.ndarray]:
    """Each pair's scores under its group's prior fitted from the ratings, and the priors
    ``(n_groups, G)``; ``group: (n_pairs,)`` in 0 .. n_groups-1. The prior is fitted on at
    most ``PRIOR_PAIRS`` rated pairs of each group."""
    chosen = _prior_sample(np.bincount(pair_index, minlength=n_pairs) > 0, group, n_groups)
    keep = chosen[pair_index]
    renumbered = np.cumsum(chosen) - 1
    loglik = pair_loglik(
        renumbered[pair_index[keep]], score[keep], bias[keep], noise_var[keep], n_pairs=int(chosen.sum())
    )
    prior = fit_prior(loglik, group[chosen], n_groups)
    return score_pairs(pair_index, score, bias, noise_var, prior=prior, group=group), prior


def _prior_sample(rated: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    """``(n_pairs,)`` bool: the rated pairs the prior is fitted on, every k-th of a group."""
    chosen = np.zeros(rated.size, dtype=bool)
    for number in range(n_groups):
        members = np.flatnonzero(rated & (group == number))
        step = max(1, math.ceil(members.size / PRIOR_PAIRS))
        chosen[members[::step]] = True
    return chosen


def score_pairs(
    pair_index: np.ndarray, score: np.ndarray, bias: np.ndarray, noise_var: np.ndarray, *, prior: np.ndarray,
    group: np.ndarray,
) -> GridScores:  # fmt: skip
    """Each pair's scores from its ratings (``pair_index`` into ``group``, whose length is
    the number of pairs) under the prior ``prior[group[p]]`` (``prior: (k, G)``), in
    blocks of ``PAIR_BLOCK`` pairs; a pair without ratings gets its prior's."""
    n_pairs = group.size
    order = np.argsort(pair_index, kind="stable")
    by_pair = pair_index[order]
    parts = []
    for start in range(0, n_pairs, PAIR_BLOCK):
        stop = min(start + PAIR_BLOCK, n_pairs)
        low, high = np.searchsorted(by_pair, [start, stop])
        rows = order[low:high]
        loglik = pair_loglik(pair_index[rows] - start, score[rows], bias[rows], noise_var[rows], n_pairs=stop - start)
        post = posterior(loglik, prior[group[start:stop]])
        interval = posterior_interval(post)
        parts.append((posterior_mean(post), *interval, posterior_var(post)))
    if not parts:
        empty = np.empty(0)
        return GridScores(empty, empty, empty, empty)
    return GridScores(*(np.concatenate(column) for column in zip(*parts, strict=True)))


def _add_rows(total: np.ndarray, rows: np.ndarray, values: np.ndarray) -> None:
    """total[rows[k]] += values[k], rows repeating: a bincount per grid column (add.at is
    ten times slower)."""
    for column in range(total.shape[1]):
        total[:, column] += np.bincount(rows, weights=values[:, column], minlength=total.shape[0])


def _likelihood(loglik: np.ndarray) -> np.ndarray:
    """exp(loglik) scaled per pair to a maximum of 1 (the posterior does not see the scale)."""
    return np.exp(loglik - loglik.max(axis=1, keepdims=True))


def fit_prior(loglik: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    """``(n_groups, G)``: each group's prior on the grid, by EM on the mixing weights from
    the even one (smoothed by ``PRIOR_SMOOTHING`` pseudo pairs); a group without pairs
    keeps the even prior."""
    likelihood = _likelihood(loglik)
    weights = np.full((n_groups, GRID.size), 1.0 / GRID.size)
    order = np.argsort(group, kind="stable")
    counts = np.bincount(group, minlength=n_groups)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    present = counts > 0
    for _ in range(PRIOR_ITERATIONS):
        post = posterior(likelihood, weights[group], scaled=True)
        sums = np.zeros_like(weights)
        sums[present] = np.add.reduceat(post[order], starts[present], axis=0)
        updated = sums + PRIOR_SMOOTHING / GRID.size
        updated /= updated.sum(axis=1, keepdims=True)
        if PRIOR_KERNEL_SD > 0:
            updated = updated @ _kernel(PRIOR_KERNEL_SD)
        change = float(np.max(np.abs(updated - weights)))
        weights = updated
        if change < PRIOR_TOLERANCE:
            break
    return weights


def _kernel(sd: float) -> np.ndarray:
    """``(G, G)``: spreads a weight on the grid by a normal of ``sd``, each row summing to 1."""
    kernel = np.exp(-0.5 * ((GRID[:, None] - GRID[None, :]) / sd) ** 2)
    return kernel / kernel.sum(axis=1, keepdims=True)


def posterior(loglik: np.ndarray, prior: np.ndarray, *, scaled: bool = False) -> np.ndarray:
    """``(n, G)``: each pair's posterior on the grid from its log-likelihood (``scaled``:
    already the likelihood scaled by ``_likelihood``) and its prior ``(n, G)`` or
    ``(G,)``."""
    post = (loglik if scaled else _likelihood(loglik)) * prior
    return post / post.sum(axis=1, keepdims=True)


# Row sums rather than a matrix product: a row's sum is then the same bits however many
# rows come with it (BLAS picks its kernel by the shape), so an export's model scores do
# not depend on how its pairs were split into blocks.
def posterior_mean(post: np.ndarray) -> np.ndarray:
    return np.sum(post * GRID, axis=1)


def posterior_var(post: np.ndarray) -> np.ndarray:
    mean = posterior_mean(post)
    return np.maximum(np.sum(post * (GRID * GRID), axis=1) - mean * mean, 0.0)


def posterior_interval(post: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The equal-tailed 95% interval of each posterior, the grid's mass spread evenly over
    each point's 0.1-wide cell (so the ends interpolate rather than jump a whole step)."""
    cumulative = np.cumsum(post, axis=1)
    step = GRID[1] - GRID[0]
    edges = np.concatenate([[GRID[0]], GRID[:-1] + step / 2, [GRID[-1]]])
    return _quantile(cumulative, post, edges, 0.025), _quantile(cumulative, post, edges, 0.975)


def _quantile(cumulative: np.ndarray, post: np.ndarray, edges: np.ndarray, q: float) -> np.ndarray:
    rows = np.arange(post.shape[0])
    at = np.minimum(np.sum(cumulative < q, axis=1), GRID.size - 1)
    below = cumulative[rows, at] - post[rows, at]
    fraction = np.clip((q - below) / np.maximum(post[rows, at], 1e-300), 0.0, 1.0)
    return edges[at] + fraction * (edges[at + 1] - edges[at])


def next_rating_matrix(noise_sd: float, bias: float = 0.0) -> np.ndarray:
    """``(R, G)``: the probability of each bin of the next rating (an end, or 0.1 of the
    inside) given each latent score, from a rater of ``noise_sd`` (above 0) and ``bias``.
    Each bin's mass is the normal's between the bin's edges, so every column sums to 1
    however small the noise: a density times the bin's width vanished between two bins'
    middles once the sd fell below about 0.005 (a fit's noise floor is 0.001), and the
    columns divided by their zero sums gave no gain at all."""
    if not noise_sd > 0:
        raise ValueError(f"the next rating's noise sd must be above 0, not {noise_sd!r}")
    expected = GRID[None, :] + bias
    below_edge = normal_cdf((_EDGES[:, None] - expected) / noise_sd)
    return np.vstack([below_edge[:1], np.diff(below_edge, axis=0), 1.0 - below_edge[-1:]])


def _after_next(post: np.ndarray, matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Over the next rating's bins: its predictive probability ``(n, R)``, and the
    posterior mean and variance after it ``(n, R)``."""
    joint = post[:, None, :] * matrix[None, :, :]
    predictive = joint.sum(axis=2)
    safe = np.maximum(predictive, 1e-300)
    mean = (joint @ GRID) / safe
    var = np.maximum((joint @ (GRID * GRID)) / safe - mean * mean, 0.0)
    return predictive, mean, var


def gain_and_crossing(post: np.ndarray, matrix: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """``(n,)`` each: the posterior variance one more rating (``next_rating_matrix``) is
    expected to remove (the expected squared error of each pair's score it saves), and
    the probability that it moves the posterior mean to the other side of ``threshold``
    (at or above it: a positive)."""
    predictive, mean_after, var_after = _after_next(post, matrix)
    gain = posterior_var(post) - np.sum(predictive * var_after, axis=1)
    now = (posterior_mean(post) >= threshold)[:, None]
    crossing = np.sum(predictive * ((mean_after >= threshold) != now), axis=1)
    return gain, crossing


def even_prior() -> np.ndarray:
    """``(G,)``: a prior that knows only that the score lies on the scale."""
    return np.full(GRID.size, 1.0 / GRID.size)


def stored_prior(entry: dict | None) -> np.ndarray:
    """``(G,)``: a prior as a fit stores it per sampling method (``{"mean", "sd",
    "weights"}``): its weights on the grid; a fit stored before the grid (no weights)
    gives its normal prior on the grid; None (a method the fit did not see): even."""
    if entry is None:
        return even_prior()
    weights = entry.get("weights")
    if weights is not None:
        weights = np.asarray(weights, dtype=np.float64)
        if weights.shape != GRID.shape or not np.all(weights >= 0) or weights.sum() <= 0:
            raise ValueError(f"a stored prior's weights must be {GRID.size} values of 0 or more, not all 0")
        return weights / weights.sum()
    weights = np.exp(-0.5 * ((GRID - float(entry["mean"])) / max(float(entry["sd"]), 1e-3)) ** 2)
    return weights / weights.sum() if weights.sum() > 0 else even_prior()
