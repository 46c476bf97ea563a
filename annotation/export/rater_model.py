"""The rater-effects model in an export: fitted once per task over every valid rating of
the dataset when the export starts (a rating stored while the files are written is in
the files, not in the fit; its rater, if new, gets the pooled noise), it gives each
exported pair the model's score and 95% interval beside the plain mean
(``model_score``, ``model_ci95_low``, ``model_ci95_high`` in JSONL and Parquet; the CxC
CSV stays as the release is), and ``rater_model.json`` the raters' bias and noise under
their pseudonyms. The manifest states the model, its settings and each fit."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from annotation.export.blocks import RatedBlock
from annotation.quality.rater_effects import DEFAULT_SETTINGS, MODEL_NAME, pair_posterior
from annotation.quality.rater_fits import KindFit, kind_fit

RATER_MODEL_FILE = "rater_model.json"


@dataclass
class ExportRaterModel:
    """The fit of each task of one dataset (a task without valid ratings has none)."""

    fits: dict[str, KindFit | None] = field(default_factory=dict)

    @classmethod
    def fit(cls, dataset_id: int, tasks: Iterable[str]) -> ExportRaterModel:
        return cls({task: kind_fit(dataset_id, task) for task in tasks})

    def with_scores(self, task: str, rated: RatedBlock) -> RatedBlock:
        """``rated`` with its block's model scores (the posterior of each pair's ratings)."""
        fitted = self.fits.get(task)
        if fitted is None:
            return rated
        block = rated.block
        bias, noise_var = fitted.effects_of(rated.raters)
        scores = pair_posterior(
            block.pair_index,
            block.score,
            bias,
            noise_var,
            n_pairs=block.pairs,
            prior=fitted.prior_of(block.sampling_method),
        )
        return dataclasses.replace(rated, block=dataclasses.replace(block, model=scores))

    def manifest_entry(self) -> dict:
        return {
            "model": MODEL_NAME,
            "settings": DEFAULT_SETTINGS.as_dict(),
            "file": RATER_MODEL_FILE,
            "tasks": {task: _fit_summary(fitted) for task, fitted in self.fits.items()},
        }

    def payload(self, pseudonyms: Callable[[set[int]], Mapping[int, str]]) -> dict:
        """``rater_model.json``: the manifest entry with each task's raters."""
        tasks = {}
        for task, fitted in self.fits.items():
            if fitted is None:
                tasks[task] = None
                continue
            names = pseudonyms({int(rater) for rater in fitted.rater_ids})
            tasks[task] = {**_fit_summary(fitted), "rater_effects": _raters(fitted, names)}
        return {**self.manifest_entry(), "tasks": tasks}


def _fit_summary(fitted: KindFit | None) -> dict | None:
    if fitted is None:
        return None
    result = fitted.result
    return {
        "ratings": fitted.ratings,
        "pairs": fitted.pairs,
        "raters": int(fitted.rater_ids.size),
        "grand_mean": round(result.grand_mean, 6),
        "latent_sd": round(result.latent_sd, 6),
        "pooled_noise_sd": round(result.pooled_noise_sd, 6),
        "priors_by_sampling_method": {
            method: {key: _rounded(value) for key, value in prior.items()} for method, prior in fitted.priors().items()
        },
        "iterations": result.iterations,
        "converged": result.converged,
    }


def _rounded(value: float | list[float]) -> float | list[float]:
    return [round(item, 6) for item in value] if isinstance(value, list) else round(value, 6)


def _raters(fitted: KindFit, names: Mapping[int, str]) -> list[dict]:
    """Per rater, noisiest first: pseudonym, ratings, bias and noise sd with 95% intervals."""
    result = fitted.result
    order = np.argsort(-result.rater_noise_sd, kind="stable")
    return [
        {
            "rater_id": names[int(fitted.rater_ids[i])],
            "ratings": int(result.rater_count[i]),
            "bias": round(float(result.rater_bias[i]), 6),
            "bias_ci95": [round(float(result.rater_bias_low[i]), 6), round(float(result.rater_bias_high[i]), 6)],
            "noise_sd": round(float(result.rater_noise_sd[i]), 6),
            "noise_ci95": [round(float(result.rater_noise_low[i]), 6), round(float(result.rater_noise_high[i]), 6)],
        }
        for i in order
    ]
