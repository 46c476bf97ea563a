"""Flags and resent ratings on gold items, the details `make mutation` found untested
(annotation.serving.gold: gold_flag, _replayed): a gold item answers them exactly
as an ordinary slot would, so a rater cannot tell gold apart, and a rater cannot replay
another rater's gold rating."""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from annotation.core.errors import Conflict, Forbidden, NotFound
from annotation.models import (
    DEFAULT_GOLD_ONE_IN,
    Dataset,
    GoldLease,
    GoldPair,
    GoldPurpose,
    GoldRating,
    Pair,
    PairSkip,
    QualitySettings,
    QuizAttempt,
    Rating,
    RatingSlot,
    SlotState,
    SpeedFloor,
)
from annotation.quality.gold.upload import gold_pairs_upload
from annotation.rating.policy import slot_flag
from annotation.serving import gold as serving_gold
from annotation.serving.gold import gold_met_in_quiz
from annotation.serving.gold_ids import ids_reserve
from annotation.serving.shapes import image_url_of
from tests.factories import ImageFactory, SplitFactory
from tests.support import queue_support
from tests.support.crowd_support import gold_upload
from tests.support.queue_support import claim, queue_pairs, rater, submit

pytestmark = pytest.mark.django_db
engine = queue_support.engine


def gold_dataset(tmp_path, split=None):
    """A dataset with SIS pairs queued and three gold SIS pairs, every item served gold."""
    split = split or SplitFactory()
    queue_pairs(split=split, n_pairs=3, ratings_per_pair=2)
    images = [ImageFactory(split=split, dataset=split.dataset) for _ in range(4)]
    lines = ["image1,image2,gold_score"] + [f"{images[i].key},{images[i + 1].key},{i + 1}" for i in range(3)]
    path = tmp_path / f"gold{split.pk}.csv"
    path.write_text("\n".join(lines) + "\n")
    assert gold_pairs_upload(dataset=split.dataset, path=path) == 3
    QualitySettings.objects.create(dataset=split.dataset, gold_one_in=1)
    return split.dataset


@pytest.fixture
def all_gold(tmp_path):
    return gold_dataset(tmp_path)


def test_flagging_a_held_gold_item_records_the_flag_once_and_skips_the_item(engine, clock, all_gold):
    user = rater(["SIS"])
    held = claim(user, all_gold)
    assert GoldLease.objects.filter(pk=held.slot_id).exists()
    flag = slot_flag(rater=user, dataset=all_gold.name, slot_id=held.slot_id, reason="broken_image", note=" grey ")
    assert (flag.pair_id, flag.rater, flag.reason, flag.note) == (held.pair_id, user, "broken_image", "grey")
    repeat = slot_flag(rater=user, dataset=all_gold.name, slot_id=held.slot_id, reason="other", note="again")
    assert flag.id is not None and (repeat.id, repeat.reason, repeat.note) == (flag.id, "broken_image", "grey")
    following = claim(user, all_gold)
    assert following.slot_id != held.slot_id, "a flagged item is passed on, as a flagged slot is"


def test_flagging_a_rated_gold_item_keeps_its_rating(engine, clock, all_gold):
    user = rater(["SIS"])
    held = claim(user, all_gold)
    first = submit(user, all_gold, held.slot_id, "k1", score=2.0)
    slot_flag(rater=user, dataset=all_gold.name, slot_id=held.slot_id, reason="inappropriate")
    again = submit(user, all_gold, held.slot_id, "k1", score=2.0)
    assert again.replayed and again.rating_id == first.rating_id, "still rated: the resend is answered"


def test_a_resent_gold_rating_answers_the_first_one_again(engine, clock, all_gold):
    user = rater(["SIS"])
    held = claim(user, all_gold)
    first = submit(user, all_gold, held.slot_id, "k1")
    clock.advance(30)
    again = submit(user, all_gold, held.slot_id, "k1")
    assert not first.replayed and again.replayed
    assert (again.rating_id, again.pair_id, again.slot_id, again.created_at) == (
        first.rating_id,
        held.pair_id,
        held.slot_id,
        first.created_at,
    )


def test_another_rater_sending_the_same_key_is_refused_not_replayed(engine, clock, all_gold):
    owner, other = rater(["SIS"]), rater(["SIS"])
    held = claim(owner, all_gold)
    submit(owner, all_gold, held.slot_id, "k1")
    with pytest.raises(Forbidden, match="belongs to another rater"):
        submit(other, all_gold, held.slot_id, "k1")


