"""The rating cycle's requests (claim, submit) without DRF's per-field machinery where it
is not needed: every rater sends one of each per rated item, so what DRF does for any
request (content negotiation, a validation pass over each field, a serializer for the
answer) was a large share of the server's CPU per item.

A body in the plain shape the rating page and API clients send is read directly; any
other body (a missing or extra field, a string for a number, a value out of range,
whitespace or a control character in a text) goes to the DRF serializer, which
validates it and names every problem exactly as before. tests/annotation/
test_rating_cycle_input.py checks that both give the same values wherever the direct
reading accepts a body.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse
from rest_framework.renderers import JSONRenderer

from annotation.core.cxc import KINDS, SCORE_MAX, SCORE_MIN
from annotation.serving import MAX_ADJUSTMENTS, MAX_IDEMPOTENCY_KEY, MAX_TIME_ON_ITEM_MS

PROGRESS_TZ_MAX = 64
# Above this a whole number goes to the serializer, which bounds its digits itself.
_LARGEST_WHOLE = 2**62
_CLAIM_FIELDS = frozenset({"kind", "progress_tz"})
_SUBMIT_REQUIRED = ("score", "time_on_item_ms", "time_to_first_move_ms", "adjustments", "idempotency_key")
_SUBMIT_FIELDS = frozenset({*_SUBMIT_REQUIRED, "claim_next_kind", "progress_tz"})


class JsonOnlyMixin:
    """The rating cycle answers JSON whatever the Accept header says (a browser's page
    asks with fetch; there is no HTML view of a claim), without negotiating it."""

    renderer_classes = [JSONRenderer]

    def perform_content_negotiation(self, request, force=False):  # pragma: no mutate (DRF's signature; unused)
        return (self.renderer_classes[0](), JSONRenderer.media_type)


_RENDERER = JSONRenderer()


class JsonAnswer(HttpResponse):
    """A rating cycle answer rendered once, by DRF's JSON renderer (the same bytes as a DRF
    Response), without the template response a DRF Response is; ``data`` holds the body,
    as a DRF Response's does (API clients in tests read it)."""

    def __init__(self, data: dict | None, *, status: int = 200):
        content = b"" if data is None else _RENDERER.render(data)
        super().__init__(content, status=status, content_type=JSONRenderer.media_type)
        if not content:
            # As a DRF Response without content (header names are case-insensitive).
            del self["Content-Type"]  # pragma: no mutate
        self.data = data


def read_body(direct, serializer_class, data) -> dict:
    """The body's values: ``direct(data)`` when it reads them, else the serializer's
    (which raises ValidationError naming every problem)."""
    values = direct(data) if "input" not in settings.RATING_SHORTCUTS_OFF else None
    if values is None:
        serializer = serializer_class(data=data)
        serializer.is_valid(raise_exception=True)
        values = serializer.validated_data
    return values


def _plain_text(value, max_length: int) -> bool:
    """What a DRF CharField keeps unchanged: a non-empty string without surrounding
    whitespace, NUL or surrogates (ASCII printable only here), at most max_length."""
    return (
        type(value) is str
        and 0 < len(value) <= max_length
        and value.isascii()
        and value.isprintable()
        and value == value.strip()
    )


def _whole(value, low: int, high: int = _LARGEST_WHOLE) -> bool:
    return type(value) is int and low <= value <= high


def claim_input(data) -> dict | None:
    """The claim body's values as the claim serializer gives them ({"kind", and
    "progress_tz" when sent}), or None when the serializer must read it."""
    if type(data) is not dict or not data.keys() <= _CLAIM_FIELDS:
        return None
    kind = data.get("kind")
    if kind is not None and (type(kind) is not str or kind not in KINDS):
        return None
    values = {"kind": kind}
    if "progress_tz" in data:
        if not _plain_text(data["progress_tz"], PROGRESS_TZ_MAX):
            return None
        values["progress_tz"] = data["progress_tz"]
    return values


def submit_input(data) -> dict | None:
    """The submit body's values as the submit serializer gives them, or None when the
    serializer must read it."""
    if type(data) is not dict or not data.keys() <= _SUBMIT_FIELDS or not all(f in data for f in _SUBMIT_REQUIRED):
        return None
    score = data["score"]
    # The range check also refuses NaN and infinities, and compares a whole number of any
    # size exactly (math.isfinite would overflow on one beyond a float's range).
    if type(score) not in (int, float) or not SCORE_MIN <= score <= SCORE_MAX:
        return None
    first_move = data["time_to_first_move_ms"]
    if not (
        _whole(data["time_on_item_ms"], 0, MAX_TIME_ON_ITEM_MS)
        and (first_move is None or _whole(first_move, 0))
        and _whole(data["adjustments"], 0, MAX_ADJUSTMENTS)
        and _plain_text(data["idempotency_key"], MAX_IDEMPOTENCY_KEY)
    ):
        return None
    values = {
        "score": float(score),
        "time_on_item_ms": data["time_on_item_ms"],
        "time_to_first_move_ms": first_move,
        "adjustments": data["adjustments"],
        "idempotency_key": data["idempotency_key"],
    }
    if "claim_next_kind" in data:
        if type(data["claim_next_kind"]) is not str or data["claim_next_kind"] not in KINDS:
            return None
        values["claim_next_kind"] = data["claim_next_kind"]
    if "progress_tz" in data:
        if not _plain_text(data["progress_tz"], PROGRESS_TZ_MAX):
            return None
        values["progress_tz"] = data["progress_tz"]
    return values


# --- the token fast path ----------------------------------------------------------------
