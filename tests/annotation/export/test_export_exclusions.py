"""Exports hold valid ratings only, and the manifest lists the dataset's exclusions."""

import csv
import json

import pytest

from annotation.export import dataset_export
from annotation.models import Pair, Rating, RatingStatus
from sampling.selectors import pivots, split_items
from tests.factories import UserFactory
from tests.support.exclusion_support import exclude, undo
from tests.support.export_data import rated_factory_dataset
from tests.support.queue_support import claim, rater, submit

pytestmark = pytest.mark.django_db


def raw_raters(folder) -> set[str]:
    raters = set()
    for path in folder.glob("*_raw.csv"):
        with path.open(newline="") as handle:
            raters |= {row["rater_id"] for row in csv.DictReader(handle)}
    return raters


def top_up(dataset) -> int:
    newcomer, done = rater(), 0
    while (assignment := claim(newcomer, dataset)) is not None:
        submit(newcomer, dataset, assignment.slot_id, f"top-{done}", score=4.0)
        done += 1
    return done


def test_excluded_ratings_leave_the_export_until_their_pairs_are_topped_up(
    tmp_path, django_capture_on_commit_callbacks
):
    rated = rated_factory_dataset(n_images=12)
    victim, admin = rated.raters[0], UserFactory(roles=["admin"])
    theirs = set(Rating.objects.filter(rater=victim, pair__in=rated.complete).values_list("pair_id", flat=True))
    assert theirs
    exclude(django_capture_on_commit_callbacks, dataset=rated.dataset, rater=victim, reason="speeder", created_by=admin)

    first = tmp_path / "first"
    dataset_export(dataset_name=rated.dataset.name, out_dir=first, formats=["cxc"])
    manifest = json.loads((first / "manifest.json").read_text())
    assert manifest["totals"]["pairs"] == len(rated.complete) - len(theirs)
    (entry,) = manifest["exclusions"]
    assert (entry["reason"], entry["state"], entry["ratings_excluded"]) == (
        "speeder",
        "applied",
        Rating.objects.filter(rater=victim).count(),
    )
    assert entry["rater_id"] not in raw_raters(first)
    assert victim.username not in json.dumps(manifest)

    assert top_up(rated.dataset) >= len(theirs)  # the incomplete pairs get one more rating too
    second = tmp_path / "second"
    dataset_export(dataset_name=rated.dataset.name, out_dir=second, formats=["cxc"])
    manifest = json.loads((second / "manifest.json").read_text())
    assert manifest["totals"] == {"pairs": len(rated.complete), "ratings": 5 * len(rated.complete)}
    assert entry["rater_id"] not in raw_raters(second)
    assert manifest["exclusions"][0]["rater_id"] == entry["rater_id"]


def test_superseded_ratings_stay_out_after_an_undo(tmp_path, django_capture_on_commit_callbacks):
    rated = rated_factory_dataset(n_images=12, seed=3)
    victim, admin = rated.raters[1], UserFactory(roles=["admin"])
    exclusion = exclude(
        django_capture_on_commit_callbacks, dataset=rated.dataset, rater=victim, reason="x", created_by=admin
    )
    top_up(rated.dataset)
    undo(django_capture_on_commit_callbacks, exclusion, admin)
    assert Rating.objects.filter(rater=victim, status=RatingStatus.SUPERSEDED).exists()
    dataset_export(dataset_name=rated.dataset.name, out_dir=tmp_path / "out", formats=["cxc"])
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["totals"]["ratings"] == 5 * manifest["totals"]["pairs"]
    assert manifest["exclusions"][0]["state"] == "undone"
    assert manifest["exclusions"][0]["rater_id"] not in raw_raters(tmp_path / "out")


def test_phase_two_pivots_score_pairs_by_their_valid_ratings(django_capture_on_commit_callbacks):
    rated = rated_factory_dataset(n_images=12, seed=5)
    victim, admin = rated.raters[2], UserFactory(roles=["admin"])
    exclude(django_capture_on_commit_callbacks, dataset=rated.dataset, rater=victim, reason="x", created_by=admin)
    top_up(rated.dataset)
    got = pivots(split=rated.split, items=split_items(split=rated.split))
    expected = {}
    for pair in Pair.objects.filter(split=rated.split, kind="SIS", ratings_done=5):
        scores = list(pair.ratings.filter(status=RatingStatus.VALID).values_list("score", flat=True))
        expected[pair.id] = sum(scores) / len(scores)
    assert len(got.sis_scores) == len(expected)
    assert sorted(round(float(s), 6) for s in got.sis_scores) == sorted(round(s, 6) for s in expected.values())
