"""Gold pairs: uploaded or promoted, served inside the queue at the dataset's rate and
answered exactly like ordinary pairs, their ratings kept apart, the automatic pause."""

import math

import pytest

from annotation.core.errors import Conflict, Forbidden
from annotation.models import (
    GoldLease,
    GoldPair,
    GoldRating,
    Pair,
    QualitySettings,
    QueueCounter,
    RaterPause,
    Rating,
    TaskKind,
)
from annotation.quality.gold.upload import GoldInputError, gold_pairs_promote, gold_pairs_upload
from annotation.rating.policy import slot_flag, slot_heartbeat, slot_skip
from annotation.serving.pauses import RaterPaused
from tests.factories import ImageFactory, SplitFactory
from tests.support import queue_support
from tests.support.queue_support import claim, queue_pairs, rater, submit
from tests.support.rating_support import db_id

pytestmark = pytest.mark.django_db
engine = queue_support.engine


@pytest.fixture
def campaign(tmp_path):
    """40 SIS pairs to rate and 6 gold SIS pairs uploaded (other images of the split)."""
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=40, ratings_per_pair=3)
    images = [ImageFactory(split=split, dataset=split.dataset) for _ in range(7)]
    lines = ["image1,image2,gold_score,explanation"]
    lines += [f"{images[i + 1].key},{images[i].key},{i * 0.8:.1f},level {i}" for i in range(6)]
    path = tmp_path / "gold.csv"
    path.write_text("\n".join(lines) + "\n")
    assert gold_pairs_upload(dataset=split.dataset, path=path) == 6
    return split.dataset


def set_rate(dataset, one_in: int, **extra) -> None:
    QualitySettings.objects.update_or_create(dataset=dataset, defaults={"gold_one_in": one_in, **extra})


def is_gold(assignment) -> bool:
    return GoldLease.objects.filter(pk=assignment.slot_id).exists()


def test_upload_stores_canonical_pairs_with_ids_from_the_pairs_sequence(campaign):
    gold = list(GoldPair.objects.order_by("id"))
    assert len(gold) == 6 and all(g.swapped and g.image_a_id < g.image_b_id for g in gold)
    assert [g.explanation for g in gold][:2] == ["level 0", "level 1"]
    assert min(g.id for g in gold) > max(Pair.objects.values_list("id", flat=True))


def test_a_cxc_file_with_a_gold_score_column_is_a_gold_file(tmp_path):
    split = SplitFactory()
    a, b = ImageFactory(split=split, dataset=split.dataset), ImageFactory(split=split, dataset=split.dataset)
    path = tmp_path / "sis_val_gold.csv"
    path.write_text(f"image1,image2,agg_score,sampling_method,gold_score\n{a.key},{b.key},2.2,i2i_csim,2.5\n")
    assert gold_pairs_upload(dataset=split.dataset, path=path) == 1
    assert GoldPair.objects.get().gold_score == 2.5


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["image1,image2"], "the header must name one pair of id columns"),
        (["image1,image2,gold_score,extra", "a,b,1,x"], "columns must be image1,image2,gold_score"),
        (["image1,image2,agg_score,sampling_method", "{a},{b},2,i2i_csim"], "the header must name .* and gold_score"),
        (["image1,image2,gold_score", "nope.jpg,{b},2"], "line 2, column image1: no image 'nope.jpg'"),
        (["image1,image2,gold_score", "{a},{b},7"], "line 2, column gold_score: 7 is not between 0 and 5"),
        (["image1,image2,gold_score", "{a},{b},nan"], "line 2, column gold_score: nan is not between 0 and 5"),
        (["image1,image2,gold_score", "{a},{b},x"], "line 2, column gold_score: 'x' is not a number"),
        (["image1,image2,gold_score", "{a},{b},1", "{b},{a},2"], "line 3 repeats the pair on line 2"),
        (["image1,image2,gold_score", "{a},{a},1"], "pairs .* with itself"),
    ],
)
def test_a_bad_gold_file_is_refused_whole(tmp_path, lines, message):
    split = SplitFactory()
    a, b = ImageFactory(split=split, dataset=split.dataset), ImageFactory(split=split, dataset=split.dataset)
    path = tmp_path / "gold.csv"
    path.write_text("\n".join(line.format(a=a.key, b=b.key) for line in lines) + "\n")
    with pytest.raises(GoldInputError, match=message):
        gold_pairs_upload(dataset=split.dataset, path=path)
    assert not GoldPair.objects.exists()