# --- gold only while ordinary work is left (_ordinary_work_left) ---------------------------


def served_gold(user, dataset, **kwargs) -> bool:
    """Whether the rater's next claim in ``dataset`` is a gold item."""
    held = claim(user, dataset, **kwargs)
    return held is not None and GoldLease.objects.filter(pk=held.slot_id).exists()


def skip_pairs(user, dataset, count=None):
    pairs = list(Pair.objects.filter(batch__dataset=dataset).order_by("pk"))
    for pair in pairs[:count]:
        PairSkip.objects.create(pair=pair, rater=user, created_at=timezone.now())


def test_no_gold_once_the_rater_skipped_every_ordinary_pair(engine, clock, all_gold):
    """Gold hides among ordinary work: with none left for the rater, a gold item would stand out."""
    user = rater(["SIS"])
    skip_pairs(user, all_gold)
    assert not served_gold(user, all_gold)


def test_gold_is_served_while_one_unskipped_pair_is_left(engine, clock, all_gold):
    user = rater(["SIS"])
    skip_pairs(user, all_gold, count=2)
    assert served_gold(user, all_gold)


def test_skips_of_another_rater_leave_gold_to_this_one(engine, clock, all_gold):
    skip_pairs(rater(["SIS"]), all_gold)
    assert served_gold(rater(["SIS"]), all_gold)


def occupy(slots, state, expires_at):
    """Give each slot its own holder (leased) or author (done)."""
    for pk in slots:
        RatingSlot.objects.filter(pk=pk).update(
            state=state, rater=rater(["SIS"]), leased_at=expires_at - timedelta(hours=1), lease_expires_at=expires_at
        )


def test_slots_whose_leases_expired_count_as_work_left(engine, clock, all_gold):
    occupy(
        RatingSlot.objects.filter(dataset=all_gold).values_list("pk", flat=True),
        SlotState.LEASED,
        clock() - timedelta(minutes=1),
    )
    assert served_gold(rater(["SIS"]), all_gold)


def test_slots_others_hold_or_finished_are_no_work_left(engine, clock, all_gold):
    """Live leases and done slots are not claimable, so no gold either."""
    slots = list(RatingSlot.objects.filter(dataset=all_gold).order_by("pk").values_list("pk", flat=True))
    occupy(slots[:3], SlotState.LEASED, clock() + timedelta(hours=1))
    occupy(slots[3:], SlotState.DONE, clock() - timedelta(hours=1))
    assert not served_gold(rater(["SIS"]), all_gold)


def test_ordinary_work_in_another_dataset_does_not_open_gold(engine, clock, all_gold):
    user = rater(["SIS"])
    skip_pairs(user, all_gold)
    queue_pairs(n_pairs=2)
    assert not served_gold(user, all_gold)


def test_ordinary_work_of_another_kind_does_not_open_gold(engine, clock, all_gold):
    """Asked for SIS, the rater gets no SIS gold just because STS work is left."""
    user = rater(["SIS", "STS"])
    skip_pairs(user, all_gold)
    queue_pairs(split=SplitFactory(dataset=all_gold, name="train"), kind="STS", n_pairs=2)
    assert not served_gold(user, all_gold, kind="SIS")


@pytest.mark.parametrize("taken_out", [{"active": False}, {"in_quiz": True}], ids=["retired", "in the quiz"])
def test_a_gold_pair_retired_or_in_the_quiz_is_not_served_in_the_queue(engine, clock, all_gold, taken_out):
    GoldPair.objects.filter(dataset=all_gold).update(**taken_out)
    assert not served_gold(rater(["SIS"]), all_gold)


# --- gold's turn on the portable path, at the dataset's rate (_gold_claim_portable) -------
# (On PostgreSQL the process draws the turn: tests/annotation/rating/test_hot_path_statements.py.)


class FixedDraw:
    """A stand-in for the random module: every draw is ``value``, every choice the first."""

    def __init__(self, value: float):
        self.value = value

    def random(self) -> float:
        return self.value

    def choice(self, items):
        return items[0]


