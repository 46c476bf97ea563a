"""Table bodies of the campaign pages, built with format_html_join: the rater table of a
CxC-size campaign has thousands of cells, which Django's template loops render several
times slower (the page's time budget is 150 ms at p95)."""

from django import template
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from frontend.selectors import RaterStanding

register = template.Library()


@register.simple_tag
def numbers_rows(rows: list[list]) -> str:
    """``<tr>`` rows of a chart's numbers table: the first cell a row heading."""
    return format_html_join(
        "\n",
        "<tr>{}</tr>",
        (
            (
                format_html(
                    '<th scope="row">{}</th>{}', row[0], format_html_join("", "<td>{}</td>", ((c,) for c in row[1:]))
                ),
            )
            for row in rows
        ),
    )


@register.simple_tag
def rater_rows(table: dict, raters_url: str, standings, dataset: str, csrf_token: str) -> str:
    """``<tr id="rater-<id>">`` rows of the rater table: the name links to
    ``<raters_url><rater id>/``; the flag cell names the reasons beside a "Flagged" badge;
    with ``standings`` (admins; None for researchers) an actions cell follows it. Every
    cell carries its sort value in data-sort, and every figure its column's key in its
    class and label in data-label (a phone shows each row as a card, labels beside the
    figures)."""
    figures = [(column.key, column.label) for column in table["columns"][2:]]
    return format_html_join(
        "\n",
        '<tr id="rater-{}"{}>{}</tr>',
        (
            (
                row["rater_id"],
                format_html(' class="{}"', "flagged") if row["reasons"] else "",
                _rater_cells(row, figures, raters_url, standings, dataset, csrf_token),
            )
            for row in table["rows"]
        ),
    )


def _flag_cell(cell: dict, reasons: list[str]) -> str:
    if not reasons:
        return mark_safe('<td class="flag-cell" data-sort="0"><span class="note">Not flagged</span></td>')
    return format_html(
        '<td class="flag-cell" data-sort="{}"><span class="flag-badge">⚑ Flagged</span>'
        '<ul class="reasons">{}</ul></td>',
        cell["sort"],
        format_html_join("", "<li>{}</li>", ((reason,) for reason in reasons)),
    )


def _rater_cells(row: dict, columns: list[tuple[str, str]], raters_url, standings, dataset, csrf_token) -> str:
    name, flagged, *numbers = row["cells"]
    actions = ""
    if standings is not None:
        standing = standings.get(row["rater_id"], RaterStanding())
        back = f"{raters_url}#rater-{row['rater_id']}"
        actions = format_html(
            '<td class="actions-cell">{}</td>', rater_actions(standing, dataset, row["rater_id"], csrf_token, back)
        )
    figures = format_html_join(
        "",
        '<td class="num col-{}" data-sort="{}" data-label="{}">{}</td>',
        ((key, cell["sort"], label, cell["text"]) for (key, label), cell in zip(columns, numbers, strict=True)),
    )
    return format_html(
        '<th scope="row" data-sort="{}"><a href="{}{}/">{}</a></th>{}{}{}',
        name["sort"],
        raters_url,
        row["rater_id"],
        name["text"],
        _flag_cell(flagged, row["reasons"]),
        actions,
        figures,
    )


@register.simple_tag
def rater_actions(standing, dataset: str, rater_id: int, csrf_token: str, back: str) -> str:
    """The admin's buttons for one rater: Pause or Lift pause (POST forms with the CSRF
    token, back to ``back``), and Exclude… (to the page that says what it hits) or the
    link to the exclusion not undone. ``standing``: frontend.selectors.RaterStanding."""
    token = format_html('<input type="hidden" name="csrfmiddlewaretoken" value="{}">', csrf_token)
    hidden = format_html('{}<input type="hidden" name="next" value="{}">', token, back)
    if standing.pause_id is None:
        url, label, css = reverse("campaign-rater-pause", args=[dataset, rater_id]), "Pause", "pause"
    else:
        url, label, css = reverse("campaign-rater-lift", args=[dataset, rater_id]), "Lift pause", "lift"
    pause = format_html(
        '<form method="post" action="{}" class="inline">{}{}<button type="submit" class="small {}">{}</button></form>',
        url,
        format_html('<span class="state">{}</span>', "Paused") if standing.pause_id is not None else "",
        hidden,
        css,
        label,
    )
    if standing.exclusion_id is None:
        exclude = format_html(
            '<a class="small button-link exclude" href="{}">Exclude…</a>',
            reverse("campaign-rater-exclude", args=[dataset, rater_id]),
        )
    else:
        exclude = format_html(
            '<a class="exclusion-link" href="{}">exclusion #{} ({})</a>',
            reverse("campaign-exclusion", args=[dataset, standing.exclusion_id]),
            standing.exclusion_id,
            standing.exclusion_state,
        )
    return format_html('<div class="rater-actions">{}{}</div>', pause, exclude)
