"""The marks of a review, as names and as the stored bits (``ReviewMarks.marks``). No Django.

A rater ticks which salient semantics the retrieved image clearly misreads (object class,
object colour, object count, action, size, details), or that it is a fair alternative;
the fair alternative misreads nothing, so it stands alone.
"""

from __future__ import annotations

from collections.abc import Iterable

MISREADING_MARKS = ("object_class", "object_color", "object_count", "action", "size", "details")
FAIR_ALTERNATIVE = "fair_alternative"
MARKS = (*MISREADING_MARKS, FAIR_ALTERNATIVE)
MARK_LABELS = {
    "object_class": "Object class",
    "object_color": "Object colour",
    "object_count": "Object count",
    "action": "Action",
    "size": "Size",
    "details": "Details",
    "fair_alternative": "A fair alternative",
}
MARK_BITS = {name: 1 << position for position, name in enumerate(MARKS)}


class MarksError(ValueError):
    """Marks that cannot be stored (the message names the problem)."""


def marks_bits(names: Iterable[str]) -> int:
    """The stored bits of the ticked ``names``; MarksError for an unknown name, a name
    ticked twice, or a fair alternative ticked with a misreading."""
    names = list(names)
    unknown = [name for name in names if name not in MARK_BITS]
    if unknown:
        raise MarksError(f"unknown mark {unknown[0]!r}; the marks are {', '.join(MARKS)}")
    if len(set(names)) != len(names):
        raise MarksError("each mark is ticked at most once")
    if FAIR_ALTERNATIVE in names and len(names) > 1:
        raise MarksError("a fair alternative misreads nothing: tick it alone, or untick it to mark misreadings")
    bits = 0
    for name in names:
        bits |= MARK_BITS[name]
    return bits


def marks_names(bits: int) -> list[str]:
    """The names of the marks set in ``bits``, in MARKS order."""
    return [name for name in MARKS if bits & MARK_BITS[name]]
