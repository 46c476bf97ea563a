"""What the campaign pages show, shaped from a snapshot's ``data`` (the dict of
/work/notes/contract.md, written by ``annotation.dashboard``). No queries here: the pages
read one snapshot row, so they cost the same for 10 raters or 10,000 pairs.

Numbers are formatted here, not in templates, so that the table beside a chart, the rater
table and its CSV agree on what a column means.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import pairwise

from annotation.core import spreadsheet_csv
from annotation.core.cxc import KINDS
from annotation.quality.flags import FlagThresholds, flagged_first
from frontend.campaign_model import reliability_table, savings_text

# A queued refresh that has not produced a snapshot by then is reported as stuck, not
# waited for in silence: the worker may be down.
REFRESH_PATIENCE = timedelta(minutes=2)


def kind_label(kind: str) -> str:
    return kind.upper()


def kinds_of(data: dict) -> list[str]:
    """The snapshot's task kinds as it spells them, in the CxC order (STS, SIS, SITS)."""
    kinds = {row["kind"] for row in data["progress"]["by_kind"]} | set(data.get("speed_floors", {}))
    order = {kind: i for i, kind in enumerate(KINDS)}
    return sorted(kinds, key=lambda kind: order.get(kind.upper(), len(order)))


def parse_time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def format_time(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M UTC") if value else "never"


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


def _short_time(value: str | None) -> str:
    moment = parse_time(value)
    return moment.strftime("%Y-%m-%d %H:%M") if moment else "never"


def _number(value, digits: int) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _share(value) -> str:
    return "—" if value is None else f"{100 * value:.0f}%"


def _signed(value) -> str:
    # ``or 0.0`` turns a rounded -0.0 into 0.0: "-0.00" would suggest a bias that is not there.
    return "—" if value is None else f"{(round(value, 2) or 0.0):+.2f}"


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
    return [{**row, "kind_label": kind_label(row["kind"]), "alpha_text": _number(row["alpha"], 3)} for row in rows]


def positive_rows(rows: list[dict]) -> list[dict]:
    return [{**row, "kind_label": kind_label(row["kind"]), "share_text": _share(row["share"])} for row in rows]


# --- the rater table and its CSV -----------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """``key``: the CSV header; ``value``: the raw value (CSV, sorting unless ``sort``
    says otherwise); ``text``: as shown."""

    key: str
    label: str
    value: Callable[[dict], object]
    text: Callable[[object], str] = str
    numeric: bool = True
    sort: Callable[[dict], object] | None = None


def _yes_no(value) -> str:
    return "yes" if value else "no"


def rater_columns(kinds: list[str]) -> list[Column]:
    per_kind = []
    for kind in kinds:
        label = kind_label(kind)
        per_kind += [
            Column(f"{kind}_today", f"{label} today", lambda r, k=kind: r["ratings_today"].get(k, 0)),
            Column(f"{kind}_total", f"{label} total", lambda r, k=kind: r["ratings_total"].get(k, 0)),
        ]
    return [
        Column("username", "Rater", lambda r: r["username"], numeric=False),
        # Sorted by how many checks failed; the text names them.
        Column("flagged", "Flagged", lambda r: "; ".join(r["flag_reasons"]), sort=lambda r: len(r["flag_reasons"])),
        *per_kind,
        Column("today_all", "All today", lambda r: r["ratings_today_all"]),
        Column("total_all", "All total", lambda r: r["ratings_total_all"]),
        Column("median_seconds", "Median s / item", lambda r: r["median_seconds"], lambda v: _number(v, 1)),
        Column("fast_share", "Faster than floor", lambda r: r["fast_share"], _share),
        Column("loo_correlation", "LOO r", lambda r: r["loo_correlation"], lambda v: _number(v, 2)),
        Column("bias", "Bias", lambda r: r["bias"], _signed),
        Column("shared_pairs", "Shared pairs", lambda r: r["shared_pairs"]),
        Column("skips", "Skips", lambda r: r["skips"]),
        Column("flags", "Flags", lambda r: r["flags"]),
        Column("last_active", "Last active (UTC)", lambda r: r["last_active"], _short_time),
        Column("gold_items", "Gold items", lambda r: r.get("gold_items", 0)),
        Column("gold_passed", "Gold passed on", lambda r: r.get("gold_passed", 0)),
        Column("gold_error", "Gold error", lambda r: r.get("gold_error"), lambda v: _number(v, 2)),
        Column("gold_bias", "Gold bias", lambda r: r.get("gold_bias"), _signed),
        # The rater-effects model (latest fit): the largest noise sd over the rater's kinds,
        # and the bias over all their ratings.
        Column("model_noise", "Model noise", _model_noise, lambda v: _number(v, 2)),
        Column("model_bias", "Model bias", _model_bias, _signed),
        Column("excluded", "Excluded", lambda r: r.get("excluded", 0)),
        # The CSV keeps "paused" or empty; the page says yes or no (an empty card read as unknown).
        Column("paused", "Paused", lambda r: "paused" if r.get("paused") else "", _yes_no, numeric=False),
    ]


def _model_noise(row: dict) -> float | None:
    return max((kind["noise_sd"] for kind in row.get("model", {}).values()), default=None)


def _model_bias(row: dict) -> float | None:
    kinds = list(row.get("model", {}).values())
    ratings = sum(kind["ratings"] for kind in kinds)
    return sum(kind["bias"] * kind["ratings"] for kind in kinds) / ratings if ratings else None


def flagged_raters(data: dict, thresholds: FlagThresholds) -> list[dict]:
    """The snapshot's rater rows, each with ``flag_reasons`` (annotation.quality.flags;
    empty: not flagged), flagged raters first, then most ratings first."""
    return flagged_first(data["raters"], thresholds)


def rater_table(data: dict, thresholds: FlagThresholds) -> dict:
    """Headers and rows of the rater table, flagged raters first, then most ratings
    first. Each cell has the text shown and the value the page sorts by (empty for a
    missing number: sorted last); each row its ``reasons`` for being flagged."""
    columns = rater_columns(kinds_of(data))
    rows = []
    for rater in flagged_raters(data, thresholds):
        cells = []
        for column in columns:
            value = column.value(rater)
            sort = column.sort(rater) if column.sort else value
            cells.append({"text": column.text(value), "sort": "" if sort is None else sort})
        rows.append({"rater_id": rater["rater_id"], "cells": cells, "reasons": rater["flag_reasons"]})
    return {"columns": columns, "rows": rows}


def _csv_value(value) -> object:
    if value is None:
        return ""
    return round(value, 4) if isinstance(value, float) else value


def raters_csv(data: dict, thresholds: FlagThresholds) -> str:
    columns = rater_columns(kinds_of(data))
    out = io.StringIO()
    # Admins open this file in a spreadsheet: a username like -2+3 or @SUM is escaped.
    writer = spreadsheet_csv.writer(out, lineterminator="\n")
    writer.writerow(["rater_id", *(column.key for column in columns)])
    for rater in sorted(flagged_raters(data, thresholds), key=lambda r: r["rater_id"]):
        writer.writerow([rater["rater_id"], *(_csv_value(column.value(rater)) for column in columns)])
    return out.getvalue()


def raters_csv_name(dataset: str, made_at: datetime) -> str:
    return f"{dataset}-raters-{made_at.strftime('%Y%m%d-%H%M')}.csv"


# --- one rater -----------------------------------------------------------------------------


def rater_summary(data: dict, rater_id: int, thresholds: FlagThresholds) -> dict | None:
    """The rater's row of the rater table (same columns, the flag reasons apart), or None
    when the snapshot has no such rater."""
    table = rater_table(data, thresholds)
    for row in table["rows"]:
        if row["rater_id"] == rater_id:
            cells = list(zip(table["columns"], row["cells"], strict=True))
            return {
                "cells": [(column, cell) for column, cell in cells if column.key != "flagged"],
                "username": row["cells"][0]["text"],
                "reasons": row["reasons"],
            }
    return None


def score_histogram_table(histogram: dict) -> dict:
    """The rater's score counts beside everyone's, with each as a share of its total (the
    chart compares shapes, since one rater has far fewer ratings than everyone)."""
    mine, everyone = histogram["counts"], histogram["everyone_counts"]
    mine_total, everyone_total = sum(mine) or 1, sum(everyone) or 1
    rows = [
        [label, mine[i], _share(mine[i] / mine_total), everyone[i], _share(everyone[i] / everyone_total)]
        for i, label in enumerate(bin_labels(histogram["bin_edges"]))
    ]
    return {"headers": ["score", "this rater", "share", "everyone", "share"], "rows": rows}


def difference_rows(differences: list[dict], items_by_pair: dict[int, list]) -> list[dict]:
    """The largest differences with the pair's items (captions and pictures)."""
    return [
        {
            **row,
            "kind_label": kind_label(row["kind"]),
            "score_text": _number(row["score"], 2),
            "others_text": _number(row["others_mean"], 2),
            "difference_text": _signed(row["difference"]),
            "items": items_by_pair.get(row["pair_id"], []),
        }
        for row in differences
    ]


def over_time_rows(rows: list[dict], value_key: str, count_key: str, digits: int) -> list[list[str]]:
    return [[row["date"], _number(row[value_key], digits), row[count_key]] for row in rows]


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
