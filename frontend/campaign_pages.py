"""What the campaign pages show, shaped from a snapshot's ``data`` (the dict of
/work/notes/contract.md, written by ``annotation.dashboard``). No queries here: the pages
read one snapshot row, so they cost the same for 10 raters or 10,000 pairs.

Numbers are formatted in Python (frontend.campaign_format), not in templates, so that the
table beside a chart, the rater table (frontend.campaign_raters) and its CSV agree on what
a column means.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import pairwise

from annotation.quality.flags import FlagThresholds
from frontend.campaign_format import (
    format_time,
    kind_label,
    kinds_of,
    number_text,
    parse_time,
    share_text,
    signed_text,
)
from frontend.campaign_model import reliability_table, savings_text
from frontend.campaign_raters import flagged_raters, rater_summary

# A queued refresh that has not produced a snapshot by then is reported as stuck, not
# waited for in silence: the worker may be down.
REFRESH_PATIENCE = timedelta(minutes=2)


def age_text(then: datetime, now: datetime) -> str:
    """``42 s ago``, ``5 min ago``, ``3 h ago``, ``2 days ago``."""
    seconds = max(0, int((now - then).total_seconds()))
    if seconds < 120:
        return f"{seconds} s ago"
    if seconds < 2 * 3600:
        return f"{seconds // 60} min ago"
    if seconds < 2 * 86400:
        return f"{seconds // 3600} h ago"
    return f"{seconds // 86400} days ago"


@dataclass(frozen=True)
class SnapshotStatus:
    """The line above every campaign page: when the numbers were made, how long ago and
    how long they took to compute."""

    made_at: datetime
    made_text: str
    age: str
    refresh_seconds: float


def snapshot_status(snapshot, *, now: datetime) -> SnapshotStatus:
    return SnapshotStatus(
        made_at=snapshot.made_at,
        made_text=format_time(snapshot.made_at),
        age=age_text(snapshot.made_at, now),
        refresh_seconds=snapshot.refresh_seconds,
    )


def refresh_state(snapshot, *, now: datetime, asked_at: datetime | None) -> str | None:
    """Where a refresh the user asked for at ``asked_at`` stands: None (none asked),
    "done" (the snapshot is newer), "pending", or "stuck" after REFRESH_PATIENCE."""
    if asked_at is None:
        return None
    if snapshot is not None and snapshot.made_at >= asked_at:
        return "done"
    return "stuck" if now - asked_at > REFRESH_PATIENCE else "pending"


# --- progress ------------------------------------------------------------------------------


def progress_rows(rows: list[dict]) -> list[dict]:
    """Progress rows (by kind or by batch) with the waiting pairs (queued, neither complete
    nor in progress) and the share of ratings done, in percent."""
    shaped = []
    for row in rows:
        required = row["ratings_required"]
        shaped.append(
            {
                **row,
                "kind_label": kind_label(row["kind"]),
                "pairs_waiting": row["pairs_queued"] - row["pairs_complete"] - row["pairs_in_progress"],
                "percent_done": round(100 * row["ratings_done"] / required, 1) if required else 0.0,
            }
        )
    return shaped


def _span(seconds: float) -> str:
    """``42 seconds``, ``1 minute``, ``6 minutes``, ``3 hours``, ``2 days``."""
    for unit, size in (("day", 86_400), ("hour", 3_600), ("minute", 60)):
        if seconds >= (2 * size if unit != "minute" else size):
            count = int(seconds // size)
            return f"{count} {unit}{'' if count == 1 else 's'}"
    return f"{int(seconds)} seconds"


def pace_text(progress: dict) -> dict:
    """The pace figure: ``value`` (ratings per hour) and ``window``, the time it is
    measured over, stated beside it."""
    pace = progress.get("pace")
    if pace is None:  # a snapshot made before the pace existed
        return {"value": "—", "window": "(not in this snapshot: refresh it)"}
    if pace["window"] is None:
        return {"value": "—", "window": "(nothing rated yet)"}
    if pace["window"] == "last_hour":
        window = f"over the last {round(pace['window_seconds'] / 60)} minutes"
    else:
        window = f"since the first rating {_span(pace['window_seconds'])} ago"
    per_hour = pace["per_hour"]
    if per_hour is None:
        return {"value": "—", "window": f"(no pace yet: {window})"}
    value = f"{per_hour:,.0f} / hour" if per_hour >= 10 else f"{per_hour:.1f} / hour"
    return {"value": value, "window": f"({window})"}


def finish_text(progress: dict) -> dict:
    """The finish estimate as the page's figure shows it: ``when`` (big), ``note`` (what
    it rests on) and ``small`` when ``when`` is a sentence rather than a time."""
    if progress["ratings_remaining"] == 0:
        return {"when": "done", "note": "", "small": False}
    pace = progress.get("pace")
    if pace is None:
        return {"when": "no estimate in this snapshot: refresh it", "note": "", "small": True}
    state = pace["state"]
    if state == "no_ratings":
        return {"when": "no estimate: nothing rated yet", "note": "", "small": True}
    if state == "too_early":
        return {"when": "no estimate yet: the first rating is under a minute old", "note": "", "small": True}
    if state == "idle":
        return {"when": "no estimate: no ratings in the last hour", "note": "", "small": True}
    left = progress["ratings_remaining"] / pace["per_hour"] * 3600
    when = f"{format_time(parse_time(progress['finish_estimate']))}, in {_span(left)}"
    return {"when": when, "note": "(at this pace)", "small": True}


# --- tables beside charts ----------------------------------------------------------------


def bin_labels(edges: list[float]) -> list[str]:
    return [f"{low:.2f} to {high:.2f}" for low, high in pairwise(edges)]


def histogram_table(edges: list[float], series: dict[str, list[int]]) -> dict:
    """A chart's numbers: one row per bin, one count column per series."""
    names = list(series)
    rows = [[label, *(series[name][i] for name in names)] for i, label in enumerate(bin_labels(edges))]
    return {"headers": ["bin", *names], "rows": rows}


