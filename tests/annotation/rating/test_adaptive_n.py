"""Adaptive N (annotation/rating/adaptive.py): a pair of an adaptive batch starts with the
minimum of slots and, once they are all rated, closes when its interval is narrow enough
or gets one more slot, up to its maximum. Through the policy, the HTTP API (token fast
path and DRF), the stepwise submit, and a race with exclusions on PostgreSQL."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection
from django.db.models import F

from annotation.models import (
    Pair,
    QueueCounter,
    RaterEstimate,
    RaterModelFit,
    Rating,
    RatingSlot,
    SlotState,
    TaskKind,
)
from annotation.rating import adaptive
from annotation.serving import rating_submit as queue_submit
from tests.factories import SplitFactory, UserFactory
from tests.support.exclusion_race import race
from tests.support.exclusion_support import exclude, pair_problems, undo
from tests.support.queue_support import claim, client_for, queue_pairs, rate_url, rater, submit, submit_kwargs
from tests.support.rating_support import db_id

pytestmark = pytest.mark.django_db

MINIMUM, MAXIMUM, HALF_WIDTH = 3, 6, 0.8
AGREEING = [4.8, 4.9, 5.0]  # at the top end the scale leaves it little room to be wrong: closes
DISPUTED = [0.0, 2.5, 5.0, 1.0, 4.0, 0.5]


def adaptive_pair(**kwargs):
    _, pairs = queue_pairs(ratings_per_pair=MINIMUM, adaptive=(MAXIMUM, HALF_WIDTH), **kwargs)
    return pairs[0]


def rate_in_turn(pair, scores, raters=None):
    """Each score by its own rater, claimed and submitted through the policy."""
    raters = raters or [rater() for _ in scores]
    for number, (user, score) in enumerate(zip(raters, scores, strict=True)):
        assignment = claim(user, pair.dataset)
        assert assignment is not None and assignment.pair_id == pair.id, f"rating {number} found nothing to claim"
        submit(user, pair.dataset, assignment.slot_id, f"{pair.id}-{number}", score=score)
    pair.refresh_from_db()
    return raters


def open_pairs(pair) -> int:
    return QueueCounter.objects.get(dataset_id=pair.dataset_id, kind=pair.kind).pairs_open


def test_the_batchs_rule_is_copied_to_its_pairs_with_the_minimum_of_slots():
    pair = adaptive_pair()
    assert (pair.ratings_required, pair.ratings_max) == (MINIMUM, MAXIMUM)
    assert RatingSlot.objects.filter(pair=pair).count() == MINIMUM
    _, fixed = queue_pairs(ratings_per_pair=5)
    assert (fixed[0].ratings_required, fixed[0].ratings_max) == (5, None)


def test_agreeing_ratings_close_the_pair_at_the_minimum():
    pair = adaptive_pair()
    rate_in_turn(pair, AGREEING)
    assert (pair.ratings_done, pair.ratings_required) == (MINIMUM, MINIMUM)
    assert set(RatingSlot.objects.filter(pair=pair).values_list("state", "pair_complete")) == {(SlotState.DONE, True)}
    assert open_pairs(pair) == 0
    assert claim(rater(), pair.dataset) is None


def test_a_disputed_pair_grows_one_slot_at_a_time_up_to_its_maximum():
    pair = adaptive_pair()
    raters = rate_in_turn(pair, DISPUTED[:MINIMUM])
    assert (pair.ratings_done, pair.ratings_required) == (3, 4)
    slots = RatingSlot.objects.filter(pair=pair)
    assert list(slots.filter(state=SlotState.OPEN).values_list("index", "pair_done", "pair_complete")) == [
        (3, 3, False)
    ]
    assert not slots.filter(pair_complete=True).exists()
    assert open_pairs(pair) == 1
    for done in range(4, MAXIMUM + 1):
        raters += rate_in_turn(pair, [DISPUTED[done - 1]])
        assert pair.ratings_done == done
        assert pair.ratings_required == min(done + 1, MAXIMUM)
    assert (pair.ratings_done, pair.ratings_required) == (MAXIMUM, MAXIMUM)
    assert open_pairs(pair) == 0
    assert claim(rater(), pair.dataset) is None
    assert len(set(Rating.objects.filter(pair=pair).values_list("rater_id", flat=True))) == MAXIMUM
    assert pair_problems(pair.dataset_id) == []


def test_a_pair_of_a_fixed_batch_closes_at_n_however_disputed():
    _, pairs = queue_pairs(ratings_per_pair=3)
    rate_in_turn(pairs[0], DISPUTED[:3])
    assert (pairs[0].ratings_done, pairs[0].ratings_required, RatingSlot.objects.filter(pair=pairs[0]).count()) == (
        3,
        3,
        3,
    )


def fit_for(dataset, raters, noise_sd, *, pooled=1.0):
    fit = RaterModelFit.objects.create(
        dataset=dataset,
        kind=TaskKind.SIS,
        fitted_at="2026-01-01T00:00:00Z",
        settings={},
        ratings=1000,
        pairs=200,
        raters=len(raters),
        grand_mean=2.5,
        latent_sd=1.5,
        pooled_noise_sd=pooled,
        iterations=10,
        converged=True,
        seconds=0.1,
    )
    RaterEstimate.objects.bulk_create(
        RaterEstimate(
            fit=fit,
            rater=user,
            ratings=300,
            bias=0.0,
            bias_low=-0.1,
            bias_high=0.1,
            noise_sd=sd,
            noise_low=sd * 0.9,
            noise_high=sd * 1.1,
        )
        for user, sd in zip(raters, noise_sd, strict=True)
    )


@pytest.mark.parametrize(("noise_sd", "closes"), [(0.3, True), (1.5, False)])
def test_the_raters_estimates_decide_whether_moderate_disagreement_closes(noise_sd, closes):
    pair = adaptive_pair()
    raters = [rater() for _ in range(MINIMUM)]
    fit_for(pair.dataset, raters, [noise_sd] * MINIMUM)
    rate_in_turn(pair, [2.6, 3.0, 3.4], raters)
    assert (pair.ratings_required == MINIMUM) is closes


def test_a_rater_the_fit_does_not_know_weighs_as_its_pooled_noise():
    pair = adaptive_pair()
    known = [rater() for _ in range(MINIMUM)]
    fit_for(pair.dataset, known, [0.3] * MINIMUM, pooled=1.5)
    rate_in_turn(pair, [2.6, 3.0, 3.4])  # three raters the fit has never seen
    assert pair.ratings_required == MINIMUM + 1


def test_the_rule_runs_after_a_submit_through_the_api_both_ways():
    for way in ("token", "forced"):
        from tests.support import queue_support

        queue_support._AUTH_WAY["way"] = way
        try:
            pair = adaptive_pair()
            for number, score in enumerate(DISPUTED[:MINIMUM]):
                client = client_for(rater())
                slot = client.post(rate_url(pair.dataset, "claim"), {"kind": "SIS"}, format="json").json()["slot_id"]
                stored = client.post(
                    rate_url(pair.dataset, "submit", slot), submit_kwargs(f"k{number}", score), format="json"
                )
                assert stored.status_code == 201, stored.json()
            pair.refresh_from_db()
            assert pair.ratings_required == MINIMUM + 1, way
        finally:
            queue_support._AUTH_WAY["way"] = "forced"


def test_the_stepwise_submit_reports_a_filled_adaptive_pair_too():
    pair = adaptive_pair()
    users = [rater() for _ in range(MINIMUM)]
    results = []
    for number, user in enumerate(users):
        assignment = claim(user, pair.dataset)
        results.append(
            queue_submit(
                rater=user,
                dataset=pair.dataset.name,
                slot_id=assignment.slot_id,
                tried_fast=True,
                **submit_kwargs(f"s{number}", DISPUTED[number]),
            )
        )
    assert [result.adaptive_full for result in results] == [False, False, True]
    assert adaptive.pair_extend_or_close(pair.id) is True
    assert adaptive.pair_extend_or_close(pair.id) is False  # not full any more: left as it is


def test_the_database_refuses_a_pair_beyond_its_maximum():
    pair = adaptive_pair()
    with pytest.raises(IntegrityError, match="pair_required_within_max"):
        Pair.objects.filter(pk=pair.pk).update(ratings_required=F("ratings_max") + 1)


def test_an_exclusion_reopens_an_adaptive_pair_and_its_undo_keeps_the_rule(django_capture_on_commit_callbacks):
    pair = adaptive_pair()
    raters = rate_in_turn(pair, AGREEING)
    admin = UserFactory(roles=["admin"])
    exclusion = exclude(
        django_capture_on_commit_callbacks, dataset=pair.dataset, rater=raters[0], reason="spam", created_by=admin
    )
    pair.refresh_from_db()
    assert (pair.ratings_done, pair.ratings_required) == (MINIMUM - 1, MINIMUM)
    assert pair_problems(pair.dataset_id) == []
    # The top-up is rated far off: the pair is decided again and grows.
    rate_in_turn(pair, [0.0])
    assert (pair.ratings_done, pair.ratings_required) == (MINIMUM, MINIMUM + 1)
    undo(django_capture_on_commit_callbacks, exclusion, by=admin)
    pair.refresh_from_db()
    assert pair.ratings_done <= pair.ratings_required <= pair.ratings_max
    assert pair_problems(pair.dataset_id) == []


@pytest.mark.postgres
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_racing_raters_and_exclusions_keep_every_adaptive_pair_within_its_rule():
    assert connection.vendor == "postgresql"
    report = race(raters=24, pairs=40, per_pair=MINIMUM, rounds=8, adaptive=(MAXIMUM, HALF_WIDTH))
    print(report)
    assert report["hung_threads"] == 0, report
    assert report["errors"] == [], report
    assert report["problems"] == [], report
    assert report["acknowledged_missing"] == 0, report
    assert report["pairs_over_max"] == 0, report
    assert report["pairs_incomplete"] == 0, report
    assert report["pairs_extended"] > 10, report  # the race did reach the rule
    assert report["exclusions"] >= 4, report


def test_the_sampling_services_check_the_rule():
    from sampling.services import AdaptiveN, SamplingInputError, sampling_batch_create_from_upload

    split = SplitFactory()
    for rule, message in [
        (AdaptiveN(maximum=3, half_width=0.5), "maximum must be a whole number above ratings_per_pair"),
        (AdaptiveN(maximum=101, half_width=0.5), "at most 100"),
        (AdaptiveN(maximum=8, half_width=0), "half-width must be above 0"),
        (AdaptiveN(maximum=8, half_width=6), "at most 5"),
        (AdaptiveN(maximum=8), "needs either a precision target"),
        (AdaptiveN(maximum=8, half_width=0.5, budget=100), "or a budget, not both"),
        (AdaptiveN(maximum=8, budget=0), "the budget must be a whole number of ratings, 1 or more"),
        (AdaptiveN(maximum=3, budget=100), "maximum must be a whole number above ratings_per_pair"),
    ]:
        with pytest.raises(SamplingInputError, match=message):
            sampling_batch_create_from_upload(
                dataset_name=split.dataset.name,
                split_name=split.name,
                path="/nonexistent.csv",
                ratings_per_pair=3,
                adaptive=rule,
            )


def test_the_slot_ids_of_the_api_reach_the_added_slot():
    pair = adaptive_pair()
    rate_in_turn(pair, DISPUTED[:MINIMUM])
    client = client_for(rater())
    claimed = client.post(rate_url(pair.dataset, "claim"), {"kind": "SIS"}, format="json").json()
    added = RatingSlot.objects.get(pk=db_id("slot", claimed["slot_id"]))
    assert (added.pair_id, added.index) == (pair.id, MINIMUM)


def test_the_export_records_the_rule_and_each_pairs_final_n(tmp_path):
    import json

    from annotation.export import dataset_export

    split = SplitFactory()
    _, pairs = queue_pairs(split=split, n_pairs=2, ratings_per_pair=MINIMUM, adaptive=(MAXIMUM, HALF_WIDTH))
    rate_in_turn(pairs[0], AGREEING)
    rate_in_turn(pairs[1], DISPUTED[:MINIMUM])
    while pairs[1].ratings_done < pairs[1].ratings_required:  # disputed: it grows, up to its maximum
        rate_in_turn(pairs[1], [2.5])
    assert pairs[1].ratings_required > MINIMUM
    dataset_export(dataset_name=split.dataset.name, out_dir=tmp_path, formats="jsonl")
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    (batch,) = manifest["batches"]
    assert (
        batch["ratings_per_pair"],
        batch["ratings_max"],
        batch["adaptive_half_width"],
        batch["adaptive_budget"],
    ) == (
        MINIMUM,
        MAXIMUM,
        HALF_WIDTH,
        None,
    )
    (rows_file,) = tmp_path.glob("*sis*.jsonl")
    counts = sorted(json.loads(line)["count"] for line in rows_file.read_text().splitlines())
    assert counts == sorted([MINIMUM, pairs[1].ratings_required])


def test_the_prior_of_the_pairs_sampling_method_narrows_its_interval():
    """Moderate disagreement among unknown raters: the method's tight prior (all its pairs
    score alike) closes the pair; the loose prior of all pairs would not."""
    pair = adaptive_pair()
    fit_for(pair.dataset, [], [], pooled=1.3)
    RaterModelFit.objects.filter(dataset=pair.dataset).update(priors={pair.sampling_method: {"mean": 3.0, "sd": 0.2}})
    rate_in_turn(pair, [2.6, 3.0, 3.4])
    assert pair.ratings_required == MINIMUM
    other = adaptive_pair(split=SplitFactory(dataset=pair.dataset, name="test"))
    RaterModelFit.objects.filter(dataset=pair.dataset).update(priors={"c2c_isim": {"mean": 3.0, "sd": 0.2}})
    rate_in_turn(other, [2.6, 3.0, 3.4])
    assert other.ratings_required == MINIMUM + 1


def test_the_decision_locks_the_pair_row_alone():
    """Not the batch row it reads the half-width from: every decision of a batch would
    queue on it, and a priority change (batch, then its pairs) would deadlock with one."""
    from django.test.utils import CaptureQueriesContext

    pair = adaptive_pair()
    rate_in_turn(pair, AGREEING)
    with CaptureQueriesContext(connection) as queries:
        adaptive.pair_extend_or_close(pair.id)
    (locking,) = [q["sql"] for q in queries.captured_queries if "FOR NO KEY UPDATE" in q["sql"]]
    assert locking.endswith('FOR NO KEY UPDATE OF "annotation_pair"')
