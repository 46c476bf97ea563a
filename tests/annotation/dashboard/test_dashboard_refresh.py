"""The campaign snapshot on PostgreSQL: the hand-computed campaign of
tests/support/dashboard_data.py rated through the real services, against the hand's
numbers and against the export's agreement.json of the same data; the refresh task,
the beat fan-out, the speed floors and the snapshots kept."""

import json
from datetime import datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.dashboard.selectors import campaign_snapshot_get
from annotation.dashboard.services import SNAPSHOTS_KEPT, campaign_refresh_all, campaign_snapshot_refresh
from annotation.dashboard.tasks import refresh_campaign_snapshot
from annotation.export import dataset_export
from annotation.models import CampaignSnapshot, FlagReason, RatingSlot, SlotState, SpeedFloor
from annotation.serving import lease_ttl, slot_flag, slot_skip
from annotation.serving.pairs import pairs_retire
from tests.factories import DatasetFactory, PairFactory, SamplingBatchFactory, SplitFactory, UserFactory
from tests.support import dashboard_data as hand
from tests.support.queue_support import Clock
from tests.support.rating_support import rate_pair

pytestmark = pytest.mark.django_db  # both engines: the COPY path on PostgreSQL, the portable one on SQLite


def lease(pair, rater, now):
    """Lease the pair's first open slot to ``rater``, as a claim leaves it."""
    slot = RatingSlot.objects.filter(pair=pair, state=SlotState.OPEN).order_by("index").first()
    RatingSlot.objects.filter(pk=slot.pk).update(
        state=SlotState.LEASED, rater=rater, leased_at=now, lease_expires_at=now + lease_ttl()
    )
    return slot.pk


@pytest.fixture
def campaign(monkeypatch):
    clock = Clock(hand.DAY1)
    monkeypatch.setattr("django.utils.timezone.now", clock)
    split = SplitFactory(dataset=DatasetFactory(name="hand"), name="val")
    batch = SamplingBatchFactory(split=split, ratings_per_pair=3)
    pairs = {f"P{i}": PairFactory(batch=batch, kind="STS") for i in range(1, 8)}
    raters = {who: UserFactory(username=who.lower(), roles=["rater"], qualified_for=["STS"]) for who in "ABCDE"}
    for name in ("P1", "P2", "P3"):
        for who, score, spent, when in zip(
            "ABC", hand.SCORES[name], hand.TIMES_MS[name], hand.RATED_AT[name], strict=True
        ):
            clock.now = when
            rate_pair(pairs[name], [score], raters=[raters[who]], times_ms=[spent])
    clock.now = hand.RATED_AT["P4"][0]
    rate_pair(pairs["P4"], [hand.P4_SCORE], raters=[raters["A"]], times_ms=[hand.P4_TIME_MS])
    d = raters["D"]
    clock.now = hand.NOW - timedelta(minutes=30)
    slot_skip(rater=d, dataset="hand", slot_id=lease(pairs["P4"], d, clock.now))
    slot_flag(rater=d, dataset="hand", slot_id=lease(pairs["P7"], d, clock.now), reason=FlagReason.BROKEN_IMAGE)
    pairs_retire(pair_ids=[pairs["P6"].pk])
    clock.now = hand.NOW - timedelta(minutes=1)
    lease(pairs["P5"], raters["E"], clock.now)
    clock.now = hand.NOW
    return split.dataset, batch, pairs, raters


def test_snapshot_equals_the_hand_computed_numbers(campaign):
    dataset, batch, pairs, raters = campaign
    snapshot = campaign_snapshot_refresh(dataset)
    assert snapshot.made_at == hand.NOW and snapshot.refresh_seconds > 0
    data = campaign_snapshot_get(dataset).data
    assert data["speed_floors"] == {"sts": 3.0, "sis": 1.5, "sits": 1.5}
    progress = data["progress"]
    assert progress["by_kind"][0] == {"kind": "sts", **hand.PROGRESS_STS}
    (by_batch,) = progress["by_batch"]
    assert by_batch["batch_id"] == batch.pk and by_batch["pairs_complete"] == 3
    assert progress["ratings_per_day"] == [{"date": "2026-03-01", "ratings": 3}, {"date": "2026-03-02", "ratings": 7}]
    assert progress["ratings_last_24h"] == hand.RATINGS_LAST_24H
    assert progress["pace"] == {
        "state": "estimate",
        "window": "last_hour",
        "window_seconds": 3600.0,
        "ratings": 1,
        "per_hour": hand.PACE_PER_HOUR,
    }
    assert progress["ratings_remaining"] == hand.REMAINING
    finish = datetime.fromisoformat(progress["finish_estimate"]).timestamp()
    assert finish == pytest.approx(hand.NOW.timestamp() + hand.FINISH_HOURS * 3600, abs=1e-3)
    assert (progress["raters_active_last_hour"], progress["leases_held"]) == (1, 1)
    rows = {row["username"]: row for row in data["raters"]}
    assert set(rows) == {"a", "b", "c", "d"}  # E only holds a lease
    for who in "ABC":
        row = rows[who.lower()]
        assert row["rater_id"] == raters[who].pk
        assert row["loo_correlation"] == pytest.approx(hand.LOO[who])
        assert row["bias"] == pytest.approx(hand.BIAS[who])
        assert row["median_seconds"] == pytest.approx(hand.MEDIAN_SECONDS[who])
        assert row["fast_share"] == pytest.approx(hand.FAST_SHARE[who])
        assert row["shared_pairs"] == 3
    assert (rows["d"]["skips"], rows["d"]["flags"], rows["d"]["ratings_total_all"]) == (1, 1, 0)
    assert rows["a"]["last_active"] == "2026-03-02T11:30:00+00:00"
    quality = data["quality"]
    assert quality["alpha_by_kind"][0]["alpha"] == pytest.approx(hand.ALPHA)
    assert quality["positive_share"][0]["positives"] == hand.POSITIVES
    details = data["rater_details"][str(raters["C"].pk)]
    assert str(raters["E"].pk) not in data["rater_details"]  # only held a lease
    assert details["largest_differences"][0]["pair_id"] == pairs["P2"].pk
    assert details["largest_differences"][0]["difference"] == pytest.approx(3.0)


