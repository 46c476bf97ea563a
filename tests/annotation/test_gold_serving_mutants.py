"""Flags and resent ratings on gold items, the details `make mutation` found untested
(annotation.quality.gold.serving: gold_flag, _replayed): a gold item answers them exactly
as an ordinary slot would, so a rater cannot tell gold apart, and a rater cannot replay
another rater's gold rating."""

import pytest

from annotation.errors import Forbidden
from annotation.models import GoldLease, QualitySettings
from annotation.quality.gold.upload import gold_pairs_upload
from annotation.rating.policy import slot_flag
from tests.annotation import queue_support
from tests.annotation.queue_support import claim, queue_pairs, rater, submit
from tests.factories import ImageFactory, SplitFactory

pytestmark = pytest.mark.django_db
engine = queue_support.engine


@pytest.fixture
def all_gold(tmp_path):
    """A dataset with SIS pairs queued and three gold SIS pairs, every item served gold."""
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=3, ratings_per_pair=2)
    images = [ImageFactory(split=split, dataset=split.dataset) for _ in range(4)]
    lines = ["image1,image2,gold_score"] + [f"{images[i].key},{images[i + 1].key},{i + 1}" for i in range(3)]
    path = tmp_path / "gold.csv"
    path.write_text("\n".join(lines) + "\n")
    assert gold_pairs_upload(dataset=split.dataset, path=path) == 3
    QualitySettings.objects.create(dataset=split.dataset, gold_one_in=1)
    return split.dataset


def test_flagging_a_held_gold_item_records_the_flag_once_and_skips_the_item(engine, clock, all_gold):
    user = rater(["SIS"])
    held = claim(user, all_gold)
    assert GoldLease.objects.filter(pk=held.slot_id).exists()
    flag = slot_flag(rater=user, dataset=all_gold.name, slot_id=held.slot_id, reason="broken_image", note=" grey ")
    assert (flag.pair_id, flag.reason, flag.note) == (held.pair_id, "broken_image", "grey")
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
