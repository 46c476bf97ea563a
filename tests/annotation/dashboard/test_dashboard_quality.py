"""Quality control on the campaign dashboard: gold error and bias per rater, excluded
ratings, pauses, and numbers built from valid ratings only."""

import numpy as np
import pytest

from annotation.dashboard.services import campaign_snapshot_refresh
from annotation.models import GoldPair, QualitySettings
from annotation.quality import group_stats as stats
from annotation.quality.flags import FlagThresholds
from annotation.quality.pauses import rater_pause
from frontend.campaign_raters import rater_table
from tests.factories import ImageFactory, SplitFactory, UserFactory
from tests.support.exclusion_support import exclude
from tests.support.queue_support import claim, queue_pairs, rater, submit


def test_gold_errors_by_hand():
    count, mae, bias = stats.gold_errors(np.array([0, 0, 2]), np.array([1.0, -0.5, 2.0]), 3)
    assert count.tolist() == [2, 0, 1]
    assert mae[0] == pytest.approx(0.75) and bias[0] == pytest.approx(0.25)
    assert np.isnan(mae[1]) and np.isnan(bias[1])
    assert (mae[2], bias[2]) == (2.0, 2.0)


@pytest.mark.django_db
def test_rater_rows_carry_gold_error_exclusions_and_pauses(tmp_path, clock, django_capture_on_commit_callbacks):
    split = SplitFactory()
    dataset = split.dataset
    queue_pairs(split=split, n_pairs=4, ratings_per_pair=2)
    images = [ImageFactory(split=split, dataset=split.dataset) for _ in range(3)]
    path = tmp_path / "gold.csv"
    path.write_text(
        f"image1,image2,gold_score\n{images[0].key},{images[1].key},1.0\n{images[1].key},{images[2].key},4.0\n"
    )
    from annotation.quality.gold.upload import gold_pairs_upload

    gold_pairs_upload(dataset=dataset, path=path)
    QualitySettings.objects.create(dataset=dataset, gold_one_in=1)
    careful, sloppy = rater(["SIS"]), rater(["SIS"])
    for number, user in enumerate((careful, sloppy)):
        for step in range(6):  # two gold pairs first, then the four ordinary ones
            assignment = claim(user, dataset)
            gold = GoldPair.objects.filter(pk=assignment.pair_id).values_list("gold_score", flat=True).first()
            score = (gold + 0.5 if number == 0 else 5.0) if gold is not None else 2.0
            submit(user, dataset, assignment.slot_id, f"{number}-{step}", score=score)
    admin = UserFactory(roles=["admin"])
    clock.advance(60)
    exclude(
        django_capture_on_commit_callbacks,
        dataset=dataset,
        rater=sloppy,
        reason="gold",
        created_by=admin,
        keep_active=True,  # the pause below is the one the row shows
    )
    rater_pause(rater=sloppy, dataset=dataset, reason="gold error", created_by=admin)

    data = campaign_snapshot_refresh(dataset).data
    rows = {row["username"]: row for row in data["raters"]}
    assert rows[careful.username]["gold_items"] == 2
    assert rows[careful.username]["gold_error"] == pytest.approx(0.5)
    assert rows[careful.username]["gold_bias"] == pytest.approx(0.5)
    assert rows[sloppy.username]["gold_error"] == pytest.approx((4.0 + 1.0) / 2)
    assert rows[sloppy.username]["gold_bias"] == pytest.approx(2.5)
    assert (rows[sloppy.username]["excluded"], rows[careful.username]["excluded"]) == (4, 0)
    assert rows[sloppy.username]["paused"]["reason"] == "gold error"
    assert rows[careful.username]["paused"] is None
    # Valid ratings only: the sloppy rater's excluded ratings count nowhere.
    assert rows[sloppy.username]["ratings_total_all"] == 0
    assert rows[careful.username]["ratings_total_all"] == 4
    table = rater_table(data, FlagThresholds())
    labels = [column.label for column in table["columns"]]
    assert {"Gold items", "Gold error", "Gold bias", "Excluded", "Paused"} <= set(labels)
    sloppy_row = next(row for row in table["rows"] if row["rater_id"] == sloppy.id)
    assert sloppy_row["cells"][labels.index("Paused")]["text"] == "yes"
    assert sloppy_row["cells"][labels.index("Gold error")]["text"] == "2.50"
