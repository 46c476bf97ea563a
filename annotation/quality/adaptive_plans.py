"""Adaptive N's plans: a batch's budget turned into its precision target, and a target
turned into the ratings it is expected to spend (``annotation.quality.adaptive_solver``),
from the dataset's latest rater-model fits.

A batch with a budget (``SamplingBatch.adaptive_budget``, ratings in all) has its target
(``adaptive_half_width``) solved anew after every refit: what is left of the budget (the
budget less the ratings its closed pairs took) over its pairs still open, each kind's
pairs drawn from that kind's fit. A pair still open counts the slots it has. Before a
kind has a fit its raters are taken as the rule then takes them (bias 0, unit noise) and
its pairs as spread evenly over the scale.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.db.models import Count, F, Q, Sum

from annotation.core.cxc import POSITIVE_THRESHOLDS
from annotation.models import Pair, RaterEstimate, RaterModelFit
from annotation.quality import score_grid
from annotation.quality.adaptive_solver import KindMix, Plan, Planner, RaterPool
from sampling.models import SamplingBatch


@dataclass(frozen=True)
class BatchPlan:
    """What a batch's adaptive rule is expected to do: its target, the ratings per pair it
    spends on the pairs still open, the ratings it is expected to take in all, and its
    budget (None: the target rules)."""

    half_width: float
    ratings_per_pair: float
    expected_ratings: int
    budget: int | None
    pairs_open: int
    ratings_spent: int


def kind_mix(dataset_id: int, kind: str, methods: dict[str, int]) -> KindMix:
    """The kind's pairs (``methods``: sampling method -> pairs) as the latest fit of the
    kind in the dataset sees them: its methods' priors and its raters."""
    fit = RaterModelFit.objects.filter(dataset_id=dataset_id, kind=kind).first()
    names = sorted(methods)
    share = np.array([methods[name] for name in names], dtype=np.float64)
    if fit is None:
        return KindMix(
            pairs=int(share.sum()),
            threshold=POSITIVE_THRESHOLDS[kind],
            prior=np.array([score_grid.even_prior() for _ in names]),
            prior_share=share,
            pool=RaterPool.unknown(),
        )
    rows = np.array(
        list(RaterEstimate.objects.filter(fit=fit).order_by("rater_id").values_list("bias", "noise_sd", "ratings")),
        float,
    )
    pool = (
        RaterPool(bias=rows[:, 0], noise_var=rows[:, 1] ** 2, weight=rows[:, 2], pooled_var=fit.pooled_noise_sd**2)
        if rows.size
        else RaterPool.unknown()
    )
    return KindMix(
        pairs=int(share.sum()),
        threshold=POSITIVE_THRESHOLDS[kind],
        prior=np.array([score_grid.stored_prior(fit.priors.get(name)) for name in names]),
        prior_share=share,
        pool=pool,
    )


def _open_mix(batch: SamplingBatch) -> tuple[list[KindMix], int, int]:
    """The batch's kinds over its pairs still open, the number of those pairs and the
    valid ratings its closed pairs took."""
    pairs = Pair.objects.filter(batch=batch, retired_at__isnull=True)
    closed = Q(ratings_done__gte=F("ratings_required"))
    spent = pairs.filter(closed).aggregate(ratings=Sum("ratings_done"))["ratings"] or 0
    counts: dict[str, dict[str, int]] = {}
    groups = pairs.exclude(closed).order_by().values_list("kind", "sampling_method").annotate(n=Count("id"))
    for kind, method, n in groups:
        counts.setdefault(kind, {})[method] = n
    kinds = [kind_mix(batch.dataset_id, kind, methods) for kind, methods in sorted(counts.items())]
    return kinds, sum(mix.pairs for mix in kinds), int(spent)


def batch_plan(batch: SamplingBatch, *, solve: bool = False, seed: int = 0) -> BatchPlan | None:
    """The plan of an adaptive batch (None: not adaptive, or no pair open): what its stored
    target is expected to spend and reach; with ``solve`` and a budget, the target that
    meets what is left of the budget."""
    if batch.ratings_max is None:
        return None
    kinds, pairs_open, spent = _open_mix(batch)
    if pairs_open == 0:
        return None
    planner = Planner(kinds, minimum=batch.ratings_per_pair, maximum=batch.ratings_max, seed=seed)
    if solve and batch.adaptive_budget is not None:
        plan = planner.for_budget((batch.adaptive_budget - spent) / pairs_open)
    else:
        plan = planner.plan(batch.adaptive_half_width)
    return _told(batch, plan, pairs_open, spent)


def batch_plan_told(batch: SamplingBatch) -> dict | None:
    """The batch's plan as the API tells it: its budget or its target, and the other."""
    plan = batch_plan(batch)
    if plan is None:
        return None
    return {
        "half_width": round(plan.half_width, 4),
        "budget": plan.budget,
        "expected_ratings": plan.expected_ratings,
        "ratings_per_open_pair": round(plan.ratings_per_pair, 3),
        "pairs_open": plan.pairs_open,
        "ratings_spent": plan.ratings_spent,
    }


def _told(batch: SamplingBatch, plan: Plan, pairs_open: int, spent: int) -> BatchPlan:
    return BatchPlan(
        half_width=plan.half_width,
        ratings_per_pair=plan.ratings_per_pair,
        expected_ratings=spent + round(plan.ratings_per_pair * pairs_open),
        budget=batch.adaptive_budget,
        pairs_open=pairs_open,
        ratings_spent=spent,
    )


def adaptive_budgets_refresh(*, dataset_id: int) -> dict[int, BatchPlan]:
    """Solve the target of every adaptive batch of the dataset with a budget and pairs still
    open, and store it; returns the plans by batch id. Run after a refit."""
    plans = {}
    for batch in SamplingBatch.objects.filter(dataset_id=dataset_id, adaptive_budget__isnull=False).order_by("pk"):
        plan = batch_plan(batch, solve=True)
        if plan is None:
            continue
        SamplingBatch.objects.filter(pk=batch.pk).update(adaptive_half_width=plan.half_width)
        plans[batch.pk] = plan
    return plans
