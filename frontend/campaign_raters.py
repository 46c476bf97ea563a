"""The rater table of the campaign pages and its CSV, shaped from a snapshot's rater rows
(no queries: the page reads one snapshot row). Each rater's pause is the one thing read
live, by the view (``with_live_pauses``): the admin's Pause and Lift pause buttons act on
it, and the table must agree with them at once, not from the next snapshot."""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from annotation.core import spreadsheet_csv
from annotation.quality.flags import FlagThresholds, flagged_first
from frontend.campaign_format import kind_label, kinds_of, number_text, share_text, short_time, signed_text


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
        Column("median_seconds", "Median s / item", lambda r: r["median_seconds"], lambda v: number_text(v, 1)),
        Column("fast_share", "Faster than floor", lambda r: r["fast_share"], share_text),
        Column("loo_correlation", "LOO r", lambda r: r["loo_correlation"], lambda v: number_text(v, 2)),
        Column("bias", "Bias", lambda r: r["bias"], signed_text),
        Column("shared_pairs", "Shared pairs", lambda r: r["shared_pairs"]),
        Column("skips", "Skips", lambda r: r["skips"]),
        Column("flags", "Flags", lambda r: r["flags"]),
        Column("last_active", "Last active (UTC)", lambda r: r["last_active"], short_time),
        Column("gold_items", "Gold items", lambda r: r.get("gold_items", 0)),
        Column("gold_passed", "Gold passed on", lambda r: r.get("gold_passed", 0)),
        Column("gold_error", "Gold error", lambda r: r.get("gold_error"), lambda v: number_text(v, 2)),
        Column("gold_bias", "Gold bias", lambda r: r.get("gold_bias"), signed_text),
        # The rater-effects model (latest fit): the largest noise sd over the rater's kinds,
        # and the bias over all their ratings.
        Column("model_noise", "Model noise", _model_noise, lambda v: number_text(v, 2)),
        Column("model_bias", "Model bias", _model_bias, signed_text),
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


def with_live_pauses(data: dict, paused: dict[int, int]) -> dict:
    """The snapshot's ``data`` with each rater row's ``paused`` as it stands now
    (``paused``: rater id -> active pause id, read with the page), so the Paused column
    says what the Pause and Lift pause buttons just did instead of what the snapshot saw."""
    rows = []
    for row in data["raters"]:
        pause_id = paused.get(row["rater_id"])
        seen = row.get("paused")
        now = (
            None
            if pause_id is None
            else (seen if seen and seen.get("pause_id") == pause_id else {"pause_id": pause_id})
        )
        rows.append({**row, "paused": now})
    return {**data, "raters": rows}


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
