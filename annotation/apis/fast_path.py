"""The rating cycle's token fast path: a claim or submit POST with ``Authorization: Token``
and a plain JSON body, authenticated, permission-checked and answered without DRF's
request wrapper, parsers and negotiation (see ``token_fast_path``); every other request
goes to the DRF view. ``web.rating_wsgi`` calls a view's ``fast`` ahead of Django's
middleware chain. tests/annotation/apis/test_rating_fast_path.py holds both ways to the
same answers.

Not under mutation testing (pyproject.toml, [tool.mutmut]): ``token_fast_path`` wires the
URL configuration once, at import, before any test runs, so no mutant of it can be
credited to a test; the body reading it uses (``annotation.apis.rating_cycle``) is.
"""

from __future__ import annotations

import functools
import json

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from rest_framework.exceptions import AuthenticationFailed

from annotation.apis.rating_cycle import JsonAnswer
from annotation.people.authentication import RoleTokenAuthentication
from config.exceptions import api_exception_handler


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
    must answer it."""

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
