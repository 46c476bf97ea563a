"""What the campaign pages make of a snapshot's numbers (frontend/campaign_pages.py): pure,
no database. The numbers are d1's hand-worked campaign (tests/support/dashboard_data.py)
run through the real snapshot code."""

import csv
import io
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from annotation.dashboard.snapshot import campaign_numbers
from annotation.quality.flags import FlagThresholds
from frontend import campaign_pages as pages
from frontend import campaign_raters as raters
from tests.support import dashboard_data as hand
from tests.support.dashboard_data import hand_inputs

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
OFF = FlagThresholds()


@pytest.fixture(scope="module")
def data():
    return campaign_numbers(hand_inputs())


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0 s ago"),
        (42, "42 s ago"),
        (119, "119 s ago"),
        (300, "5 min ago"),
        (3 * 3600, "3 h ago"),
        (3 * 86400, "3 days ago"),
    ],
)
def test_age_is_said_in_a_unit_a_person_reads(seconds, text):
    assert pages.age_text(NOW - timedelta(seconds=seconds), NOW) == text


def test_a_refresh_is_done_pending_or_stuck():
    snapshot = SimpleNamespace(made_at=NOW - timedelta(minutes=10), refresh_seconds=1.5)
    assert pages.refresh_state(snapshot, now=NOW, asked_at=None) is None
    assert pages.refresh_state(snapshot, now=NOW, asked_at=NOW - timedelta(minutes=11)) == "done"
    assert pages.refresh_state(snapshot, now=NOW, asked_at=NOW - timedelta(seconds=30)) == "pending"
    assert pages.refresh_state(None, now=NOW, asked_at=NOW - timedelta(seconds=30)) == "pending"
    assert pages.refresh_state(snapshot, now=NOW, asked_at=NOW - timedelta(minutes=3)) == "stuck"
    status = pages.snapshot_status(snapshot, now=NOW)
    assert (status.made_text, status.age) == ("2026-03-02 11:50 UTC", "10 min ago")


def test_kinds_come_in_the_cxc_order_as_the_snapshot_spells_them(data):
    assert pages.kinds_of(data) == ["sts", "sis", "sits"]


def test_rater_table_lists_most_active_first_with_formatted_numbers(data):
    table = raters.rater_table(data, OFF)
    labels = [column.label for column in table["columns"]]
    assert labels[:4] == ["Rater", "Flagged", "STS today", "STS total"]
    assert "LOO r" in labels and "Faster than floor" in labels and "Last active (UTC)" in labels
    names = [row["cells"][0]["text"] for row in table["rows"]]
    assert names == ["a", "b", "c", "d"], "a has 4 ratings, b and c 3, d none"
    by_label = dict(zip(labels, table["rows"][0]["cells"], strict=True))
    assert by_label["LOO r"] == {"text": f"{hand.LOO['A']:.2f}", "sort": pytest.approx(hand.LOO["A"])}
    assert by_label["Bias"]["text"] == "-1.00"
    assert by_label["Faster than floor"]["text"] == "75%"
    assert by_label["Median s / item"]["text"] == "2.2", "2.25 s, to one decimal"
    quiet = dict(zip(labels, table["rows"][3]["cells"], strict=True))
    assert quiet["LOO r"] == {"text": "—", "sort": ""}, "no shared pairs: no number, sorted last"
    assert quiet["Skips"]["text"] == "2"


def test_raters_csv_has_a_header_and_one_row_per_rater_with_raw_numbers(data):
    rows = list(csv.DictReader(io.StringIO(raters.raters_csv(data, OFF))))
    assert [row["username"] for row in rows] == ["a", "b", "c", "d"]
    a, d = rows[0], rows[3]
    assert a["rater_id"] == "11"
    assert float(a["loo_correlation"]) == pytest.approx(hand.LOO["A"], abs=1e-4)
    assert float(a["bias"]) == pytest.approx(-1.0)
    assert float(a["fast_share"]) == pytest.approx(0.75)
    assert (a["sts_total"], a["sis_total"], a["total_all"]) == ("4", "0", "4")
    assert d["loo_correlation"] == "" and d["median_seconds"] == ""
    assert raters.raters_csv_name("coco", NOW) == "coco-raters-20260302-1200.csv"


def test_dashboard_tables_hold_the_chart_numbers(data):
    context = pages.dashboard_context(data, OFF)
    sts = context["by_kind"][0]
    assert (sts["kind_label"], sts["pairs_waiting"], sts["percent_done"]) == ("STS", 1, 55.6)
    [mean_table] = context["mean_tables"]
    assert mean_table["headers"] == ["bin", "c2c_cocaption"]
    assert len(mean_table["rows"]) == 20
    assert {i: row[1] for i, row in enumerate(mean_table["rows"]) if row[1]} == hand.MEAN_BINS
    assert mean_table["rows"][8][0] == "2.00 to 2.25"
    assert context["sd_table"]["headers"][:2] == ["bin", "STS"]
    assert context["per_day_table"]["rows"] == [["2026-03-01", 3], ["2026-03-02", 7]]
    assert context["finish"]["when"] == "2026-03-02 20:00 UTC, in 8 hours", "8 ratings to go at 1 an hour"
    assert context["pace"] == {"value": "1.0 / hour", "window": "(over the last 60 minutes)"}
    assert context["charts"]["kinds"][0] == {"kind": "sts", "label": "STS"}


