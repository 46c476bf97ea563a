"""Pure helpers of bench-adaptive (benchmarks/bench_adaptive.py): latent pair scores drawn
from the CxC release, simulated raters, their ratings, and the figures. numpy only.

Raters: bias ~ N(0, BIAS_SD); noise sd the grid point's; a POOR_SHARE of raters are poor,
half of them with noise sd POOR_NOISE_SD, half answering uniformly at random. A rating
is the latent score plus the rater's bias and noise, clipped to the 0-5 slider and
rounded to its two decimals.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

BIAS_SD = 0.3
POOR_SHARE = 0.1
POOR_NOISE_SD = 2.0
TASK_FILES = {"STS": "sts_val.csv", "SIS": "sis_val.csv", "SITS": "sits_val.csv"}


def stratified_latents(
    rows: Iterable[dict[str, str]], n: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` release scores ``float (n,)`` and their sampling methods ``(n,)`` drawn
    without replacement, each method in proportion to its rows (largest remainders), in a
    seeded random order."""
    by_method: dict[str, list[float]] = {}
    for row in rows:
        by_method.setdefault(row["sampling_method"], []).append(float(row["agg_score"]))
    total = sum(len(scores) for scores in by_method.values())
    n = min(n, total)
    shares = {method: n * len(scores) / total for method, scores in by_method.items()}
    counts = {method: int(share) for method, share in shares.items()}
    for method in sorted(shares, key=lambda m: shares[m] - counts[m], reverse=True)[: n - sum(counts.values())]:
        counts[method] += 1
    drawn = [
        rng.choice(np.array(scores), size=counts[method], replace=False) for method, scores in sorted(by_method.items())
    ]
    latents = np.concatenate(drawn)
    methods = np.array([method for method, _ in sorted(by_method.items()) for _ in range(counts[method])])
    order = rng.permutation(latents.size)
    return latents[order], methods[order]


@dataclass(frozen=True)
class Raters:
    """Simulated raters, arrays ``(n,)``: bias, noise sd, and whether they answer at random."""

    bias: np.ndarray
    noise_sd: np.ndarray
    random: np.ndarray

    def score(self, rater: int, latent: float, rng: np.random.Generator) -> float:
        if self.random[rater]:
            value = rng.uniform(0.0, 5.0)
        else:
            value = latent + self.bias[rater] + rng.normal(0.0, self.noise_sd[rater])
        return round(float(np.clip(value, 0.0, 5.0)), 2)


def draw_raters(n: int, noise_sd: float, rng: np.random.Generator) -> Raters:
    poor = round(POOR_SHARE * n)
    noise = np.full(n, float(noise_sd))
    noise[: poor - poor // 2] = POOR_NOISE_SD
    random = np.zeros(n, dtype=bool)
    random[poor - poor // 2 : poor] = True
    order = rng.permutation(n)
    return Raters(bias=rng.normal(0.0, BIAS_SD, n), noise_sd=noise[order], random=random[order])


def rmse(estimate: np.ndarray, truth: np.ndarray) -> float:
    return float(np.sqrt(np.mean((estimate - truth) ** 2)))


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho with ties given their average rank."""
    return float(np.corrcoef(average_ranks(a), average_ranks(b))[0, 1])


def average_ranks(values: np.ndarray) -> np.ndarray:
    order = np.argsort(values, kind="stable")
    ranks = np.empty(values.size, dtype=np.float64)
    ranks[order] = np.arange(values.size, dtype=np.float64)
    _, inverse = np.unique(values, return_inverse=True)
    sums = np.bincount(inverse, weights=ranks)
    counts = np.bincount(inverse)
    return (sums / counts)[inverse]


# Student's t at 0.975 by degrees of freedom (1-30), for 95% intervals over a few seeds.
T_975 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)


def mean_interval(values: list[float]) -> tuple[float, float, float]:
    """(mean, low, high): the mean of ``values`` (one per seed) and its 95% interval
    (Student's t; a single value has none: low = high = the value)."""
    array = np.asarray(values, dtype=np.float64)
    mean = float(array.mean())
    if array.size < 2:
        return mean, mean, mean
    t = T_975[array.size - 2] if array.size - 1 <= len(T_975) else 1.96
    half = t * float(array.std(ddof=1)) / np.sqrt(array.size)
    return mean, mean - half, mean + half
