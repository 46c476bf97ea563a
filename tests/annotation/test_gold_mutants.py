"""Promoting agreed pairs to gold, the details `make mutation` found untested: only
complete pairs in the queue, the agreement bound itself, the reference's precision, the
limit, the pair's items, its order and who promoted, and the candidates the admin's promote
page lists (annotation.quality.gold.upload.gold_pairs_promote, gold_promote_candidates)."""

import re

import pytest
from rest_framework.test import APIClient

from annotation.models import GoldPair, Pair, SamplingMethod, TaskKind
from annotation.quality.gold.upload import GoldInputError, gold_pairs_promote, gold_promote_candidates
from annotation.rating.pairs import PairSpec, pairs_create_bulk, pairs_retire
from annotation.rating.policy import slot_skip
from tests.annotation.exclusion_support import exclude
from tests.annotation.queue_support import claim, queue_pairs, rater, submit
from tests.factories import ImageFactory, SamplingBatchFactory, SplitFactory, UserFactory

PROMOTE = "/admin/annotation/goldpair/promote/"

pytestmark = pytest.mark.django_db


def rated_sts(scores_per_pair: list[list[float]], *, incomplete: int = 0):
    """STS pairs, pair i rated with scores_per_pair[i] (one rater per score); the first
    ``incomplete`` pairs get one slot more than they are rated, so they stay incomplete."""
    split = SplitFactory()
    width = max(len(scores) for scores in scores_per_pair)
    _, pairs = queue_pairs(split=split, kind="STS", n_pairs=len(scores_per_pair), ratings_per_pair=width)
    wanted = {pair.id: scores for pair, scores in zip(pairs, scores_per_pair, strict=True)}
    for number in range(width):
        user = rater(["STS"])
        while (assignment := claim(user, split.dataset)) is not None:
            scores = wanted[assignment.pair_id]
            if number < len(scores):
                submit(user, split.dataset, assignment.slot_id, f"{number}-{assignment.pair_id}", score=scores[number])
            else:
                slot_skip(rater=user, dataset=split.dataset.name, slot_id=assignment.slot_id)
    return split.dataset, pairs


def test_the_api_promotes_complete_agreed_pairs_with_their_items_and_promoter(clock):
    admin = UserFactory(roles=["admin"])
    admin_api = APIClient()
    admin_api.force_authenticate(admin)
    dataset, pairs = rated_sts([[3.0, 3.0], [1.0, 2.0], [4.0, 4.0], [2.0, 2.0]])
    pairs_retire(pair_ids=[pairs[2].id])
    highest_pair = Pair.objects.order_by("-id").values_list("id", flat=True).first()
    answer = admin_api.post(
        f"/api/datasets/{dataset.name}/gold/promote/", {"kind": "STS", "max_sd": 0.6}, format="json"
    )
    assert answer.status_code == 201, answer.json()
    assert answer.json() == {"created": 2}, "sd 0.71 is over 0.6 (0.5 only without Bessel's correction); retired"
    promoted = {gold.source_pair_id: gold for gold in GoldPair.objects.all()}
    assert set(promoted) == {pairs[0].id, pairs[3].id}
    for pair in (pairs[0], pairs[3]):
        gold = promoted[pair.id]
        items = (gold.caption_a_id, gold.caption_b_id, gold.image_a_id, gold.image_b_id, gold.swapped)
        assert items == (pair.caption_a_id, pair.caption_b_id, pair.image_a_id, pair.image_b_id, pair.swapped)
        assert gold.created_by == admin
        assert gold.pk > highest_pair, "gold takes its id from the pairs' sequence"


def test_the_reference_keeps_four_decimals_and_the_limit_holds(clock):
    dataset, pairs = rated_sts([[1.0, 2.0, 2.0], [2.0, 3.0, 3.0]])
    admin = UserFactory(roles=["admin"])
    assert gold_pairs_promote(dataset=dataset, kind="STS", max_sd=1.0, limit=1, created_by=admin) == 1
    assert GoldPair.objects.get().gold_score == pytest.approx(1.6667, abs=1e-9)
    assert gold_pairs_promote(dataset=dataset, kind="STS", max_sd=1.0, limit=1, created_by=admin) == 1
    assert sorted(GoldPair.objects.values_list("source_pair_id", flat=True)) == [pairs[0].id, pairs[1].id]


