"""The claim service: what each kind shows, queue order by priority and progress,
qualifications, never a pair twice, the held lease renewed. Every test taking ``engine``
runs on each engine (see queue_support.engine)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction

from annotation.core.errors import Forbidden, NotFound
from annotation.models import Pair, RatingSlot, SlotState, TaskKind
from annotation.serving import QueueInputError, slot_claim, slot_skip
from tests.factories import DatasetFactory, SplitFactory, UserFactory
from tests.support import queue_support
from tests.support.queue_support import TTL, claim, queue_pairs, rater, submit

pytestmark = pytest.mark.django_db

engine = queue_support.engine  # every test taking it runs on each engine


def test_claim_returns_what_each_kind_shows(engine, clock):
    split = SplitFactory()
    queue_pairs(split=split, kind=TaskKind.STS)
    queue_pairs(split=split, kind=TaskKind.SIS)
    queue_pairs(split=split, kind=TaskKind.SITS)
    dataset = split.dataset
    user = rater()

    seen = {}
    for kind in ("STS", "SIS", "SITS"):
        assignment = claim(user, dataset, kind=kind)
        seen[kind] = assignment
        assert assignment.kind == kind
        assert assignment.dataset == dataset.name
        assert assignment.lease_expires_at == clock.now + timedelta(seconds=TTL)
        assert assignment.resumed is False
        pair = Pair.objects.get(pk=assignment.pair_id)
        slot = RatingSlot.objects.get(pk=assignment.slot_id)
        assert (slot.pair_id, slot.state, slot.rater_id) == (pair.id, SlotState.LEASED, user.id)

    sts = Pair.objects.get(pk=seen["STS"].pair_id)
    assert [i.type for i in seen["STS"].items] == ["caption", "caption"]
    assert [i.text for i in seen["STS"].items] == [sts.caption_a.text, sts.caption_b.text]
    sis = Pair.objects.get(pk=seen["SIS"].pair_id)
    assert [i.type for i in seen["SIS"].items] == ["image", "image"]
    assert [i.url for i in seen["SIS"].items] == [
        dataset.image_url_prefix + sis.image_a.file_path,
        dataset.image_url_prefix + sis.image_b.file_path,
    ]
    sits = Pair.objects.get(pk=seen["SITS"].pair_id)
    assert [i.type for i in seen["SITS"].items] == ["caption", "image"]
    assert seen["SITS"].items[0].text == sits.caption_a.text
    assert seen["SITS"].items[1].url == dataset.image_url_prefix + sits.image_a.file_path


def test_claim_serves_images_root_datasets_through_the_image_view(engine, clock, tmp_path):
    dataset = DatasetFactory(images_root=str(tmp_path), image_url_prefix="")
    _, (pair,) = queue_pairs(split=SplitFactory(dataset=dataset), kind=TaskKind.SIS)
    assignment = claim(rater(), dataset)
    assert [i.url for i in assignment.items] == [
        f"/media/images/{dataset.name}/{pair.image_a.key}",
        f"/media/images/{dataset.name}/{pair.image_b.key}",
    ]


def test_claim_takes_highest_priority_then_pair_closest_to_completion(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    _, low = queue_pairs(split=split, n_pairs=2, priority=0)
    _, high = queue_pairs(split=split, n_pairs=3, priority=5)
    # Seed ratings so that high[2] has 2 ratings done and high[1] has 1.
    for pair, n in ((high[2], 2), (high[1], 1)):
        for _ in range(n):
            other = rater()
            slot = RatingSlot.objects.filter(pair=pair, state=SlotState.OPEN).order_by("index").first()
            RatingSlot.objects.filter(pk=slot.pk).update(
                state=SlotState.LEASED, rater=other, lease_expires_at=clock.now
            )
            submit(other, dataset, slot.pk, key=f"seed-{slot.pk}")
    served = [claim(rater(), dataset).pair_id for _ in range(3 + 4 + 5 + 1)]
    # Free slots of the closest pair first, then the next; the low batch only afterwards.
    assert served == [high[2].id] * 3 + [high[1].id] * 4 + [high[0].id] * 5 + [low[0].id]


def test_claim_order_walks_priorities_and_progress_to_the_end(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    _, low = queue_pairs(split=split, n_pairs=2, ratings_per_pair=1, priority=0)
    _, high = queue_pairs(split=split, n_pairs=2, ratings_per_pair=1, priority=3)
    served = [claim(rater(), dataset).pair_id for _ in range(4)]
    assert served == [high[0].id, high[1].id, low[0].id, low[1].id]
    assert claim(rater(), dataset) is None


def test_claim_only_serves_qualified_kinds(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    queue_pairs(split=split, kind=TaskKind.STS, n_pairs=2)
    _, (sis,) = queue_pairs(split=split, kind=TaskKind.SIS, priority=9)
    sts_only = rater(kinds=["STS"])
    assignment = claim(sts_only, dataset)
    assert assignment.kind == "STS"  # the higher-priority SIS pair is not theirs
    with pytest.raises(Forbidden, match="not qualified for SIS"):
        claim(rater(kinds=["STS"]), dataset, kind="SIS")
    with pytest.raises(Forbidden, match="no task qualifications"):
        claim(UserFactory(roles=["rater"]), dataset)
    with pytest.raises(NotFound, match="no dataset named 'nope'"):
        slot_claim(rater=sts_only, dataset="nope")
    with pytest.raises(QueueInputError, match="kind must be one of"):
        claim(sts_only, dataset, kind="XYZ")
    with pytest.raises(QueueInputError, match="kind must be one of"):
        claim(sts_only, dataset, kind=["STS"])  # unhashable: named, not a TypeError
    assert claim(rater(kinds=["SIS"]), dataset).pair_id == sis.id


def test_claim_never_serves_a_pair_the_rater_rated_or_skipped(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    queue_pairs(split=split, n_pairs=3)
    user = rater()
    first = claim(user, dataset)
    submit(user, dataset, first.slot_id, "k1")
    second = claim(user, dataset)
    assert second.pair_id != first.pair_id
    slot_skip(rater=user, dataset=dataset.name, slot_id=second.slot_id)
    third = claim(user, dataset)
    assert third.pair_id not in {first.pair_id, second.pair_id}
    submit(user, dataset, third.slot_id, "k3")
    assert claim(user, dataset) is None
    # The skipped pair is still there for others.
    assert claim(rater(), dataset).pair_id == first.pair_id


def test_repeated_claim_returns_the_held_lease_renewed(engine, clock):
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=3)
    user = rater()
    first = claim(user, split.dataset)
    clock.advance(TTL + 30)  # even after it expired, nobody else took it
    again = claim(user, split.dataset)
    assert again.slot_id == first.slot_id
    assert again.resumed is True
    assert again.lease_expires_at == clock.now + timedelta(seconds=TTL)
    assert RatingSlot.objects.filter(rater=user, state=SlotState.LEASED).count() == 1


def test_database_allows_one_lease_per_rater_dataset_and_kind(clock):
    split = SplitFactory()
    _, pairs = queue_pairs(split=split, n_pairs=2)
    user = rater()
    expires = clock.now + timedelta(seconds=TTL)
    first, second = (RatingSlot.objects.filter(pair=p).first() for p in pairs)
    RatingSlot.objects.filter(pk=first.pk).update(state=SlotState.LEASED, rater=user, lease_expires_at=expires)
    with pytest.raises(IntegrityError), transaction.atomic():
        RatingSlot.objects.filter(pk=second.pk).update(state=SlotState.LEASED, rater=user, lease_expires_at=expires)


def test_a_claim_without_a_kind_interleaves_kinds_so_every_kind_advances(engine, clock):
    # Before: the head of one kind (its pair closest to completion) always won, so one
    # kind was finished before the next one got a rating.
    split = SplitFactory()
    for kind in (TaskKind.SIS, TaskKind.STS):
        queue_pairs(split=split, kind=kind, n_pairs=40, ratings_per_pair=2)
    counts = {TaskKind.SIS: 0, TaskKind.STS: 0}
    for number in range(20):
        user = rater(kinds=("SIS", "STS"))
        for step in range(2):
            assignment = claim(user, split.dataset)
            counts[assignment.kind] += 1
            submit(user, split.dataset, assignment.slot_id, f"k{number}-{step}")
    # 40 claims, each kind with probability 1/2: fewer than 5 of one kind has p < 1e-6.
    assert min(counts.values()) >= 5, counts
