"""Kinds served only by name (NAMED_ONLY_KINDS: the failure review, REV): a claim of any
kind never serves one, neither from the queue nor as gold, while a claim that names the
kind does, with the query, the truth image and the retrieved one in that order. Every
test runs on each engine (see queue_support.engine)."""

from __future__ import annotations

import pytest

from annotation.models import GoldLease, GoldPair, GoldSource, Pair, SamplingMethod, TaskKind
from annotation.serving.gold_ids import ids_reserve
from annotation.serving.pairs import PairSpec, pairs_create_bulk
from tests.factories import CaptionFactory, ImageFactory, SamplingBatchFactory, SplitFactory
from tests.support import queue_support
from tests.support.gold_serving import set_rate
from tests.support.queue_support import claim, queue_pairs, rater, submit

pytestmark = pytest.mark.django_db
engine = queue_support.engine  # every test taking it runs on each engine


def review_pair(split, *, priority: int = 0) -> tuple[Pair, list]:
    """A REV pair whose truth image has a higher id than the retrieved one: their order is
    the review's, never canonical."""
    retrieved = ImageFactory(split=split, dataset=split.dataset)
    truth = ImageFactory(split=split, dataset=split.dataset)
    caption = CaptionFactory(image=truth)
    batch = SamplingBatchFactory(split=split, dataset=split.dataset, ratings_per_pair=2, priority=priority)
    spec = PairSpec(TaskKind.REV, SamplingMethod.REVIEW, caption_a=caption.id, image_a=truth.id, image_b=retrieved.id)
    pairs_create_bulk(batch=batch, specs=[spec])
    return Pair.objects.get(batch=batch), [caption, truth, retrieved]


def test_a_claim_of_any_kind_never_serves_a_review(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    pair, (caption, truth, retrieved) = review_pair(split, priority=9)
    _, (sis,) = queue_pairs(split=split, kind=TaskKind.SIS)
    user = rater(kinds=["SIS", "REV"])
    first = claim(user, dataset)
    assert (first.kind, first.pair_id) == ("SIS", sis.id)  # the review's higher priority is not for this claim
    submit(user, dataset, first.slot_id, "sis-1")
    assert claim(user, dataset) is None
    named = claim(user, dataset, kind="REV")
    assert (named.kind, named.pair_id) == ("REV", pair.id)
    assert (pair.image_a_id, pair.image_b_id) == (truth.id, retrieved.id) and truth.id > retrieved.id
    assert [item.type for item in named.items] == ["caption", "image", "image"]
    assert named.items[0].text == caption.text
    assert [item.url for item in named.items[1:]] == [
        dataset.image_url_prefix + truth.file_path,
        dataset.image_url_prefix + retrieved.file_path,
    ]


def test_gold_of_a_kind_served_by_name_comes_only_to_its_claims(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    _, (caption, truth, retrieved) = review_pair(split)
    queue_pairs(split=split, kind=TaskKind.SIS, n_pairs=3)
    GoldPair.objects.create(
        pk=ids_reserve(Pair, 1)[0],
        dataset=dataset,
        split=split,
        kind=TaskKind.REV,
        caption_a=caption,
        image_a=retrieved,
        image_b=truth,
        gold_score=1.0,
        source=GoldSource.UPLOAD,
    )
    set_rate(dataset, 1)
    user = rater(kinds=["SIS", "REV"])
    for n in range(3):
        assignment = claim(user, dataset)
        assert assignment.kind == "SIS"
        submit(user, dataset, assignment.slot_id, f"sis-{n}")
    assert not GoldLease.objects.filter(rater=user).exists()
    gold = claim(user, dataset, kind="REV")
    assert GoldLease.objects.filter(pk=gold.slot_id, kind=TaskKind.REV).exists()
