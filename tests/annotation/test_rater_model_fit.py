"""Fitting the rater-effects model to a dataset's ratings and storing it
(annotation/quality/rater_model.py): per kind, valid ratings only, replacing the last
fit; by the beat with the dashboard snapshot and by the rater_model_fit command."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from annotation.dashboard.services import campaign_refresh_all
from annotation.models import RaterEstimate, RaterModelFit, Rating, RatingStatus, TaskKind
from annotation.quality.rater_model import rater_model_refit
from tests.annotation.exclusion_support import exclude
from tests.annotation.queue_support import queue_pairs
from tests.factories import SplitFactory, UserFactory
from tests.rating_support import rate_pair

pytestmark = pytest.mark.django_db


@pytest.fixture
def rated():
    """Twelve SIS pairs rated by the same four raters; ``lenient`` scores 1.0 above the
    others, ``erratic`` wanders 1.5 either way."""
    split = SplitFactory()
    _, pairs = queue_pairs(split=split, n_pairs=12, ratings_per_pair=4)
    steady1, steady2, lenient, erratic = (UserFactory(password=None) for _ in range(4))
    for number, pair in enumerate(pairs):
        base = 1.6 + (number % 4) * 0.5  # 1.6 .. 3.1: every score within 0-5
        wander = 1.5 if number % 2 else -1.5
        rate_pair(pair, [base, base + 0.1, base + 1.0, base + wander], raters=[steady1, steady2, lenient, erratic])
    return split.dataset, {"steady": steady1, "lenient": lenient, "erratic": erratic}


def test_a_refit_stores_each_kind_with_every_raters_bias_and_noise(rated):
    dataset, raters = rated
    fits = rater_model_refit(dataset=dataset)
    assert fits[TaskKind.STS] is None and fits[TaskKind.SITS] is None
    sis = RaterModelFit.objects.get(dataset=dataset, kind=TaskKind.SIS)
    assert (sis.ratings, sis.pairs, sis.raters) == (48, 12, 4)
    assert sis.converged and sis.settings["noise_prior_df"] == 4.0
    estimates = {e.rater_id: e for e in RaterEstimate.objects.filter(fit=sis)}
    lenient, steady, erratic = (estimates[raters[name].pk] for name in ("lenient", "steady", "erratic"))
    assert lenient.bias > steady.bias + 0.5
    assert erratic.noise_sd > 2 * steady.noise_sd
    assert lenient.ratings == 12
    assert lenient.bias_low < lenient.bias < lenient.bias_high
    assert erratic.noise_low < erratic.noise_sd < erratic.noise_high


def test_a_refit_replaces_the_last_and_reads_valid_ratings_only(rated, django_capture_on_commit_callbacks):
    dataset, raters = rated
    rater_model_refit(dataset=dataset)
    first = RaterModelFit.objects.get(dataset=dataset, kind=TaskKind.SIS)
    admin = UserFactory(roles=["admin"])
    exclude(
        django_capture_on_commit_callbacks, dataset=dataset, rater=raters["erratic"], reason="wanders", created_by=admin
    )
    assert Rating.objects.filter(rater=raters["erratic"], status=RatingStatus.EXCLUDED).count() == 12
    rater_model_refit(dataset=dataset)
    again = RaterModelFit.objects.get(dataset=dataset, kind=TaskKind.SIS)
    assert again.pk != first.pk and not RaterModelFit.objects.filter(pk=first.pk).exists()
    assert (again.ratings, again.raters) == (36, 3)
    assert not RaterEstimate.objects.filter(fit=again, rater=raters["erratic"]).exists()


def test_a_kind_without_valid_ratings_loses_its_fit(rated):
    dataset, _ = rated
    rater_model_refit(dataset=dataset)
    stale = RaterModelFit.objects.get(dataset=dataset, kind=TaskKind.SIS)
    stale.pk, stale.kind = None, TaskKind.STS  # a fit of a kind that has no ratings (any more)
    stale.save()
    assert rater_model_refit(dataset=dataset)[TaskKind.STS] is None
    assert list(RaterModelFit.objects.filter(dataset=dataset).values_list("kind", flat=True)) == [TaskKind.SIS]


def test_the_beat_refits_with_the_dashboard_snapshot(rated, django_capture_on_commit_callbacks):
    dataset, _ = rated
    with django_capture_on_commit_callbacks(execute=True):
        assert campaign_refresh_all() == [dataset.pk]
    assert RaterModelFit.objects.filter(dataset=dataset, kind=TaskKind.SIS).count() == 1


def test_the_command_fits_on_demand_and_names_an_unknown_dataset(rated):
    dataset, _ = rated
    out = io.StringIO()
    call_command("rater_model_fit", dataset.name, stdout=out)
    assert "SIS: 48 ratings of 12 pairs by 4 raters" in out.getvalue()
    assert "STS: no valid ratings, no fit" in out.getvalue()
    with pytest.raises(CommandError, match="no dataset named 'nope'"):
        call_command("rater_model_fit", "nope")
