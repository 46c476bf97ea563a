"""The dashboard snapshot of a hand-computed campaign (tests/support/dashboard_data.py),
from columns built here: pure numpy, no database."""

import json
import math
from datetime import datetime

import pytest

from annotation.dashboard.snapshot import campaign_numbers
from tests.support import dashboard_data as hand
from tests.support.dashboard_data import hand_inputs


@pytest.fixture(scope="module")
def data():
    return campaign_numbers(hand_inputs())


def test_progress_matches_the_hand_count(data):
    progress = data["progress"]
    sts = progress["by_kind"][0]
    assert sts == {"kind": "sts", **hand.PROGRESS_STS}
    assert progress["by_kind"][1]["pairs_queued"] == 0
    assert progress["by_batch"] == [
        {"batch_id": 5, "batch_name": "#5 val (sampled)", "kind": "sts", **hand.PROGRESS_STS}
    ]
    assert progress["ratings_per_day"] == [{"date": "2026-03-01", "ratings": 3}, {"date": "2026-03-02", "ratings": 7}]
    hours = {entry["hour"]: entry["ratings"] for entry in progress["ratings_per_hour_today"] if entry["ratings"]}
    assert len(progress["ratings_per_hour_today"]) == 24
    assert hours == {9: 3, 10: 3, 11: 1}
    assert progress["ratings_last_24h"] == hand.RATINGS_LAST_24H
    assert progress["pace"] == {
        "state": "estimate",
        "window": "last_hour",
        "window_seconds": 3600.0,
        "ratings": 1,
        "per_hour": hand.PACE_PER_HOUR,
    }
    assert progress["ratings_remaining"] == hand.REMAINING
    finish = hand.NOW.timestamp() + hand.FINISH_HOURS * 3600
    assert datetime.fromisoformat(progress["finish_estimate"]).timestamp() == pytest.approx(finish, abs=1e-3)
    assert progress["raters_active_last_hour"] == 1
    assert progress["leases_held"] == 1


def test_rater_rows_match_the_hand_computation(data):
    rows = {row["username"]: row for row in data["raters"]}
    assert [row["rater_id"] for row in data["raters"]] == [11, 12, 13, 14]
    for who, name in (("A", "a"), ("B", "b"), ("C", "c")):
        row = rows[name]
        assert row["loo_correlation"] == pytest.approx(hand.LOO[who])
        assert row["bias"] == pytest.approx(hand.BIAS[who])
        assert row["shared_pairs"] == 3
        assert row["median_seconds"] == pytest.approx(hand.MEDIAN_SECONDS[who])
        assert row["fast_share"] == pytest.approx(hand.FAST_SHARE[who])
        assert row["by_kind"]["sts"]["loo_correlation"] == pytest.approx(hand.LOO[who])
        assert row["by_kind"]["sts"]["bias"] == pytest.approx(hand.BIAS[who])
        assert set(row["by_kind"]) == {"sts"}
    assert rows["a"]["ratings_total"] == {"sts": 4, "sis": 0, "sits": 0}
    assert rows["a"]["ratings_today"] == {"sts": 3, "sis": 0, "sits": 0}
    assert (rows["a"]["ratings_total_all"], rows["a"]["ratings_today_all"]) == (4, 3)
    assert rows["a"]["last_active"] == "2026-03-02T11:30:00+00:00"
    # D only skipped and flagged: a row without ratings, its numbers absent, not zero.
    d = rows["d"]
    assert (d["skips"], d["flags"], d["ratings_total_all"], d["shared_pairs"]) == (2, 1, 0, 0)
    assert d["median_seconds"] is None and d["loo_correlation"] is None and d["fast_share"] is None
    assert d["last_active"] == "2026-03-01T01:00:00+00:00"


def test_quality_matches_the_hand_computation(data):
    quality = data["quality"]
    assert quality["alpha_by_kind"][0]["alpha"] == pytest.approx(hand.ALPHA)
    assert quality["alpha_by_kind"][0]["pairs"] == 3
    assert quality["alpha_by_kind"][1] == {"kind": "sis", "alpha": None, "pairs": 0}
    (batch,) = quality["alpha_by_batch"]
    assert batch["alpha"] == pytest.approx(hand.ALPHA) and (batch["batch_id"], batch["kind"]) == (5, "sts")
    (means,) = quality["pair_mean_histograms"]
    assert (means["kind"], means["method"], len(means["bin_edges"])) == ("sts", "c2c_cocaption", 21)
    assert {i: n for i, n in enumerate(means["counts"]) if n} == hand.MEAN_BINS
    sts_sd = quality["pair_sd_histograms"][0]
    assert {i: n for i, n in enumerate(sts_sd["counts"]) if n} == hand.SD_BINS
    assert quality["positive_share"] == [
        {"kind": "sts", "method": "c2c_cocaption", "pairs": 3, "positives": hand.POSITIVES, "share": 2 / 3}
    ]


def test_rater_details_match_the_hand_computation(data):
    a = data["rater_details"]["11"]
    assert a["score_histogram"]["counts"][4] == 1  # A's 1.0
    assert sum(a["score_histogram"]["counts"]) == 4
    assert sum(a["score_histogram"]["everyone_counts"]) == 10
    assert a["seconds_over_time"] == [
        {"date": "2026-03-01", "median_seconds": 1.0, "ratings": 1},
        {"date": "2026-03-02", "median_seconds": 2.5, "ratings": 3},
    ]
    # Day 1: one compared rating, no correlation; day 2: (2, 3.5) and (4, 4) lie on a line.
    assert a["loo_over_time"][0] == {"date": "2026-03-01", "loo_correlation": None, "pairs": 1}
    assert a["loo_over_time"][1]["loo_correlation"] == pytest.approx(1.0)
    assert [(d["pair_id"], d["difference"]) for d in a["largest_differences"]] == [(1, -1.5), (2, -1.5), (3, 0.0)]
    c = data["rater_details"]["13"]
    assert c["largest_differences"][0] == {
        "pair_id": 2,
        "kind": "sts",
        "score": 5.0,
        "others_mean": 2.0,
        "difference": 3.0,
    }
    assert data["rater_details"]["14"]["largest_differences"] == []


def test_numbers_are_json_ready(data):
    text = json.dumps(data, allow_nan=False)
    assert json.loads(text) == data
    assert not math.isnan(data["quality"]["alpha_by_kind"][0]["alpha"])