def mean_histogram_tables(quality: dict, kinds: list[str]) -> list[dict]:
    """One table per kind (methods as columns) of the pair-mean histograms."""
    tables = []
    for kind in kinds:
        entries = [h for h in quality["pair_mean_histograms"] if h["kind"] == kind]
        if entries:
            table = histogram_table(entries[0]["bin_edges"], {h["method"]: h["counts"] for h in entries})
            tables.append({"kind": kind, "kind_label": kind_label(kind), **table})
    return tables


def sd_histogram_table(quality: dict) -> dict | None:
    entries = quality["pair_sd_histograms"]
    if not entries:
        return None
    return histogram_table(entries[0]["bin_edges"], {kind_label(h["kind"]): h["counts"] for h in entries})


def alpha_rows(rows: list[dict]) -> list[dict]:
    return [{**row, "kind_label": kind_label(row["kind"]), "alpha_text": number_text(row["alpha"], 3)} for row in rows]


def positive_rows(rows: list[dict]) -> list[dict]:
    return [{**row, "kind_label": kind_label(row["kind"]), "share_text": share_text(row["share"])} for row in rows]


# --- one rater -----------------------------------------------------------------------------


def score_histogram_table(histogram: dict) -> dict:
    """The rater's score counts beside everyone's, with each as a share of its total (the
    chart compares shapes, since one rater has far fewer ratings than everyone)."""
    mine, everyone = histogram["counts"], histogram["everyone_counts"]
    mine_total, everyone_total = sum(mine) or 1, sum(everyone) or 1
    rows = [
        [label, mine[i], share_text(mine[i] / mine_total), everyone[i], share_text(everyone[i] / everyone_total)]
        for i, label in enumerate(bin_labels(histogram["bin_edges"]))
    ]
    return {"headers": ["score", "this rater", "share", "everyone", "share"], "rows": rows}


