"""How the campaign pages write their numbers and times (the charts' tables, the rater
table and its CSV share these, so a column means the same everywhere). Pure."""

from __future__ import annotations

from datetime import datetime

from annotation.core.cxc import KINDS


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


def short_time(value: str | None) -> str:
    moment = parse_time(value)
    return moment.strftime("%Y-%m-%d %H:%M") if moment else "never"


def number_text(value, digits: int) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def share_text(value) -> str:
    return "—" if value is None else f"{100 * value:.0f}%"


def signed_text(value) -> str:
    # ``or 0.0`` turns a rounded -0.0 into 0.0: "-0.00" would suggest a bias that is not there.
    return "—" if value is None else f"{(round(value, 2) or 0.0):+.2f}"
