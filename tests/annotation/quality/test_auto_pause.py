"""The automatic pause after gold ratings and the claim's pause check, the details `make
mutation` found untested: only the rater's own last K queue gold ratings in the dataset
count, by time; a mean error at the limit is no pause; the reason states the numbers
(annotation.quality.pauses)."""

from datetime import UTC, datetime, timedelta
from itertools import count

import pytest

from annotation.models import GoldPair, GoldPurpose, GoldRating, QualitySettings, RaterPause
from annotation.quality.gold.upload import gold_pairs_upload
from annotation.quality.pauses import rater_pause, rater_pause_lift
from annotation.serving.pauses import is_paused, pause_if_gold_error_high
from tests.factories import ImageFactory, SplitFactory, UserFactory
from tests.support.queue_support import rater

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
KEYS = count()


def gold_dataset(tmp_path, pairs=6):
    split = SplitFactory()
    images = [ImageFactory(split=split, dataset=split.dataset) for _ in range(pairs + 1)]
    lines = ["image1,image2,gold_score,explanation"]
    lines += [f"{images[i + 1].key},{images[i].key},1.0,level {i}" for i in range(pairs)]
    path = tmp_path / f"gold-{split.dataset.pk}.csv"
    path.write_text("\n".join(lines) + "\n")
    assert gold_pairs_upload(dataset=split.dataset, path=path) == pairs
    return split.dataset


def gold_rating(user, dataset, score, *, gold=1.0, minute=0, purpose=GoldPurpose.QUEUE):
    """A gold rating of ``user`` on a gold pair they have not rated for ``purpose``."""
    rated = GoldRating.objects.filter(rater=user, purpose=purpose).values("gold_pair_id")
    pair = GoldPair.objects.filter(dataset=dataset).exclude(id__in=rated).order_by("id").first()
    return GoldRating.objects.create(
        gold_pair=pair,
        rater=user,
        dataset=dataset,
        purpose=purpose,
        score=score,
        gold_score=gold,
        time_on_item_ms=4000,
        idempotency_key=f"g{next(KEYS)}",
        created_at=T0 + timedelta(minutes=minute),
    )


@pytest.fixture
def dataset(tmp_path):
    """Gold pairs and the automatic pause on: a mean error above 1.0 over the last 3."""
    dataset = gold_dataset(tmp_path)
    QualitySettings.objects.create(dataset=dataset, auto_pause=True, pause_window=3, pause_max_error=1.0)
    return dataset


def check(user, dataset, minute=10):
    return pause_if_gold_error_high(rater_id=user.id, dataset_id=dataset.id, now=T0 + timedelta(minutes=minute))


def test_the_third_bad_gold_rating_pauses_with_the_numbers_in_the_reason(dataset):
    user = rater()
    for minute in range(2):
        gold_rating(user, dataset, 3.0, minute=minute)
    assert check(user, dataset) is None, "fewer than K gold ratings"
    gold_rating(user, dataset, 3.5, gold=0.5, minute=2)
    pause = check(user, dataset, minute=11)
    assert pause is not None
    stored = RaterPause.objects.get(pk=pause.pk)
    assert (stored.rater, stored.dataset, stored.automatic, stored.created_at, stored.created_by) == (
        user,
        dataset,
        True,
        T0 + timedelta(minutes=11),
        None,
    )
    assert stored.reason == "gold error 2.33 over the last 3 gold items (limit 1.00)"
    assert is_paused(rater=user, dataset_id=dataset.id)
    assert check(user, dataset) is None, "paused already: no second pause"
    assert RaterPause.objects.filter(rater=user).count() == 1


def test_a_mean_error_at_the_limit_is_no_pause(dataset):
    user = rater()
    for minute in range(3):
        gold_rating(user, dataset, 2.0, minute=minute)
    assert check(user, dataset) is None
    assert not RaterPause.objects.exists()


def test_only_the_latest_k_by_time_count(dataset):
    """What counts is when the answers were given, not the order they were stored in."""
    good_lately, bad_lately = rater(), rater()
    for user, late, early in ((good_lately, 1.0, 5.0), (bad_lately, 5.0, 1.0)):
        for minute in (5, 6, 7):
            gold_rating(user, dataset, late, minute=minute)
        for minute in (0, 1, 2):
            gold_rating(user, dataset, early, minute=minute)
    assert check(good_lately, dataset) is None
    assert check(bad_lately, dataset) is not None


def test_ratings_given_at_the_same_instant_count_from_the_last_stored(dataset):
    """Times that tie (one tick of the clock) are told apart by the order of storing: the
    last stored were given last."""
    user = rater()
    for score in (5.0, 5.0, 5.0, 1.0, 1.0, 1.0):
        gold_rating(user, dataset, score, minute=3)
    assert check(user, dataset) is None


def test_other_raters_quiz_answers_and_other_datasets_do_not_count(dataset, tmp_path):
    user, other = rater(), rater()
    elsewhere = gold_dataset(tmp_path)
    QualitySettings.objects.create(dataset=elsewhere, auto_pause=True, pause_window=3, pause_max_error=1.0)
    for minute in range(3):
        gold_rating(other, dataset, 5.0, minute=minute)
        gold_rating(user, dataset, 5.0, minute=minute, purpose=GoldPurpose.QUIZ)
        gold_rating(user, elsewhere, 5.0, minute=minute)
    gold_rating(user, dataset, 1.0, minute=5)
    gold_rating(user, dataset, 1.0, minute=6)
    assert check(user, dataset) is None, "two of their own queue gold ratings here"
    gold_rating(user, dataset, 5.0, minute=7)
    assert check(user, dataset) is not None, "their own three: errors 0, 0 and 4"


def test_no_automatic_pause_where_it_is_off_or_unset(tmp_path, dataset):
    """Not even while another dataset (``dataset``) has it on."""
    off, unset = gold_dataset(tmp_path), gold_dataset(tmp_path)
    QualitySettings.objects.create(dataset=off, auto_pause=False, pause_window=3, pause_max_error=1.0)
    user = rater()
    for place in (off, unset):
        for minute in range(3):
            gold_rating(user, place, 5.0, minute=minute)
        assert check(user, place) is None
    assert not RaterPause.objects.exists()


def test_is_paused_only_for_the_paused_rater_in_that_dataset_until_lifted(dataset):
    user, other, admin = rater(), rater(), UserFactory(roles=["admin"])
    elsewhere = SplitFactory().dataset
    pause = rater_pause(rater=user, dataset=dataset, reason="checking", created_by=admin)
    assert is_paused(rater=user, dataset_id=dataset.id)
    assert not is_paused(rater=other, dataset_id=dataset.id)
    assert not is_paused(rater=user, dataset_id=elsewhere.id)
    rater_pause_lift(pause_id=pause.id, lifted_by=admin)
    assert not is_paused(rater=user, dataset_id=dataset.id)