@pytest.mark.parametrize(
    ("one_in", "draw", "gold"),
    [
        (4, 0.2499, True),  # 0.9996 < 1: gold's turn, one claim in four
        (4, 0.25, False),  # exactly 1: not
        (None, 0.0499, True),  # no settings of the dataset: one in DEFAULT_GOLD_ONE_IN
        (None, 0.05, False),
        (0, 0.0, False),  # gold off
    ],
)
def test_the_portable_claim_serves_gold_at_the_datasets_rate(
    settings, clock, monkeypatch, all_gold, one_in, draw, gold
):
    settings.SQL_PATHS = "portable"
    assert DEFAULT_GOLD_ONE_IN == 20
    if one_in is None:
        QualitySettings.objects.filter(dataset=all_gold).delete()
    else:
        QualitySettings.objects.filter(dataset=all_gold).update(gold_one_in=one_in)
    monkeypatch.setattr(serving_gold, "random", FixedDraw(draw))
    assert served_gold(rater(["SIS"]), all_gold) is gold


# --- never served as gold a pair met in a quiz (gold_met_in_quiz) --------------------------


def quiz_answer(user, gold, purpose=GoldPurpose.QUIZ, **extra):
    # Its id from the ratings' sequence, as the quiz and gold serving take theirs: from
    # GoldRating's own sequence it met the id of the next gold rating in a fresh database.
    (rating_id,) = ids_reserve(Rating, 1)
    return GoldRating.objects.create(
        id=rating_id,
        gold_pair=gold,
        rater=user,
        dataset=gold.dataset,
        purpose=purpose,
        score=2.0,
        gold_score=gold.gold_score,
        time_on_item_ms=4000,
        idempotency_key=f"q{gold.pk}-{purpose}",
        created_at=timezone.now(),
        **extra,
    )


def test_gold_met_in_quiz_is_the_rater_s_quiz_answers_and_attempts(clock, all_gold, tmp_path):
    """Only this rater's quiz meetings count, per dataset or over all of them."""
    user, other = rater(["SIS"]), rater(["SIS"])
    golds = list(GoldPair.objects.filter(dataset=all_gold).order_by("pk"))
    answered, asked, others = golds
    quiz_answer(user, answered)
    quiz_answer(other, others)
    quiz_answer(user, others, purpose=GoldPurpose.QUEUE)
    QuizAttempt.objects.create(rater=user, dataset=all_gold, kind="SIS", number=1, order=[asked.pk], started_at=clock())
    elsewhere = GoldPair.objects.filter(dataset=gold_dataset(tmp_path)).first()
    quiz_answer(user, elsewhere)
    assert gold_met_in_quiz(rater=user, dataset_id=all_gold.pk) == {answered.pk, asked.pk}
    assert gold_met_in_quiz(rater=user) == {answered.pk, asked.pk, elsewhere.pk}


def test_a_pair_answered_in_a_quiz_is_never_served_as_gold(engine, clock, all_gold):
    user = rater(["SIS"])
    golds = list(GoldPair.objects.filter(dataset=all_gold).order_by("pk"))
    for gold in golds[:2]:
        quiz_answer(user, gold)
    held = claim(user, all_gold)
    assert held.pair_id == golds[2].pk
    submit(user, all_gold, held.slot_id, "k1")
    assert not served_gold(user, all_gold), "the other two were met in the quiz"


# --- what a gold assignment carries (_lease_assignment) -----------------------------------


def test_a_gold_assignment_carries_its_lease_expiry_and_whether_it_is_resumed(engine, clock, all_gold):
    user = rater(["SIS"])
    first = claim(user, all_gold)
    lease = GoldLease.objects.get(pk=first.slot_id)
    assert first.resumed is False and first.lease_expires_at == lease.lease_expires_at is not None
    clock.advance(30)
    again = claim(user, all_gold)
    lease.refresh_from_db()
    assert again.slot_id == first.slot_id and again.resumed is True
    assert again.lease_expires_at == lease.lease_expires_at > first.lease_expires_at


@pytest.mark.parametrize("prefix", ["", "https://img.example.org/coco/"])
def test_a_gold_image_pair_shows_its_images_as_an_ordinary_pair_would(engine, clock, all_gold, prefix):
    Dataset.objects.filter(pk=all_gold.pk).update(image_url_prefix=prefix, images_root="" if prefix else "/srv/coco")
    all_gold.refresh_from_db()
    user = rater(["SIS"])
    held = claim(user, all_gold)
    gold = GoldPair.objects.select_related("image_a", "image_b").get(pk=held.pair_id)
    assert held.dataset == all_gold.name and held.kind == "SIS"
    expected = [image_url_of(all_gold, image) for image in (gold.image_a, gold.image_b)]
    assert [item.url for item in held.items] == expected
    if prefix:
        assert all(url.startswith(prefix) for url in expected), "below the dataset's URL prefix"
    else:
        assert all(f"/{all_gold.name}/" in url for url in expected), "from the dataset's image view"


