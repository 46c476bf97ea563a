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

import functools
import json

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpResponse
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.renderers import JSONRenderer

from annotation.core.cxc import KINDS, SCORE_MAX, SCORE_MIN
from annotation.people.authentication import RoleTokenAuthentication
from annotation.serving import MAX_ADJUSTMENTS, MAX_IDEMPOTENCY_KEY, MAX_TIME_ON_ITEM_MS
from config.exceptions import api_exception_handler

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

    def perform_content_negotiation(self, request, force=False):
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
            del self["Content-Type"]  # as a DRF Response without content
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


def _strict_constant(name):
    raise ValueError(f"{name} is not valid JSON")  # as DRF's JSONParser: no NaN, no Infinity


def _json_body(request):
    """The body's JSON value when it is plain JSON in UTF-8 within Django's body limit,
    else None (DRF reads it and answers as it always did: a BOM or another encoding is
    its 400, as is a body past the limit)."""
    if request.content_type != "application/json" or request.content_params.get("charset", "utf-8").lower() not in (
        "utf-8",
        "utf8",
    ):
        return None
    try:
        if int(request.META.get("CONTENT_LENGTH") or 0) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
            return None
        return json.loads(request.body.decode("utf-8"), parse_constant=_strict_constant)
    except ValueError:  # not a number, not UTF-8 (UnicodeDecodeError), not JSON, a BOM
        return None


def token_fast_path(drf_view, direct, answer, serializer_class):
    """``drf_view`` (a DRF APIView's ``as_view()``) with a shorter way for the requests a
    rating client sends nearly always: a POST with ``Authorization: Token ...`` and a
    plain JSON body that ``direct`` reads. Those are authenticated by the same
    authentication class, checked by the view's own permission classes and answered by
    ``answer(user, values=..., **url_kwargs)``, whose errors the project's exception
    handler renders as DRF would; every other request (another method or body, a session,
    a refused token or permission) goes to ``drf_view`` untouched, which answers it as
    before. What this skips is DRF's Request wrapper, its parser and negotiation
    machinery and its per-request class instances: a third of the web CPU of a rating
    cycle. tests/annotation/apis/test_rating_fast_path.py holds both ways to the same answers.
    With the "input" shortcut off (RATING_SHORTCUTS_OFF), ``serializer_class`` (the view's
    input serializer) reads the body instead of ``direct``; with "token_view" off, the view
    is ``drf_view`` alone.
    """
    if "token_view" in settings.RATING_SHORTCUTS_OFF:
        return drf_view
    if "input" in settings.RATING_SHORTCUTS_OFF:
        direct = _serializer_reader(serializer_class)
    view_class = drf_view.cls
    if view_class.authentication_classes[0] is not RoleTokenAuthentication:
        raise ImproperlyConfigured(f"{view_class.__name__}: the fast path authenticates tokens first, as DRF does")
    if view_class.throttle_classes:
        raise ImproperlyConfigured(f"{view_class.__name__}: the fast path does not throttle; give it the view's")
    fast = FastPath(view_class, direct, answer)
    view = functools.partial(_fast_or_drf, fast, drf_view)
    functools.update_wrapper(view, drf_view)  # keeps cls, initkwargs and csrf_exempt (schema, CSRF)
    view.fast = fast  # web.rating_wsgi calls it ahead of the middleware chain
    return view


def _fast_or_drf(fast, drf_view, request, **url_kwargs):
    response = fast(request, **url_kwargs)
    return drf_view(request, **url_kwargs) if response is None else response


class FastPath:
    """One view's fast path: called with a request, its answer, or None when the view
    must answer it. (Its own class, not a closure of ``token_fast_path``, which runs once
    at start: mutation testing then credits the tests whose requests call it.)"""

    def __init__(self, view_class, direct, answer):
        self.direct = direct
        self.answer = answer
        self.permissions = [permission() for permission in view_class.permission_classes]
        self.allow = ", ".join(method.upper() for method in view_class.http_method_names if hasattr(view_class, method))
        self.authentication = RoleTokenAuthentication()

    def __call__(self, request, **url_kwargs):
        values = _fast_values(request, self.authentication, self.permissions, self.direct)
        if values is None:
            return None
        try:
            response = self.answer(request.user, values=values, **url_kwargs)
        except Exception as exc:  # what the handler does not answer, _error_answer raises again
            response = _error_answer(exc, request)
        response["Allow"] = self.allow
        return response


def _serializer_reader(serializer_class):
    """A body reader as ``claim_input``'s, by ``serializer_class``: its validated values, or
    None when they are not valid (DRF's view then answers the errors)."""

    def read(data) -> dict | None:
        serializer = serializer_class(data=data)
        return dict(serializer.validated_data) if serializer.is_valid() else None

    return read


def _fast_values(request, authentication, permissions, direct) -> dict | None:
    """The body's values when this request may take the fast path (a token rater's POST
    with a plain body), with ``request.user`` set as DRF sets it; else None."""
    if request.method != "POST" or not request.META.get("HTTP_AUTHORIZATION"):
        return None
    try:
        authenticated = authentication.authenticate(request)
    except AuthenticationFailed:
        return None  # DRF's view refuses it with its 401 and WWW-Authenticate
    if authenticated is None:
        return None
    request.user, request.auth = authenticated
    if not all(permission.has_permission(request, None) for permission in permissions):
        return None
    data = _json_body(request)
    return None if data is None else direct(data)


def _error_answer(exc: Exception, request) -> JsonAnswer:
    handled = api_exception_handler(exc, {"request": request, "view": None})
    if handled is None:
        raise exc
    response = JsonAnswer(handled.data, status=handled.status_code)
    for header, value in handled.items():
        if header.lower() != "content-type":
            response[header] = value
    # The handler logged a database outage's 503 itself, in one line (config/exceptions.py).
    response._has_been_logged = getattr(handled, "_has_been_logged", False)
    return response
