"""The consent text of a campaign link, rendered safely: everything the admin typed is
escaped (no HTML of theirs reaches the page); blank lines separate paragraphs, lines
starting with "- " make a list, and **words** are bold."""

import re

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

_BOLD = re.compile(r"\*\*(.+?)\*\*")


def _inline(text: str) -> str:
    """One escaped line with its **bold** spans; the markers are matched after escaping,
    so nothing typed can open a tag."""
    return _BOLD.sub(r"<strong>\1</strong>", escape(text))


@register.filter
def study_text(text: str) -> SafeString:
    """``text`` as paragraphs and lists of escaped text (see the module)."""
    blocks = []
    for block in re.split(r"\n\s*\n", (text or "").replace("\r\n", "\n").strip()):
        lines = [line.strip() for line in block.split("\n") if line.strip()]
        if not lines:
            continue
        if all(line.startswith("- ") for line in lines):
            items = "".join(f"<li>{_inline(line[2:].strip())}</li>" for line in lines)
            blocks.append(f"<ul>{items}</ul>")
        else:
            blocks.append(f"<p>{'<br>'.join(_inline(line) for line in lines)}</p>")
    return mark_safe("\n".join(blocks))  # every piece is escaped above