def difference_rows(differences: list[dict], items_by_pair: dict[int, list]) -> list[dict]:
    """The largest differences with the pair's items (captions and pictures)."""
    return [
        {
            **row,
            "kind_label": kind_label(row["kind"]),
            "score_text": number_text(row["score"], 2),
            "others_text": number_text(row["others_mean"], 2),
            "difference_text": signed_text(row["difference"]),
            "items": items_by_pair.get(row["pair_id"], []),
        }
        for row in differences
    ]


def over_time_rows(rows: list[dict], value_key: str, count_key: str, digits: int) -> list[list[str]]:
    return [[row["date"], number_text(row[value_key], digits), row[count_key]] for row in rows]


# --- whole pages -----------------------------------------------------------------------------


def dashboard_context(data: dict, thresholds: FlagThresholds) -> dict:
    """The campaign page: progress tables, quality tables, the flagged raters and the
    thresholds that flag them, and the data its charts draw (``charts``, embedded in the
    page with json_script)."""
    progress, quality = data["progress"], data["quality"]
    kinds = kinds_of(data)
    return {
        "flagged": [rater for rater in flagged_raters(data, thresholds) if rater["flag_reasons"]],
        "thresholds": thresholds.describe(),
        "progress": progress,
        "by_kind": progress_rows(progress["by_kind"]),
        "by_batch": progress_rows(progress["by_batch"]),
        "finish": finish_text(progress),
        "pace": pace_text(progress),
        "per_day_table": {
            "headers": ["date", "ratings"],
            "rows": [[row["date"], row["ratings"]] for row in progress["ratings_per_day"]],
        },
        "per_hour_table": {
            "headers": ["hour (UTC)", "ratings"],
            "rows": [[f"{row['hour']:02d}:00", row["ratings"]] for row in progress["ratings_per_hour_today"]],
        },
        "alpha_by_kind": alpha_rows(quality["alpha_by_kind"]),
        "alpha_by_batch": alpha_rows(quality["alpha_by_batch"]),
        "mean_tables": mean_histogram_tables(quality, kinds),
        "sd_table": sd_histogram_table(quality),
        "positives": positive_rows(quality["positive_share"]),
        "reliability_table": reliability_table(quality.get("reliability_by_kind", []), kind_label),
        "adaptive_savings": savings_text(progress.get("adaptive")),
        "charts": {
            "kinds": [{"kind": kind, "label": kind_label(kind)} for kind in kinds],
            "ratings_per_day": progress["ratings_per_day"],
            "ratings_per_hour_today": progress["ratings_per_hour_today"],
            "pair_mean_histograms": quality["pair_mean_histograms"],
            "pair_sd_histograms": quality["pair_sd_histograms"],
            "positive_share": quality["positive_share"],
            "reliability_by_kind": quality.get("reliability_by_kind", []),
        },
    }


def rater_context(data: dict, rater_id: int, thresholds: FlagThresholds) -> dict | None:
    """One rater's page without the pairs' items (``detail.largest_differences`` names
    the pairs to fetch); None when the snapshot has no such rater."""
    summary = rater_summary(data, rater_id, thresholds)
    detail = data["rater_details"].get(str(rater_id))
    if summary is None or detail is None:
        return None
    return {
        "summary": summary,
        "detail": detail,
        "histogram_table": score_histogram_table(detail["score_histogram"]),
        "seconds_table": {
            "headers": ["date", "median s / item", "ratings"],
            "rows": over_time_rows(detail["seconds_over_time"], "median_seconds", "ratings", 1),
        },
        "loo_table": {
            "headers": ["date", "LOO r", "shared pairs"],
            "rows": over_time_rows(detail["loo_over_time"], "loo_correlation", "pairs", 2),
        },
        "charts": {
            "score_histogram": detail["score_histogram"],
            "seconds_over_time": detail["seconds_over_time"],
            "loo_over_time": detail["loo_over_time"],
        },
    }
