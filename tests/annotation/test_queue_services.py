"""Queue services: claim order, leases with a controlled clock, idempotent submission,
skip, flag, tidy-up, progress. Every test runs on each engine (see ``engine``)."""

from __future__ import annotations

from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest
from django.db import IntegrityError, transaction

from annotation import queue
from annotation.errors import Conflict, Forbidden, NotFound
from annotation.models import (
    Flag,
    FlagReason,
    Pair,
    PairSkip,
    QueueCounter,
    Rating,
    RatingSlot,
    SlotState,
    TaskKind,
)
from annotation.queue import (
    QueueInputError,
    leases_release_expired,
    qualifications_set,
    queue_counters_rebuild,
    rating_submit,
    slot_claim,
    slot_flag,
    slot_heartbeat,
    slot_skip,
)
from annotation.selectors import rater_progress
from tests.annotation.queue_support import TTL, queue_pairs, submit_kwargs
from tests.factories import DatasetFactory, SplitFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(
    params=[
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param("postgres-stepwise", marks=pytest.mark.postgres),
        "portable",
    ]
)
def engine(request, monkeypatch):
    """postgres: the single-statement paths; postgres-stepwise: submissions always take
    the lock-then-write path the single statement falls back to; portable: the ORM
    paths of the embedded SQLite mode."""
    if request.param == "portable":
        monkeypatch.setattr(queue, "_use_postgres_sql", lambda: False)
    elif request.param == "postgres-stepwise":
        monkeypatch.setattr(queue, "_submit_postgres_fast", lambda values: None)
    return request.param


def rater(kinds=("STS", "SIS", "SITS")):
    return UserFactory(roles=["rater"], qualified_for=list(kinds))


def claim(user, dataset, **kwargs):
    return slot_claim(rater=user, dataset=dataset.name, **kwargs)


def submit(user, dataset, slot_id, key, score=3.0):
    return rating_submit(rater=user, dataset=dataset.name, slot_id=slot_id, **submit_kwargs(key, score))


# --- claim -----------------------------------------------------------------------------


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


# --- leases ----------------------------------------------------------------------------