def test_gold_is_served_at_the_dataset_rate_and_never_twice(engine, clock, campaign):
    set_rate(campaign, 4)
    users = [rater(["SIS"]) for _ in range(6)]
    served = gold = 0
    for number, user in enumerate(users):
        met = set()
        for step in range(20):
            assignment = claim(user, campaign)
            served += 1
            if is_gold(assignment):
                gold += 1
                assert assignment.pair_id not in met, "a rater never meets a gold pair twice"
                met.add(assignment.pair_id)
            submit(user, campaign, assignment.slot_id, f"{number}-{step}")
    # 120 claims at p = 1/4 (fewer once a rater has met all six): far from 0 and from all.
    mean, sd = served / 4, math.sqrt(served * 0.25 * 0.75)
    assert mean - 4 * sd < gold < mean + 4 * sd, (gold, served)


def test_no_gold_when_the_rate_is_zero(engine, clock, campaign):
    set_rate(campaign, 0)
    user = rater(["SIS"])
    for step in range(30):
        assignment = claim(user, campaign)
        assert not is_gold(assignment)
        submit(user, campaign, assignment.slot_id, f"k{step}")


def test_gold_ratings_are_kept_apart_and_answer_like_ratings(engine, clock, campaign):
    set_rate(campaign, 1)
    user, other = rater(["SIS"]), rater(["SIS"])
    assignment = claim(user, campaign)
    assert is_gold(assignment) and assignment.resumed is False
    assert claim(user, campaign).slot_id == assignment.slot_id, "a held gold lease is resumed"
    assert slot_heartbeat(rater=user, dataset=campaign.name, slot_id=assignment.slot_id) is not None
    with pytest.raises(Forbidden, match="you do not hold this rating slot: it belongs to another"):
        submit(other, campaign, assignment.slot_id, "x")
    result = submit(user, campaign, assignment.slot_id, "k1", score=2.0)
    assert result.replayed is False and result.pair_id == assignment.pair_id
    again = submit(user, campaign, assignment.slot_id, "k1", score=2.0)
    assert again.replayed is True and again.rating_id == result.rating_id
    with pytest.raises(Conflict, match="this rating slot is already rated by you"):
        submit(user, campaign, assignment.slot_id, "k2")
    stored = GoldRating.objects.get(pk=result.rating_id)
    assert (stored.score, stored.rater, stored.gold_score) == (
        2.0,
        user,
        GoldPair.objects.get(pk=result.pair_id).gold_score,
    )
    assert not Rating.objects.exists() and not Rating.objects.filter(pk=result.rating_id).exists()
    assert set(Pair.objects.values_list("ratings_done", flat=True)) == {0}
    assert QueueCounter.objects.get(dataset=campaign, kind=TaskKind.SIS).pairs_open == 40


def test_skip_and_flag_on_gold(engine, clock, campaign):
    set_rate(campaign, 1)
    user = rater(["SIS"])
    first = claim(user, campaign)
    assert slot_skip(rater=user, dataset=campaign.name, slot_id=first.slot_id) == first.pair_id
    second = claim(user, campaign)
    assert second.pair_id != first.pair_id
    flag = slot_flag(rater=user, dataset=campaign.name, slot_id=second.slot_id, reason="broken_image")
    repeat = slot_flag(rater=user, dataset=campaign.name, slot_id=second.slot_id, reason="broken_image")
    assert flag.id == repeat.id and flag.pair_id == second.pair_id
    assert GoldLease.objects.get(pk=second.slot_id).flag_reason == "broken_image"


def test_bad_gold_ratings_pause_the_rater_when_auto_pause_is_on(engine, clock, campaign):
    set_rate(campaign, 1, auto_pause=True, pause_window=3, pause_max_error=1.0)
    user = rater(["SIS"])
    for step in range(3):
        assignment = claim(user, campaign)
        gold = GoldPair.objects.get(pk=assignment.pair_id).gold_score
        submit(user, campaign, assignment.slot_id, f"k{step}", score=5.0 if gold < 2.5 else 0.0)
    pause = RaterPause.objects.get(rater=user)
    assert pause.automatic and "over the last 3 gold items (limit 1.00)" in pause.reason
    with pytest.raises(RaterPaused):
        claim(user, campaign)


