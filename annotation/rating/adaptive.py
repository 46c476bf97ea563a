"""Adaptive N: after the rating that fills the last slot of an adaptive pair, the pair
gets one more open slot, up to its maximum, while the next rating would remove enough of
its expected error and its use is in doubt (``annotation.quality.adaptive_rule``), or it
closes. The precision target is the batch's (with a budget, the one solved at the last
refit: ``annotation.quality.adaptive_plans``).

The pair row is locked first, FOR NO KEY UPDATE, the lock order of every submission and
exclusion chunk, so a rating, an exclusion and this decision on one pair happen one after
another. An added slot keeps the queue's invariant (valid ratings + open + leased slots
== ratings_required); the database keeps ratings_required at most ratings_max. Raters
are weighed by the dataset's latest rater-model fit of the pair's kind: a rater it does
not know gets bias 0 and the fit's pooled noise; with no fit yet every rater gets bias 0
and noise sd 1 and the pair an even prior over the scale, and the next rating is
expected of such a rater too.
"""

from __future__ import annotations

import numpy as np
from django.db import transaction
from django.db.models import F, Max

from annotation.core.cxc import POSITIVE_THRESHOLDS
from annotation.models import (
    Pair,
    QueueCounter,
    RaterEstimate,
    RaterModelFit,
    Rating,
    RatingSlot,
    RatingStatus,
    SlotState,
)
from annotation.quality import score_grid
from annotation.quality.adaptive_rule import AdaptiveRule, PairRatings, adaptive_extends


def pair_extend_or_close(pair_id: int) -> bool:
    """Decide an adaptive pair whose slots are all rated; True when a slot was added.
    A pair that is not adaptive, not full, retired or at its maximum is left as it is."""
    with transaction.atomic():
        pair = (
            # OF self: the batch joined for its half-width is read, not locked (every
            # decision of a batch would queue on its row, and a priority change that locks
            # the batch and then its pairs would deadlock with one).
            Pair.objects.select_for_update(no_key=True, of=("self",))
            .filter(pk=pair_id)
            .values(
                "id",
                "dataset_id",
                "kind",
                "priority",
                "ratings_done",
                "ratings_required",
                "ratings_max",
                "retired_at",
                "sampling_method",
                "batch__adaptive_half_width",
            )
            .first()
        )
        if pair is None or not _undecided(pair):
            return False
        ratings, next_noise_var = pair_ratings(
            pair_id, dataset_id=pair["dataset_id"], kind=pair["kind"], method=pair["sampling_method"]
        )
        rule = AdaptiveRule(
            maximum=pair["ratings_max"],
            half_width=pair["batch__adaptive_half_width"],
            threshold=POSITIVE_THRESHOLDS[pair["kind"]],
            next_noise_var=next_noise_var,
        )
        if not adaptive_extends(ratings, rule):
            return False
        _add_slot(pair)
    return True


def _undecided(pair: dict) -> bool:
    return (
        pair["retired_at"] is None
        and pair["ratings_max"] is not None
        and pair["batch__adaptive_half_width"] is not None
        and pair["ratings_done"] >= pair["ratings_required"]
        and pair["ratings_required"] < pair["ratings_max"]
    )


def pair_ratings(pair_id: int, *, dataset_id: int, kind: str, method: str) -> tuple[PairRatings, float]:
    """The pair's valid ratings with their raters' estimates from the latest fit and the
    prior on the score grid of its sampling method (even for a method the fit did not
    see), and the noise variance the next rating is expected with (the fit's pooled
    noise)."""
    valid = Rating.objects.filter(pair_id=pair_id, status=RatingStatus.VALID).order_by("id")
    rows = list(valid.values_list("rater_id", "score"))
    raters = [rater for rater, _ in rows]
    fit = RaterModelFit.objects.filter(dataset_id=dataset_id, kind=kind).values("id", "pooled_noise_sd", "priors")
    fit = fit.first()
    if fit is None:
        known, default_var, prior = {}, 1.0, score_grid.even_prior()
    else:
        estimates = RaterEstimate.objects.filter(fit_id=fit["id"], rater_id__in=raters)
        known = {rater: (bias, sd**2) for rater, bias, sd in estimates.values_list("rater_id", "bias", "noise_sd")}
        default_var, prior = fit["pooled_noise_sd"] ** 2, score_grid.stored_prior(fit["priors"].get(method))
    effects = [known.get(rater, (0.0, default_var)) for rater in raters]
    ratings = PairRatings(
        score=np.array([score for _, score in rows], dtype=np.float64),
        bias=np.array([bias for bias, _ in effects], dtype=np.float64),
        noise_var=np.array([var for _, var in effects], dtype=np.float64),
        prior=prior,
    )
    return ratings, default_var


def _add_slot(pair: dict) -> None:
    """One more open slot: the pair asks for one more rating and is open again."""
    pair_id = pair["id"]
    Pair.objects.filter(pk=pair_id).update(ratings_required=F("ratings_required") + 1)
    index = RatingSlot.objects.filter(pair_id=pair_id).aggregate(top=Max("index"))["top"] + 1
    RatingSlot.objects.filter(pair_id=pair_id).update(pair_complete=False)
    RatingSlot.objects.create(
        pair_id=pair_id,
        dataset_id=pair["dataset_id"],
        index=index,
        state=SlotState.OPEN,
        kind=pair["kind"],
        priority=pair["priority"],
        pair_done=pair["ratings_done"],
        pair_complete=False,
    )
    QueueCounter.objects.filter(dataset_id=pair["dataset_id"], kind=pair["kind"]).update(pairs_open=F("pairs_open") + 1)
