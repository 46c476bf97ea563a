"""Fitting the rater-effects model to a dataset's ratings and storing it
(annotation/quality/rater_fits.py): per kind, valid ratings only, replacing the last
fit; by the beat with the dashboard snapshot and by the rater_model_fit command."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from annotation.dashboard.services import campaign_refresh_all
from annotation.models import RaterEstimate, RaterModelFit, Rating, RatingStatus, TaskKind
from annotation.quality.rater_fits import rater_model_refit
from tests.factories import SplitFactory, UserFactory
from tests.support.exclusion_support import exclude
from tests.support.queue_support import queue_pairs
from tests.support.rating_support import rate_pair

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
    assert set(sis.priors) == {"i2i_csim"}  # one prior per sampling method of the kind
    assert sis.priors["i2i_csim"]["sd"] > 0
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


def test_an_export_carries_the_models_scores_and_the_raters_effects(rated, tmp_path):
    import json

    import numpy as np
    import pyarrow.parquet as pq

    from annotation.export import dataset_export
    from annotation.quality.rater_effects import fit

    dataset, raters = rated
    dataset_export(dataset_name=dataset.name, out_dir=tmp_path, formats="cxc,jsonl,parquet")
    rows = [json.loads(line) for line in (tmp_path / "sis_val.jsonl").read_text().splitlines()]
    assert len(rows) == 12
    for row in rows:
        assert 0 <= row["model_ci95_low"] <= row["model_score"] <= row["model_ci95_high"] <= 5
    # The same scores as the model fitted to the same ratings here.
    ratings = Rating.objects.filter(pair__dataset=dataset).order_by("pair_id", "id")
    _, pair_index = np.unique(list(ratings.values_list("pair_id", flat=True)), return_inverse=True)
    _, rater_index = np.unique(list(ratings.values_list("rater_id", flat=True)), return_inverse=True)
    expected = fit(pair_index, rater_index, np.array(list(ratings.values_list("score", flat=True))))
    by_mean = sorted(zip(expected.pair_score, [row["model_score"] for row in rows], strict=True))
    assert np.allclose(sorted(expected.pair_score), sorted(row["model_score"] for row in rows), atol=1e-4), by_mean
    # Who is who, from the ratings in the file: the erratic rater strays furthest from the
    # pairs' means, the lenient one sits highest above them.
    offsets: dict[str, list[float]] = {}
    for row in rows:
        for rating in row["ratings"]:
            offsets.setdefault(rating["rater_id"], []).append(rating["score"] - row["mean"])
    erratic = max(offsets, key=lambda name: np.mean(np.abs(offsets[name])))
    lenient = max(offsets, key=lambda name: np.mean(offsets[name]))
    table = pq.read_table(tmp_path / "sis_val.parquet")
    assert table.column("model_score").to_pylist() == [row["model_score"] for row in rows]
    assert "model_score" not in (tmp_path / "sis_val.csv").read_text().splitlines()[0]  # the CxC file as released
    effects = json.loads((tmp_path / "rater_model.json").read_text())
    sis = effects["tasks"]["SIS"]
    assert (sis["ratings"], sis["raters"], effects["tasks"]["STS"]) == (48, 4, None)
    pseudonyms = {rating["rater_id"] for row in rows for rating in row["ratings"]}
    assert {rater["rater_id"] for rater in sis["rater_effects"]} == pseudonyms
    assert raters["lenient"].username not in json.dumps(effects)  # pseudonyms only
    noisiest, *_ = sis["rater_effects"]
    assert noisiest["rater_id"] == erratic
    assert noisiest["noise_sd"] == max(rater["noise_sd"] for rater in sis["rater_effects"])
    assert max(sis["rater_effects"], key=lambda rater: rater["bias"])["rater_id"] == lenient
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["rater_model"]["settings"]["noise_prior_df"] == 4.0
    assert manifest["rater_model"]["tasks"]["SIS"]["pairs"] == 12
    assert "rater_model.json" in {entry["name"] for entry in manifest["files"]}
