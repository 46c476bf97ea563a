"""The c2i_intrasim rule a batch recorded (``stats.c2i_intrasim``), as its admin page shows it."""

from django.utils.html import format_html, format_html_join

RULE_LINES = ("rule", "direction", "order", "halves")
COUNTS = (
    ("pivots", "pivots"),
    ("skipped_original", "skipped: a caption with its own image"),
    ("skipped_queued", "skipped: already queued"),
    ("skipped_repeat", "skipped: a repeat"),
    ("skipped_taken_by_sts", "skipped: the STS half took it"),
    ("skipped_taken_by_sis", "skipped: the SIS half took it (filling in)"),
    ("taken", "pairs taken"),
    ("lowest_score_taken", "lowest pivot score taken"),
)


def phase_two_table(report: dict) -> str:
    """The rule's lines, then a row per count with a column per half (batches made before
    the one-pair-per-pivot rule recorded the rule only)."""
    lines = format_html_join("", "<div>{}: {}</div>", ((key, report[key]) for key in RULE_LINES if key in report))
    if "sts" not in report or "sis" not in report:
        return lines
    rows = format_html_join(
        "",
        "<tr><th>{}</th><td>{}</td><td>{}</td></tr>",
        ((label, _shown(report["sts"].get(key)), _shown(report["sis"].get(key))) for key, label in COUNTS),
    )
    head = "<thead><tr><th></th><th>STS half</th><th>SIS half</th></tr></thead>"
    return format_html("{}<table>" + head + "<tbody>{}</tbody></table>", lines, rows)


def _shown(value) -> object:
    return "-" if value is None else value