def test_a_gold_caption_pair_shows_its_two_captions(engine, clock, tmp_path):
    split = SplitFactory()
    queue_pairs(split=split, kind="STS", n_pairs=2, ratings_per_pair=2)
    gold_upload(split, "STS", 2, tmp_path)
    QualitySettings.objects.create(dataset=split.dataset, gold_one_in=1)
    held = claim(rater(["STS"]), split.dataset)
    gold = GoldPair.objects.select_related("caption_a", "caption_b").get(pk=held.pair_id)
    assert [(item.type, item.text) for item in held.items] == [
        ("caption", gold.caption_a.text),
        ("caption", gold.caption_b.text),
    ]


# --- which held item a claim resumes (_gold_claim_portable and the gold statement) --------


def test_a_claim_resumes_only_the_raters_own_gold_lease(engine, clock, all_gold):
    holder, other = rater(["SIS"]), rater(["SIS"])
    held = claim(holder, all_gold)
    assert GoldLease.objects.filter(pk=held.slot_id).exists()
    assert claim(other, all_gold).slot_id != held.slot_id


def test_a_claim_in_one_dataset_does_not_resume_a_gold_lease_held_in_another(engine, clock, all_gold, tmp_path):
    (tmp_path / "second").mkdir()
    second = gold_dataset(tmp_path / "second")
    user = rater(["SIS"])
    held = claim(user, all_gold)
    there = claim(user, second)
    assert there.dataset == second.name and there.slot_id != held.slot_id


def test_a_claim_for_one_kind_does_not_resume_a_gold_lease_of_another(engine, clock, tmp_path):
    split = SplitFactory()
    for kind in ("SIS", "STS"):
        queue_pairs(split=split, kind=kind, n_pairs=2, ratings_per_pair=2)
        gold_upload(split, kind, 2, tmp_path)
    QualitySettings.objects.create(dataset=split.dataset, gold_one_in=1)
    user = rater(["SIS", "STS"])
    held = claim(user, split.dataset, kind="STS")
    assert GoldLease.objects.filter(pk=held.slot_id, kind="STS").exists()
    assert claim(user, split.dataset, kind="SIS").kind == "SIS"


def test_a_held_gold_lease_whose_pair_was_retired_is_not_resumed(engine, clock, all_gold):
    user = rater(["SIS"])
    held = claim(user, all_gold)
    GoldPair.objects.filter(pk=held.pair_id).update(active=False)
    assert claim(user, all_gold).slot_id != held.slot_id


def hold_slot(user, dataset, kind="SIS"):
    """Lease one open slot of ``dataset`` and ``kind`` to ``user`` until an hour from now."""
    slot = RatingSlot.objects.filter(dataset=dataset, kind=kind, state=SlotState.OPEN).order_by("pk").first()
    now = timezone.now()
    RatingSlot.objects.filter(pk=slot.pk).update(
        state=SlotState.LEASED, rater=user, leased_at=now, lease_expires_at=now + timedelta(hours=1)
    )
    return slot


def test_a_rater_holding_an_ordinary_slot_gets_it_back_not_gold(engine, clock, all_gold):
    user = rater(["SIS"])
    slot = hold_slot(user, all_gold)
    assert claim(user, all_gold).slot_id == slot.pk


def test_an_ordinary_slot_held_elsewhere_or_of_another_kind_does_not_hold_back_gold(engine, clock, all_gold, tmp_path):
    queue_pairs(split=SplitFactory(dataset=all_gold, name="train"), kind="STS", n_pairs=2)
    user = rater(["SIS", "STS"])
    hold_slot(user, all_gold, kind="STS")
    hold_slot(user, queue_pairs(n_pairs=1)[1][0].batch.dataset)
    assert served_gold(user, all_gold, kind="SIS")


# --- what a gold submit stores and refuses (gold_submit) ----------------------------------


def test_a_gold_rating_keeps_the_raters_interaction_facts_and_answers_with_its_item(engine, clock, all_gold):
    user = rater(["SIS"])
    held = claim(user, all_gold)
    stored = submit(user, all_gold, held.slot_id, "g1", time_to_first_move_ms=1234, adjustments=7)
    row = GoldRating.objects.get(rater=user)
    assert (row.time_to_first_move_ms, row.adjustments, row.purpose) == (1234, 7, GoldPurpose.QUEUE)
    assert (stored.slot_id, stored.rating_id, stored.replayed) == (held.slot_id, row.id, False)