def test_no_pause_with_auto_pause_off(engine, clock, campaign):
    set_rate(campaign, 1, auto_pause=False, pause_window=3)
    user = rater(["SIS"])
    for step in range(3):
        assignment = claim(user, campaign)
        submit(user, campaign, assignment.slot_id, f"k{step}", score=5.0)
    assert not RaterPause.objects.exists()


def test_promote_makes_gold_of_agreed_complete_pairs(clock):
    split = SplitFactory()
    _, pairs = queue_pairs(split=split, n_pairs=2, ratings_per_pair=3)
    raters = [rater(["SIS"]) for _ in range(3)]
    for number, user in enumerate(raters):
        for step in range(2):
            assignment = claim(user, split.dataset)
            agreed = assignment.pair_id == pairs[0].id
            submit(user, split.dataset, assignment.slot_id, f"{number}{step}", score=3.0 if agreed else number * 2.0)
    assert gold_pairs_promote(dataset=split.dataset, kind="SIS", max_sd=0.5) == 1
    gold = GoldPair.objects.get()
    assert (gold.source_pair_id, gold.gold_score, gold.source) == (pairs[0].id, 3.0, "promoted")
    assert gold_pairs_promote(dataset=split.dataset, kind="SIS", max_sd=0.5) == 0, "already gold"


def test_gold_ratings_are_exported_only_in_the_audit_file(clock, campaign, tmp_path):
    import csv
    import json

    from annotation.export import dataset_export

    set_rate(campaign, 1)
    users = [rater(["SIS"]) for _ in range(3)]
    for number, user in enumerate(users):
        for step in range(8):  # six gold pairs first, then ordinary ones
            assignment = claim(user, campaign)
            submit(user, campaign, assignment.slot_id, f"{number}-{step}", score=1.5)
    out = tmp_path / "export"
    dataset_export(dataset_name=campaign.name, out_dir=out, formats=["cxc"])
    split = campaign.splits.get().name
    with (out / f"gold_{split}.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 18 == GoldRating.objects.count()
    assert set(rows[0]) == {
        "kind", "item1", "item2", "gold_score", "rater_id", "score", "abs_error",
        "purpose", "attempt", "time_on_item_ms", "below_speed_floor", "created_at",
    }  # fmt: skip
    for row in rows:
        assert float(row["abs_error"]) == pytest.approx(abs(1.5 - float(row["gold_score"])))
    gold_keys = {(row["item1"], row["item2"]) for row in rows}
    with (out / f"sis_{split}_raw.csv").open(newline="") as handle:
        raw = list(csv.DictReader(handle))
    assert len(raw) == 3 * 2  # the two ordinary pairs each rater completed: 2 pairs x 3 ratings
    assert not gold_keys & {(row["image1"], row["image2"]) for row in raw}
    manifest = json.loads((out / "manifest.json").read_text())
    assert f"gold_{split}.csv" in {entry["name"] for entry in manifest["files"]}
    assert manifest["totals"]["ratings"] == 6


def test_the_raters_own_list_and_progress_count_gold_like_any_rating(clock, campaign):
    from tests.support.queue_support import client_for

    set_rate(campaign, 2)
    user = rater(["SIS"])
    client = client_for(user)
    base = f"/api/rate/{campaign.name}"
    for step in range(10):
        assignment = claim(user, campaign)
        submit(user, campaign, assignment.slot_id, f"k{step}")
    listed = client.get(f"{base}/ratings/?limit=20").json()
    gold_ids = set(GoldRating.objects.values_list("id", flat=True))
    stored_ids = [db_id("rating", row["id"]) for row in listed]
    assert len(listed) == 10 and gold_ids and gold_ids < set(stored_ids)
    assert stored_ids == sorted(stored_ids, reverse=True), "newest first"
    assert len({frozenset(row) for row in listed}) == 1, "gold and ordinary rows have the same fields"
    assert client.get(f"{base}/progress/").json()["ratings_today"] == 10
    older = client.get(f"{base}/ratings/?limit=3&before={listed[2]['id']}").json()
    assert [row["id"] for row in older] == [row["id"] for row in listed[3:6]]
