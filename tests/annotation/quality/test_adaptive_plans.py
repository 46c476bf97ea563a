"""Adaptive N's plans (annotation/quality/adaptive_plans.py): a batch's budget becomes its
precision target after each refit, counting what its closed pairs took; a batch with a
target is told what it will spend; the refit task and command solve budgets."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from annotation.models import Pair
from annotation.quality.adaptive_plans import adaptive_budgets_refresh, batch_plan, batch_plan_told
from annotation.quality.tasks import refit_rater_model
from sampling.models import SamplingBatch
from tests.support.queue_support import claim, queue_pairs, rater, submit

pytestmark = pytest.mark.django_db

MINIMUM, MAXIMUM = 2, 6
DISPUTED = [0.5, 4.5, 1.0, 4.0, 2.0, 3.5]


def budget_batch(n_pairs: int, budget: int):
    batch, pairs = queue_pairs(n_pairs=n_pairs, ratings_per_pair=MINIMUM, adaptive=(MAXIMUM, 1.0))
    SamplingBatch.objects.filter(pk=batch.pk).update(adaptive_budget=budget)
    batch.refresh_from_db()
    return batch, pairs


def rate_pair(pair, scores):
    for number, score in enumerate(scores):
        user = rater()
        assignment = claim(user, pair.dataset)
        assert assignment is not None and assignment.pair_id == pair.id
        submit(user, pair.dataset, assignment.slot_id, f"{pair.id}-{number}", score=score)


def test_a_budget_becomes_the_target_that_meets_it_over_the_pairs_still_open():
    batch, pairs = budget_batch(4, budget=14)
    plan = adaptive_budgets_refresh(dataset_id=batch.dataset_id)[batch.pk]
    batch.refresh_from_db()
    assert batch.adaptive_half_width == plan.half_width
    assert (plan.pairs_open, plan.ratings_spent, plan.budget) == (4, 0, 14)
    assert plan.ratings_per_pair <= 14 / 4 < batch_plan(batch, solve=False).ratings_per_pair + 0.5
    # A pair that closed took its ratings: the rest of the budget goes to the 3 pairs open.
    rate_pair(pairs[0], [4.9, 5.0])
    Pair.objects.filter(pk=pairs[0].pk).update(ratings_required=2)
    after = adaptive_budgets_refresh(dataset_id=batch.dataset_id)[batch.pk]
    assert (after.pairs_open, after.ratings_spent) == (3, 2)
    assert after.ratings_per_pair <= 12 / 3


def test_a_budget_at_the_minimum_closes_even_a_disputed_pair_at_its_minimum():
    batch, pairs = budget_batch(3, budget=3 * MINIMUM)
    adaptive_budgets_refresh(dataset_id=batch.dataset_id)
    rate_pair(pairs[0], DISPUTED[:MINIMUM])
    pairs[0].refresh_from_db()
    assert pairs[0].ratings_required == MINIMUM
    roomy, other = budget_batch(3, budget=3 * MAXIMUM)
    adaptive_budgets_refresh(dataset_id=roomy.dataset_id)
    rate_pair(other[0], DISPUTED[:MINIMUM])
    other[0].refresh_from_db()
    assert other[0].ratings_required == MINIMUM + 1


def test_a_batch_with_a_target_is_left_as_it_is_and_told_what_it_spends():
    batch, _ = queue_pairs(n_pairs=5, ratings_per_pair=MINIMUM, adaptive=(MAXIMUM, 0.7))
    assert adaptive_budgets_refresh(dataset_id=batch.dataset_id) == {}
    batch.refresh_from_db()
    told = batch_plan_told(batch)
    assert batch.adaptive_half_width == told["half_width"] == 0.7
    assert told["budget"] is None
    assert 5 * MINIMUM <= told["expected_ratings"] <= 5 * MAXIMUM
    fixed, _ = queue_pairs(n_pairs=2, ratings_per_pair=3)
    assert batch_plan_told(fixed) is None


def test_the_refit_task_and_command_solve_the_budgets(capsys):
    batch, pairs = budget_batch(3, budget=9)
    rate_pair(pairs[0], [3.0, 3.2])
    refit_rater_model(batch.dataset_id)
    batch.refresh_from_db()
    solved = batch.adaptive_half_width
    assert solved != 1.0
    SamplingBatch.objects.filter(pk=batch.pk).update(adaptive_half_width=1.0)
    call_command("rater_model_fit", batch.dataset.name)
    batch.refresh_from_db()
    assert batch.adaptive_half_width == solved
    assert f"batch #{batch.pk}: budget 9 ratings" in capsys.readouterr().out