KEY_USED = "idempotency key 'k-used' was already used for another rating slot; use a new key for each item"


def test_a_key_the_rater_used_on_an_ordinary_or_a_gold_item_is_refused_on_gold(engine, clock, all_gold):
    user = rater(["SIS"])
    GoldPair.objects.filter(dataset=all_gold).update(active=False)  # an ordinary item first
    ordinary = claim(user, all_gold)
    submit(user, all_gold, ordinary.slot_id, "k-used")
    GoldPair.objects.filter(dataset=all_gold).update(active=True)
    gold = claim(user, all_gold)
    assert GoldLease.objects.filter(pk=gold.slot_id).exists()
    with pytest.raises(Conflict) as refused:
        submit(user, all_gold, gold.slot_id, "k-used")
    assert str(refused.value) == KEY_USED
    submit(user, all_gold, gold.slot_id, "k-gold")
    second = claim(user, all_gold)
    assert GoldLease.objects.filter(pk=second.slot_id).exists()
    with pytest.raises(Conflict) as refused_again:
        submit(user, all_gold, second.slot_id, "k-gold")
    assert str(refused_again.value) == KEY_USED.replace("k-used", "k-gold")


def test_another_raters_key_on_an_ordinary_or_a_gold_item_is_no_bar_on_gold(engine, clock, all_gold):
    first, second = rater(["SIS"]), rater(["SIS"])
    GoldPair.objects.filter(dataset=all_gold).update(active=False)
    submit(first, all_gold, claim(first, all_gold).slot_id, "ordinary-key")
    GoldPair.objects.filter(dataset=all_gold).update(active=True)
    submit(first, all_gold, claim(first, all_gold).slot_id, "gold-key")
    for key in ("ordinary-key", "gold-key"):
        held = claim(second, all_gold)
        assert GoldLease.objects.filter(pk=held.slot_id).exists()
        assert submit(second, all_gold, held.slot_id, key).replayed is False


@pytest.mark.parametrize(("time_on_item_ms", "too_fast"), [(2999, True), (3000, False)])
def test_a_gold_rating_faster_than_the_datasets_own_floor_is_marked(engine, clock, all_gold, time_on_item_ms, too_fast):
    SpeedFloor.objects.create(dataset=all_gold, kind="SIS", seconds=3)
    user = rater(["SIS"])
    submit(user, all_gold, claim(user, all_gold).slot_id, "g1", time_on_item_ms=time_on_item_ms)
    assert GoldRating.objects.get(rater=user).below_speed_floor is too_fast


def test_a_gold_item_sent_through_another_datasets_address_is_not_found_there(engine, clock, all_gold, tmp_path):
    (tmp_path / "second").mkdir()
    other = gold_dataset(tmp_path / "second")
    user = rater(["SIS"])
    held = claim(user, all_gold)
    with pytest.raises(NotFound) as not_found:
        submit(user, other, held.slot_id, "g-elsewhere")
    assert str(not_found.value) == f"this rating slot is not in dataset {other.name!r}"
    assert not GoldRating.objects.filter(rater=user).exists()


def test_gold_pairs_are_drawn_at_random_whatever_join_the_planner_prefers(engine, clock, settings, tmp_path):
    """Thirty raters each draw one of five gold pairs. With nested loops and hash joins off,
    PostgreSQL plans the anti joins of separate NOT EXISTS as merge joins, which sort by
    id: every rater then got the lowest eligible pair. (All thirty on two pairs or fewer by
    chance: about 1e-11.)"""
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=3, ratings_per_pair=30)
    gold_upload(split, "SIS", 5, tmp_path)
    QualitySettings.objects.create(dataset=split.dataset, gold_one_in=1)
    if engine != "portable":
        settings.DB_PREPARED_STATEMENTS = False  # planned at each claim, under these settings
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_nestloop = off")
            cursor.execute("SET LOCAL enable_hashjoin = off")
            # The disabled join methods cost every plan 1e10, past jit_above_cost: each
            # statement would be compiled (seconds a claim); the plan's shape is the point.
            cursor.execute("SET LOCAL jit = off")
    drawn = set()
    for _ in range(30):
        held = claim(rater(["SIS"]), split.dataset)
        drawn.add(GoldLease.objects.get(pk=held.slot_id).gold_pair_id)
    assert len(drawn) >= 3, drawn