def test_snapshot_agreement_equals_the_exports(campaign, tmp_path):
    dataset, batch, _, raters = campaign
    # A second kind, so each rater's pooled row differs from their per-kind figures.
    for scores in ((0.0, 1.0, 5.0), (2.0, 4.0, 3.5), (1.0, 0.5, 2.0)):
        rate_pair(PairFactory(batch=batch, kind="SIS"), scores, raters=[raters[w] for w in "ABC"], times_ms=[900] * 3)
    data = campaign_snapshot_refresh(dataset).data
    dataset_export(dataset_name="hand", out_dir=tmp_path / "export", formats="cxc")
    exported = json.loads((tmp_path / "export" / "agreement.json").read_text())
    for entry in data["quality"]["alpha_by_kind"][:2]:
        task = exported["by_task"][entry["kind"].upper()]
        assert (entry["alpha"], entry["pairs"]) == (pytest.approx(task["alpha_interval"]), task["units"])
    assert [(b["batch_id"], b["kind"], b["alpha"], b["pairs"]) for b in data["quality"]["alpha_by_batch"]] == [
        (b["batch_id"], b["task"].lower(), pytest.approx(b["alpha_interval"]), b["units"]) for b in exported["by_batch"]
    ]
    for kind in ("sts", "sis"):
        theirs = sorted((r["loo_correlation"], r["mean_bias"], r["compared"]) for r in exported["raters"][kind.upper()])
        mine = sorted(
            (
                row["by_kind"][kind]["loo_correlation"],
                row["by_kind"][kind]["bias"],
                row["by_kind"][kind]["shared_pairs"],
            )
            for row in data["raters"]
            if kind in row["by_kind"]
        )
        assert len(mine) == len(theirs) == 3
        for (r1, b1, n1), (r2, b2, n2) in zip(mine, theirs, strict=True):
            assert (r1, b1, n1) == (pytest.approx(r2), pytest.approx(b2), n2)
    a = next(row for row in data["raters"] if row["username"] == "a")
    assert a["shared_pairs"] == 6
    assert a["loo_correlation"] != pytest.approx(a["by_kind"]["sts"]["loo_correlation"])


def test_speed_floor_of_the_dataset_changes_the_fast_share(campaign):
    dataset, _, _, raters = campaign
    SpeedFloor.objects.create(dataset=dataset, kind="STS", seconds=2.2)
    data = campaign_snapshot_refresh(dataset).data
    assert data["speed_floors"]["sts"] == 2.2
    rows = {row["rater_id"]: row for row in data["raters"]}
    # A: 1 and 2 s of 1, 2, 2.5, 4 s are under 2.2 s.
    assert rows[raters["A"].pk]["fast_share"] == pytest.approx(0.5)


def test_refresh_keeps_the_newest_snapshots_and_reads_in_bulk(campaign):
    dataset, *_ = campaign
    for _ in range(SNAPSHOTS_KEPT + 2):
        with CaptureQueriesContext(connection) as queries:
            newest = campaign_snapshot_refresh(dataset)
    assert CampaignSnapshot.objects.filter(dataset=dataset).count() == SNAPSHOTS_KEPT
    assert campaign_snapshot_get(dataset) == newest
    # Reads are a fixed handful of statements, not one per pair or rating.
    assert len(queries) < 25


def test_refresh_all_queues_one_refresh_per_rated_dataset(campaign, django_capture_on_commit_callbacks):
    dataset, *_ = campaign
    DatasetFactory(name="unrated")
    with django_capture_on_commit_callbacks(execute=True):
        assert campaign_refresh_all() == [dataset.pk]
    assert CampaignSnapshot.objects.filter(dataset=dataset).count() == 1
    assert campaign_snapshot_get(DatasetFactory(name="other")) is None


def test_the_task_refreshes_by_id_and_a_gone_dataset_is_logged(campaign, caplog):
    dataset, *_ = campaign
    refresh_campaign_snapshot(dataset.pk)
    assert campaign_snapshot_get(dataset).made_at == hand.NOW
    refresh_campaign_snapshot(dataset.pk + 1000)
    assert "no longer exists" in caplog.text
    assert CampaignSnapshot.objects.count() == 1


def test_requests_queued_behind_a_refresh_are_answered_by_it(campaign):
    """Repeated clicks (or beat ticks) queue one task each; only a request made after the
    newest snapshot reads the ratings again."""
    dataset, *_ = campaign
    asked = (hand.NOW - timedelta(seconds=5)).isoformat()
    refresh_campaign_snapshot(dataset.pk, asked)
    refresh_campaign_snapshot(dataset.pk, asked)
    refresh_campaign_snapshot(dataset.pk, hand.NOW.isoformat())
    assert CampaignSnapshot.objects.filter(dataset=dataset).count() == 1
    refresh_campaign_snapshot(dataset.pk, (hand.NOW + timedelta(seconds=1)).isoformat())
    assert CampaignSnapshot.objects.filter(dataset=dataset).count() == 2


def test_beat_refreshes_every_dashboard_refresh_seconds(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["dashboard-refresh"]
    assert entry == {
        "task": "annotation.tasks.refresh_campaign_snapshots",
        "schedule": settings.DASHBOARD_REFRESH_SECONDS,
    }