def test_incomplete_pairs_are_not_promoted(clock):
    dataset, _ = rated_sts([[3.0, 3.0], [3.0]])
    assert gold_pairs_promote(dataset=dataset, kind="STS", max_sd=0) == 1


@pytest.mark.parametrize(("max_sd", "limit"), [(-0.01, 1), (5.01, 1), (1.0, 0)])
def test_bad_bounds_are_refused(max_sd, limit):
    with pytest.raises(GoldInputError, match="^max_sd must be between 0 and 5 and limit at least 1$"):
        gold_pairs_promote(dataset=SplitFactory().dataset, kind="STS", max_sd=max_sd, limit=limit)


@pytest.mark.parametrize("max_sd", [0.0, 5.0])
def test_the_bounds_themselves_are_accepted(max_sd, clock):
    dataset, _ = rated_sts([[3.0, 3.0]])
    assert gold_pairs_promote(dataset=dataset, kind="STS", max_sd=max_sd, limit=1) == 1


def test_candidates_are_the_complete_agreed_pairs_of_that_dataset_and_kind(clock):
    """The second pair's two ratings agree, but it waits for a third."""
    dataset, pairs = rated_sts([[3.0, 3.0, 3.0], [2.0, 2.0]])
    rated_sts([[4.0, 4.0]])
    assert [c.pair_id for c in gold_promote_candidates(dataset=dataset, kind="STS", max_sd=0)] == [pairs[0].id]
    assert gold_promote_candidates(dataset=dataset, kind="SIS", max_sd=0) == []


def test_candidates_for_a_bound_over_five_are_refused():
    with pytest.raises(GoldInputError, match="^max_sd must be between 0 and 5$"):
        gold_promote_candidates(dataset=SplitFactory().dataset, kind="STS", max_sd=5.5)


def test_the_promote_page_shows_each_candidates_ratings_mean_and_sample_sd(admin_client, clock):
    dataset, pairs = rated_sts([[1.0, 2.0, 2.0]])
    page = admin_client.get(PROMOTE, {"dataset": dataset.pk, "kind": "STS", "max_sd": 1}).content.decode()
    row = re.search(rf'name="pair" value="{pairs[0].id}".*?</tr>', page, re.S).group(0)
    cells = re.findall(r'<td data-label="[^"]+">([^<]*)</td>', row)
    assert cells == ["3", "1.67", "0.58"], "the sample sd (0.47 would be the population's)"


def test_a_promoted_pair_keeps_the_order_its_raters_saw(clock):
    split = SplitFactory()
    batch = SamplingBatchFactory(split=split, dataset=split.dataset, ratings_per_pair=2)
    first, second = (ImageFactory(split=split, dataset=split.dataset) for _ in range(2))
    spec = PairSpec(TaskKind.SIS, SamplingMethod.I2I_CSIM, image_a=second.id, image_b=first.id)
    pairs_create_bulk(batch=batch, specs=[spec])
    for number in range(2):
        user = rater(["SIS"])
        submit(user, split.dataset, claim(user, split.dataset).slot_id, f"seen-{number}", score=3.0)
    assert gold_pairs_promote(dataset=split.dataset, kind="SIS", max_sd=0) == 1
    gold = GoldPair.objects.get()
    assert (gold.image_a_id, gold.image_b_id, gold.swapped) == (first.id, second.id, True), "second first, as sampled"


def test_an_excluded_rating_does_not_count_against_agreement(django_capture_on_commit_callbacks, clock):
    """The excluded rater's 0 is replaced by a 3: the pair's valid ratings agree."""
    split = SplitFactory()
    _, (pair,) = queue_pairs(split=split, kind="STS", n_pairs=1, ratings_per_pair=2)
    careless, careful, later = (rater(["STS"]) for _ in range(3))
    for user, score in ((careless, 0.0), (careful, 3.0)):
        submit(user, split.dataset, claim(user, split.dataset).slot_id, f"{user.pk}", score=score)
    admin = UserFactory(roles=["admin"])
    clock.advance(60)
    exclude(django_capture_on_commit_callbacks, dataset=split.dataset, rater=careless, reason="x", created_by=admin)
    submit(later, split.dataset, claim(later, split.dataset).slot_id, "later", score=3.0)
    (candidate,) = gold_promote_candidates(dataset=split.dataset, kind="STS", max_sd=0)
    assert (candidate.pair_id, candidate.ratings, candidate.mean) == (pair.id, 2, 3.0)