def progress_at(state, window, window_seconds, per_hour, remaining=14_400, finish=None):
    pace = {"state": state, "window": window, "window_seconds": window_seconds, "ratings": 0, "per_hour": per_hour}
    return {"ratings_remaining": remaining, "pace": pace, "finish_estimate": finish}


def test_the_pace_states_its_window_and_the_finish_what_it_rests_on():
    first_minutes = progress_at("estimate", "since_first_rating", 360.0, 144_000.0, finish="2026-03-02T12:06:00+00:00")
    assert pages.pace_text(first_minutes) == {
        "value": "144,000 / hour",
        "window": "(since the first rating 6 minutes ago)",
    }
    assert pages.finish_text(first_minutes)["when"] == "2026-03-02 12:06 UTC, in 6 minutes"
    steady = progress_at("estimate", "last_hour", 3600.0, 250.0, remaining=12_000, finish="2026-03-04T12:00:00+00:00")
    assert pages.pace_text(steady)["window"] == "(over the last 60 minutes)"
    finish = pages.finish_text(steady)
    assert finish == {"when": "2026-03-04 12:00 UTC, in 2 days", "note": "(at this pace)", "small": True}
    idle = progress_at("idle", "last_hour", 3600.0, 0.0)
    assert (pages.pace_text(idle)["value"], pages.finish_text(idle)["when"]) == (
        "0.0 / hour",
        "no estimate: no ratings in the last hour",
    )
    early = progress_at("too_early", "since_first_rating", 42.0, None)
    assert pages.pace_text(early) == {"value": "—", "window": "(no pace yet: since the first rating 42 seconds ago)"}
    assert pages.finish_text(early)["when"] == "no estimate yet: the first rating is under a minute old"
    nothing = progress_at("no_ratings", None, 0.0, None)
    assert pages.pace_text(nothing) == {"value": "—", "window": "(nothing rated yet)"}
    assert pages.finish_text(nothing)["when"] == "no estimate: nothing rated yet"
    done = progress_at("done", "last_hour", 3600.0, 5.0, remaining=0, finish="2026-03-02T11:00:00+00:00")
    assert pages.finish_text(done)["when"] == "done"
    older = {"ratings_remaining": 5, "finish_estimate": None}  # a snapshot from before the pace
    assert "refresh" in pages.pace_text(older)["window"] and "refresh" in pages.finish_text(older)["when"]


def test_rater_context_shapes_one_rater_and_refuses_an_unknown_one(data):
    context = pages.rater_context(data, 11, OFF)
    assert context["summary"]["username"] == "a"
    assert context["histogram_table"]["headers"] == ["score", "this rater", "share", "everyone", "share"]
    assert sum(row[1] for row in context["histogram_table"]["rows"]) == 4
    assert sum(row[3] for row in context["histogram_table"]["rows"]) == 10
    assert len(context["detail"]["largest_differences"]) == 3
    assert pages.rater_context(data, 999, OFF) is None
    rows = pages.difference_rows(context["detail"]["largest_differences"], {})
    assert rows[0]["items"] == [] and rows[0]["difference_text"].startswith(("+", "-"))


def _with_raters(data: dict, *changes: dict) -> dict:
    """``data`` with rater rows changed by id: {rater_id: {field: value}}."""
    by_id = {key: value for change in changes for key, value in change.items()}
    return {**data, "raters": [{**row, **by_id.get(row["rater_id"], {})} for row in data["raters"]]}


def test_flagged_raters_come_first_with_their_reasons_and_the_others_are_not_flagged(data):
    # d (no ratings, id 14) made a gold dodger; a stays the most active and unflagged.
    dodger = _with_raters(data, {14: {"gold_items": 1, "gold_passed": 9}})
    table = raters.rater_table(dodger, FlagThresholds(gold_skip_share_above=0.5))
    names = [row["cells"][0]["text"] for row in table["rows"]]
    assert names == ["d", "a", "b", "c"]
    assert table["rows"][0]["reasons"] == ["90% of gold pairs skipped > 50%"]
    assert table["rows"][0]["cells"][1] == {"text": "90% of gold pairs skipped > 50%", "sort": 1}
    assert all(row["reasons"] == [] for row in table["rows"][1:])
    assert all(row["cells"][1] == {"text": "", "sort": 0} for row in table["rows"][1:])
    rows = list(csv.DictReader(io.StringIO(raters.raters_csv(dodger, FlagThresholds(gold_skip_share_above=0.5)))))
    assert {row["username"]: row["flagged"] for row in rows} == {
        "a": "",
        "b": "",
        "c": "",
        "d": "90% of gold pairs skipped > 50%",
    }
    context = pages.dashboard_context(dodger, FlagThresholds(gold_skip_share_above=0.5))
    assert [rater["username"] for rater in context["flagged"]] == ["d"]


def test_the_rater_csv_escapes_a_formula_like_username(data):
    named = _with_raters(data, {11: {"username": "=HYPERLINK(1)"}})
    text = raters.raters_csv(named, OFF)
    assert "'=HYPERLINK(1)" in text and ",=HYPERLINK" not in text
