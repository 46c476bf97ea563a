"""Fitting the rater-effects model (annotation/quality/rater_effects.py) to a dataset: per task
kind, over every valid rating, the fit and each rater's estimates stored in place of the
last fit, in one transaction per kind. The beat refits with the dashboard snapshot; the
``rater_model_fit`` command and the campaign API refit on demand."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from django.db import connection, transaction
from django.utils import timezone

from annotation.core.cxc import KINDS
from annotation.models import Dataset, Pair, RaterEstimate, RaterModelFit, Rating, RatingStatus
from annotation.quality import score_grid
from annotation.quality.rater_effects import DEFAULT_SETTINGS, FittedRaterEffects, RaterModelSettings, fit


def rater_model_refit(
    *, dataset: Dataset, settings: RaterModelSettings = DEFAULT_SETTINGS
) -> dict[str, RaterModelFit | None]:
    """Fit each task kind of ``dataset`` anew; a kind without valid ratings loses its fit
    (None). Returns the fits by kind."""
    return {kind: _refit_kind(dataset, kind, settings) for kind in KINDS}  # the CxC tasks, not reviews


@dataclass(frozen=True)
class KindFit:
    """A fit of one kind's valid ratings: the model's result, the pair and rater ids of its
    rows (sorted), the sampling methods of its prior groups, the number of ratings and
    pairs, and its seconds."""

    result: FittedRaterEffects
    pair_ids: np.ndarray
    rater_ids: np.ndarray
    methods: list[str]
    ratings: int
    pairs: int
    seconds: float

    def priors(self) -> dict[str, dict]:
        """Each sampling method's prior of its pairs' latent scores: {"mean", "sd"} of the
        normal model and "weights", the prior on the score grid the scores have."""
        result = self.result
        return {
            method: {
                "mean": float(result.group_mean[i]),
                "sd": float(result.group_sd[i]),
                "weights": [float(weight) for weight in result.group_prior[i]],
            }
            for i, method in enumerate(self.methods)
        }

    def prior_of(self, methods: list[str]) -> np.ndarray:
        """``(len(methods), G)``: the priors on the score grid of pairs of these sampling
        methods; a method the fit did not see gets the even prior."""
        known = {method: i for i, method in enumerate(self.methods)}
        even = score_grid.even_prior()
        return np.array([self.result.group_prior[known[m]] if m in known else even for m in methods])

    def effects_of(self, raters: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(bias, noise variance) of each of ``raters`` (database ids); a rater the fit
        did not see gets bias 0 and the pooled noise."""
        at = np.clip(np.searchsorted(self.rater_ids, raters), 0, self.rater_ids.size - 1)
        known = self.rater_ids[at] == raters
        bias = np.where(known, self.result.rater_bias[at], 0.0)
        noise_var = np.where(known, self.result.rater_noise_sd[at] ** 2, self.result.pooled_noise_sd**2)
        return bias, noise_var


def kind_fit(dataset_id: int, kind: str, settings: RaterModelSettings = DEFAULT_SETTINGS) -> KindFit | None:
    """The model fitted to the kind's valid ratings in the dataset, not stored; None when
    it has none."""
    pair_ids, rater_ids, scores, pair_methods = _valid_ratings(dataset_id, kind)
    if scores.size == 0:
        return None
    started = time.perf_counter()
    pairs, first, pair_index = np.unique(pair_ids, return_index=True, return_inverse=True)
    raters, rater_index = np.unique(rater_ids, return_inverse=True)
    # Pairs of one sampling method share a prior: CxC's co-caption pairs score far above
    # its image-similarity ones, and a pair with few ratings is best shrunk towards its own.
    methods, group = np.unique(pair_methods[first], return_inverse=True)
    result = fit(pair_index, rater_index, scores, group=group, settings=settings)
    return KindFit(
        result=result,
        pair_ids=pairs,
        rater_ids=raters,
        methods=[str(method) for method in methods],
        ratings=int(scores.size),
        pairs=int(pairs.size),
        seconds=time.perf_counter() - started,
    )


def _refit_kind(dataset: Dataset, kind: str, settings: RaterModelSettings) -> RaterModelFit | None:
    fitted = kind_fit(dataset.pk, kind, settings)
    with transaction.atomic():
        # Two refits of one dataset (the beat's and a "Refresh now") write one after the
        # other: the later replaces the earlier instead of meeting its row.
        Dataset.objects.select_for_update().filter(pk=dataset.pk).exists()
        RaterModelFit.objects.filter(dataset=dataset, kind=kind).delete()
        if fitted is None:
            return None
        result, raters = fitted.result, fitted.rater_ids
        stored = RaterModelFit.objects.create(
            dataset=dataset,
            kind=kind,
            fitted_at=timezone.now(),
            settings=settings.as_dict(),
            ratings=fitted.ratings,
            pairs=fitted.pairs,
            raters=int(raters.size),
            grand_mean=result.grand_mean,
            latent_sd=result.latent_sd,
            priors=fitted.priors(),
            pooled_noise_sd=result.pooled_noise_sd,
            iterations=result.iterations,
            converged=result.converged,
            seconds=fitted.seconds,
        )
        RaterEstimate.objects.bulk_create(
            RaterEstimate(
                fit=stored,
                rater_id=int(rater),
                ratings=int(result.rater_count[i]),
                bias=float(result.rater_bias[i]),
                bias_low=float(result.rater_bias_low[i]),
                bias_high=float(result.rater_bias_high[i]),
                noise_sd=float(result.rater_noise_sd[i]),
                noise_low=float(result.rater_noise_low[i]),
                noise_high=float(result.rater_noise_high[i]),
            )
            for i, rater in enumerate(raters)
        )
    return stored


def _valid_ratings(dataset_id: int, kind: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(pair ids, rater ids, scores, the pairs' sampling methods) of the kind's valid
    ratings in the dataset, in rating id order: a plain cursor, since a CxC-sized dataset
    has over a million. The order is fixed because the fit's sums depend on it in their
    last bits: without it the same ratings, read from a restored, vacuumed or clustered
    table, gave model scores a rounding error apart, and no longer the same export."""
    rating, pair = Rating._meta, Pair._meta
    qn = connection.ops.quote_name
    sql = (
        f"SELECT r.{qn('id')}, r.{qn('pair_id')}, r.{qn('rater_id')}, r.{qn('score')}, p.{qn('sampling_method')} "
        f"FROM {qn(rating.db_table)} r "
        f"JOIN {qn(pair.db_table)} p ON p.{qn('id')} = r.{qn('pair_id')} "
        f"WHERE p.{qn('dataset_id')} = %s AND p.{qn('kind')} = %s AND r.{qn('status')} = %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [dataset_id, kind, RatingStatus.VALID])
        rows = cursor.fetchall()
    if not rows:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0), np.empty(0, dtype=object)
    ids, pair_ids, rater_ids, scores, methods = zip(*rows, strict=True)
    # Sorted here rather than by the statement: numpy sorts a million ids faster than the
    # server sorts a million rows.
    order = np.argsort(np.array(ids, dtype=np.int64), kind="stable")
    return (
        np.array(pair_ids, dtype=np.int64)[order],
        np.array(rater_ids, dtype=np.int64)[order],
        np.array(scores, dtype=np.float64)[order],
        np.array(methods, dtype=object)[order],
    )