def test_expired_lease_is_claimed_again_and_late_submit_gets_409(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    queue_pairs(split=split, ratings_per_pair=1)
    alice, bob = rater(), rater()
    held = claim(alice, dataset)
    clock.advance(TTL - 1)
    assert claim(bob, dataset) is None  # still leased
    clock.advance(2)
    taken = claim(bob, dataset)
    assert taken.slot_id == held.slot_id
    slot = RatingSlot.objects.get(pk=held.slot_id)
    assert (slot.rater_id, slot.previous_rater_id) == (bob.id, alice.id)
    with pytest.raises(Conflict, match="expired and it was claimed by another rater"):
        submit(alice, dataset, held.slot_id, "late")
    with pytest.raises(Conflict, match="expired"):
        slot_heartbeat(rater=alice, dataset=dataset.name, slot_id=held.slot_id)
    submit(bob, dataset, held.slot_id, "bob")
    with pytest.raises(Conflict, match="expired and it was rated by another rater"):
        submit(alice, dataset, held.slot_id, "late")
    assert list(Rating.objects.values_list("rater_id", flat=True)) == [bob.id]


def test_late_submit_is_accepted_while_the_slot_is_still_free(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    queue_pairs(split=split, ratings_per_pair=2)
    alice = rater()
    held = claim(alice, dataset)
    clock.advance(TTL * 3)
    result = submit(alice, dataset, held.slot_id, "late-but-free")
    assert result.replayed is False
    assert Rating.objects.get(pk=result.rating_id).rater_id == alice.id


def test_late_submit_is_accepted_after_tidy_up_released_the_slot(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    queue_pairs(split=split, ratings_per_pair=2)
    alice = rater()
    held = claim(alice, dataset)
    clock.advance(TTL + 1)
    assert leases_release_expired() == 1
    slot = RatingSlot.objects.get(pk=held.slot_id)
    assert (slot.state, slot.rater_id, slot.previous_rater_id) == (SlotState.OPEN, None, alice.id)
    # The heartbeat of a page left open takes the free slot back.
    expires = slot_heartbeat(rater=alice, dataset=dataset.name, slot_id=held.slot_id)
    assert expires == clock.now + timedelta(seconds=TTL)
    clock.advance(TTL + 1)
    leases_release_expired()
    submit(alice, dataset, held.slot_id, "after-release")
    assert RatingSlot.objects.get(pk=held.slot_id).state == SlotState.DONE


def test_heartbeat_keeps_the_lease(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    queue_pairs(split=split, ratings_per_pair=1)
    alice, bob = rater(), rater()
    held = claim(alice, dataset)
    for _ in range(5):
        clock.advance(TTL - 5)
        assert slot_heartbeat(rater=alice, dataset=dataset.name, slot_id=held.slot_id) == clock.now + timedelta(
            seconds=TTL
        )
        assert claim(bob, dataset) is None
    with pytest.raises(Forbidden, match="you do not hold"):
        slot_heartbeat(rater=bob, dataset=dataset.name, slot_id=held.slot_id)


def test_release_expired_leases_only_touches_expired_ones(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    queue_pairs(split=split, n_pairs=3)
    users = [rater() for _ in range(3)]
    held = [claim(u, dataset) for u in users]
    clock.advance(TTL / 2)
    slot_heartbeat(rater=users[0], dataset=dataset.name, slot_id=held[0].slot_id)
    clock.advance(TTL / 2 + 1)
    assert leases_release_expired(batch_size=1) == 2
    states = dict(RatingSlot.objects.filter(pk__in=[h.slot_id for h in held]).values_list("pk", "state"))
    assert states == {held[0].slot_id: "leased", held[1].slot_id: "open", held[2].slot_id: "open"}
    assert leases_release_expired() == 0


# --- submit ----------------------------------------------------------------------------


def test_five_raters_complete_a_pair_and_a_sixth_gets_nothing(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    _, (pair,) = queue_pairs(split=split)
    assert QueueCounter.objects.get(dataset=dataset, kind="SIS").pairs_open == 1
    raters = [rater() for _ in range(5)]
    for i, user in enumerate(raters):
        assignment = claim(user, dataset)
        assert assignment.pair_id == pair.id
        submit(user, dataset, assignment.slot_id, f"k{i}", score=i)
        pair.refresh_from_db()
        assert pair.ratings_done == i + 1
        assert set(RatingSlot.objects.filter(pair=pair).values_list("pair_done", flat=True)) == {i + 1}
    assert claim(rater(), dataset) is None
    assert sorted(Rating.objects.filter(pair=pair).values_list("rater_id", flat=True)) == sorted(u.id for u in raters)
    assert set(RatingSlot.objects.filter(pair=pair).values_list("state", "pair_complete")) == {("done", True)}
    assert QueueCounter.objects.get(dataset=dataset, kind="SIS").pairs_open == 0


def test_submit_is_idempotent_per_key(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    queue_pairs(split=split, n_pairs=2)
    user = rater()
    first = claim(user, dataset)
    stored = submit(user, dataset, first.slot_id, "key-1", score=4.25)
    clock.advance(5)
    again = submit(user, dataset, first.slot_id, "key-1", score=1.0)
    assert again.replayed is True
    assert (again.rating_id, again.created_at) == (stored.rating_id, stored.created_at)
    assert Rating.objects.get().score == 4.25
    with pytest.raises(Conflict, match="already rated by you"):
        submit(user, dataset, first.slot_id, "key-2")
    second = claim(user, dataset)
    with pytest.raises(Conflict, match="idempotency key 'key-1' was already used"):
        submit(user, dataset, second.slot_id, "key-1")
    assert Rating.objects.count() == 1
    assert RatingSlot.objects.get(pk=second.slot_id).state == SlotState.LEASED
    submit(user, dataset, second.slot_id, "key-2")
    assert Rating.objects.count() == 2


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"score": -0.01}, "score must be between 0 and 5"),
        ({"score": 5.000001}, "score must be between 0 and 5"),
        ({"score": float("nan")}, "score must be a finite number"),
        ({"score": float("inf")}, "score must be a finite number"),
        ({"score": "3"}, "score must be a number"),
        ({"score": True}, "score must be a number"),
        ({"score": None}, "score must be a number"),
        ({"time_on_item_ms": -1}, "time_on_item_ms must be between"),
        ({"time_on_item_ms": 1.5}, "time_on_item_ms must be a whole number"),
        ({"adjustments": -2}, "adjustments must be between"),
        ({"time_to_first_move_ms": 5000}, "time_to_first_move_ms must be between 0 and time_on_item_ms"),
        ({"idempotency_key": ""}, "idempotency_key must be a non-empty string"),
        ({"idempotency_key": "x" * 65}, "at most 64 characters"),
    ],
)
def test_submit_refuses_bad_values_and_stores_nothing(engine, clock, change, message):
    split = SplitFactory()
    queue_pairs(split=split)
    user = rater()
    held = claim(user, split.dataset)
    values = submit_kwargs("k") | change
    with pytest.raises(QueueInputError, match=message):
        rating_submit(rater=user, dataset=split.dataset.name, slot_id=held.slot_id, **values)
    assert Rating.objects.count() == 0
    assert RatingSlot.objects.get(pk=held.slot_id).state == SlotState.LEASED


def test_submit_on_a_slot_not_held_or_of_another_dataset(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    _, (pair,) = queue_pairs(split=split)
    other_split = SplitFactory()
    queue_pairs(split=other_split)
    alice, bob = rater(), rater()
    held = claim(alice, dataset)
    with pytest.raises(Forbidden, match=r"you do not hold rating slot #\d+: it belongs to another rater"):
        submit(bob, dataset, held.slot_id, "b")
    free = RatingSlot.objects.filter(pair=pair, state=SlotState.OPEN).first()
    with pytest.raises(Forbidden, match="claim a pair first"):
        submit(bob, dataset, free.pk, "b")
    with pytest.raises(NotFound, match=f"not in dataset {other_split.dataset.name!r}"):
        rating_submit(rater=alice, dataset=other_split.dataset.name, slot_id=held.slot_id, **submit_kwargs("a"))
    with pytest.raises(NotFound, match="no rating slot #999999"):
        submit(alice, dataset, 999999, "a")
    assert Rating.objects.count() == 0


def test_database_refuses_a_sixth_rating_and_a_second_by_one_rater(clock):
    split = SplitFactory()
    _, (pair,) = queue_pairs(split=split, ratings_per_pair=2)
    alice, bob = rater(), rater()
    slots = list(RatingSlot.objects.filter(pair=pair).order_by("index"))
    values = {"pair": pair, "score": 2.0, "time_on_item_ms": 10}
    Rating.objects.create(slot=slots[0], rater=alice, idempotency_key="a", **values)
    with pytest.raises(IntegrityError), transaction.atomic():  # a slot holds one rating
        Rating.objects.create(slot=slots[0], rater=bob, idempotency_key="b", **values)
    with pytest.raises(IntegrityError), transaction.atomic():  # one rating per rater and pair
        Rating.objects.create(slot=slots[1], rater=alice, idempotency_key="c", **values)
    with pytest.raises(IntegrityError), transaction.atomic():  # one slot per rater and pair
        RatingSlot.objects.filter(pk__in=[s.pk for s in slots]).update(state=SlotState.DONE, rater=alice)
    for bad in (5.5, -1.0, float("nan")):
        with pytest.raises(IntegrityError), transaction.atomic():
            Rating.objects.create(slot=slots[1], rater=bob, idempotency_key=f"s{bad}", **(values | {"score": bad}))
    assert Rating.objects.count() == 1


# --- skip and flag ---------------------------------------------------------------------


def test_skip_returns_the_slot_and_is_repeatable(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    _, (pair,) = queue_pairs(split=split)
    alice, bob = rater(), rater()
    held = claim(alice, dataset)
    assert slot_skip(rater=alice, dataset=dataset.name, slot_id=held.slot_id) == pair.id
    assert slot_skip(rater=alice, dataset=dataset.name, slot_id=held.slot_id) == pair.id
    slot = RatingSlot.objects.get(pk=held.slot_id)
    assert (slot.state, slot.rater_id) == (SlotState.OPEN, None)
    assert PairSkip.objects.filter(pair=pair, rater=alice).count() == 1
    assert claim(alice, dataset) is None
    assert claim(bob, dataset).pair_id == pair.id
    with pytest.raises(Forbidden):
        slot_skip(rater=rater(), dataset=dataset.name, slot_id=held.slot_id)


def test_flag_records_for_admins_and_returns_the_slot(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    queue_pairs(split=split, n_pairs=2)
    alice = rater()
    held = claim(alice, dataset)
    flag = slot_flag(
        rater=alice, dataset=dataset.name, slot_id=held.slot_id, reason=FlagReason.BROKEN_IMAGE, note=" no pixels "
    )
    assert (flag.pair_id, flag.rater_id, flag.reason, flag.note, flag.resolved) == (
        held.pair_id,
        alice.id,
        "broken_image",
        "no pixels",
        False,
    )
    assert RatingSlot.objects.get(pk=held.slot_id).state == SlotState.OPEN
    again = slot_flag(rater=alice, dataset=dataset.name, slot_id=held.slot_id, reason=FlagReason.BROKEN_IMAGE)
    assert again.pk == flag.pk
    nxt = claim(alice, dataset)
    assert nxt.pair_id != held.pair_id
    # A pair already rated can still be reported; the rating stays.
    submit(alice, dataset, nxt.slot_id, "k")
    slot_flag(rater=alice, dataset=dataset.name, slot_id=nxt.slot_id, reason=FlagReason.INAPPROPRIATE)
    assert Rating.objects.filter(slot_id=nxt.slot_id).exists()
    assert Flag.objects.count() == 2
    with pytest.raises(QueueInputError, match="reason must be one of"):
        slot_flag(rater=alice, dataset=dataset.name, slot_id=nxt.slot_id, reason="ugly")
    with pytest.raises(QueueInputError, match="needs a note"):
        slot_flag(rater=alice, dataset=dataset.name, slot_id=nxt.slot_id, reason=FlagReason.OTHER, note=" ")
    with pytest.raises(Forbidden):
        slot_flag(rater=rater(), dataset=dataset.name, slot_id=nxt.slot_id, reason=FlagReason.INAPPROPRIATE)
    assert Flag.objects.count() == 2


# --- progress, counters, qualifications -------------------------------------------------


def test_progress_counts_today_and_pairs_left(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    queue_pairs(split=split, n_pairs=4)
    queue_pairs(split=split, kind=TaskKind.STS, n_pairs=2)
    alice = rater(kinds=["SIS"])
    progress = rater_progress(rater=alice, dataset=dataset.name)
    assert (progress.ratings_today, progress.pairs_left, progress.held_slot_id) == (0, 4, None)
    first = claim(alice, dataset)
    progress = rater_progress(rater=alice, dataset=dataset.name)
    assert (progress.pairs_left, progress.held_slot_id) == (4, first.slot_id)
    submit(alice, dataset, first.slot_id, "a")
    slot_skip(rater=alice, dataset=dataset.name, slot_id=claim(alice, dataset).slot_id)
    progress = rater_progress(rater=alice, dataset=dataset.name)
    assert (progress.ratings_today, progress.pairs_left, progress.kinds) == (1, 2, ["SIS"])
    # Midnight passes in Berlin (UTC+1 in March) before it passes in UTC.
    clock.now = clock.now.replace(hour=23, minute=30)
    berlin = rater_progress(rater=alice, dataset=dataset.name, tz=ZoneInfo("Europe/Berlin"))
    utc = rater_progress(rater=alice, dataset=dataset.name)
    assert (berlin.ratings_today, utc.ratings_today) == (0, 1)


def test_counters_follow_completion_and_rebuild_repairs_drift(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    queue_pairs(split=split, n_pairs=3, ratings_per_pair=1)
    counter = QueueCounter.objects.get(dataset=dataset, kind="SIS")
    assert counter.pairs_open == 3
    user = rater()
    submit(user, dataset, claim(user, dataset).slot_id, "x")
    counter.refresh_from_db()
    assert counter.pairs_open == 2
    QueueCounter.objects.filter(pk=counter.pk).update(pairs_open=40)
    assert queue_counters_rebuild() >= 1
    counter.refresh_from_db()
    assert counter.pairs_open == 2


def test_qualifications_set(clock):
    user = UserFactory(roles=["rater"], qualified_for=["STS"])
    assert qualifications_set(rater=user, kinds=["SIS", "SITS"]) == ["SIS", "SITS"]
    assert qualifications_set(rater=user, kinds=[]) == []
    with pytest.raises(QueueInputError, match="unknown task kind"):
        qualifications_set(rater=user, kinds=["XX"])
    with pytest.raises(QueueInputError, match="not in the rater group"):
        qualifications_set(rater=UserFactory(), kinds=["STS"])


def test_heartbeat_cannot_take_back_a_released_slot_while_holding_another(engine, clock):
    split = SplitFactory()
    dataset = split.dataset
    queue_pairs(split=split, ratings_per_pair=1)
    alice = rater()
    first = claim(alice, dataset)
    clock.advance(TTL + 1)
    leases_release_expired()
    _, (urgent,) = queue_pairs(split=split, ratings_per_pair=1, priority=9)
    second = claim(alice, dataset)
    assert second.pair_id == urgent.id
    with pytest.raises(Conflict, match="you have since claimed another SIS slot"):
        slot_heartbeat(rater=alice, dataset=dataset.name, slot_id=first.slot_id)
    assert RatingSlot.objects.get(pk=first.slot_id).state == SlotState.OPEN


def test_beat_schedule_runs_the_tidy_up_tasks(clock, settings):
    from annotation.tasks import recount_open_pairs, release_expired_leases
    from config.celery import app

    app.loader.import_default_modules()  # what a worker does at start: autodiscover the tasks
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        assert entry["task"] in app.tasks, entry
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=2)
    held = claim(rater(), split.dataset)
    clock.advance(TTL + 1)
    assert release_expired_leases.delay().get() == 1
    assert RatingSlot.objects.get(pk=held.slot_id).state == SlotState.OPEN
    assert recount_open_pairs.delay().get() >= 1
