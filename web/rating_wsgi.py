"""The rating cycle's token requests answered ahead of Django's middleware chain.

A rater's claim and submit are nearly every request the server sees, and each walked the
whole chain (static files, sessions, messages, authentication, lockouts, the URL
resolver and a handler around every middleware) before the view, which then did the
work itself: a token POST with a plain JSON body (``annotation.apis.fast_path``'s fast
path) never reads a session or a cookie. ``RatingCycleApplication`` wraps Django's WSGI
application; a POST to one of the two URLs with ``Authorization: Token``, no query
string and no cookie goes to the fast path directly, through the steps of the chain
that can change such a request's answer, in the chain's order:

- before: ``SecurityMiddleware`` (the HTTPS redirect), ``CommonMiddleware`` (allowed
  hosts, refused user agents);
- after: ``XFrameOptionsMiddleware``, ``CommonMiddleware`` (Content-Length) and
  ``SecurityMiddleware`` (its headers), each only on the answers that pass it in the
  chain (a refused host's 400 is made inside ``CommonMiddleware``, so it gets no
  X-Frame-Options);
- around: Django's request signals (``close_old_connections`` on both sides, which
  drops a connection the database ended), its answer to an exception (through
  ``handler500``: a 500, or a 503 with Retry-After while the database does not answer;
  logged) and its log of every answer from 400 on.

Every other request, and one the fast path declines (a refused token, another body),
goes to Django whole, with the body it sent (a declined one sends ``request_started``
twice: it only closes connections past their age and resets the query log). The chain's
other steps cannot change these answers: the URL has no control character or query
(``RefuseControlCharactersMiddleware``), it is no static file (WhiteNoise), it carries
no cookie (a session's or a malformed CSRF cookie is answered with a new one), nothing
reads the session, the messages or the session's user, the view's name for the request
counts (``ViewNameMiddleware``) is left by the direct way itself, the views are CSRF-exempt and
never ask for a CSRF token, and a token refusal is no login failure (django-axes). So
that a middleware added later is not skipped unseen, the wrapper refuses to start unless
``MIDDLEWARE`` is the list it was written for (``REVIEWED_MIDDLEWARE``, a copy of
settings' on purpose). tests/annotation/apis/test_rating_wsgi.py holds both ways to the same
status, headers and body.
"""

from __future__ import annotations

import io

from django.conf import settings
from django.core import signals
from django.core.exceptions import ImproperlyConfigured
from django.core.handlers.exception import response_for_exception
from django.core.handlers.wsgi import WSGIHandler, WSGIRequest, get_script_name
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.middleware.security import SecurityMiddleware
from django.urls import get_resolver, set_script_prefix
from django.utils.log import log_response

from config.metrics import VIEW_KEY

# The chain this module was written against: another list needs a look at what the
# skipped steps would do to the rating cycle's answers (see the module's docstring).
REVIEWED_MIDDLEWARE = (
    "django.middleware.security.SecurityMiddleware",
    "config.middleware.ViewNameMiddleware",
    "config.middleware.RefuseControlCharactersMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "config.middleware.LazyMessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",
)
# The URL names of the views with a token fast path (annotation.urls).
FAST_URL_NAMES = ("rate-claim", "rate-submit")


def _unused(request):  # the middleware instances below only lend their hooks
    raise AssertionError("not called")


class RatingCycleApplication:
    """WSGI: ``django_application`` with the rating cycle's token POSTs answered directly."""

    def __init__(self, django_application):
        if tuple(settings.MIDDLEWARE) != REVIEWED_MIDDLEWARE:
            raise ImproperlyConfigured(
                "MIDDLEWARE differs from the list web/rating_wsgi.py was reviewed against; "
                "check what the rating cycle's direct way skips, then update REVIEWED_MIDDLEWARE"
            )
        self.django = django_application
        self._security = SecurityMiddleware(_unused)
        self._common = CommonMiddleware(_unused)
        self._xframe = XFrameOptionsMiddleware(_unused)
        self._routes = _fast_routes()  # (prefix, [(pattern, fast view)]): a broken URLconf stops the start

    def __call__(self, environ, start_response):
        route = self._route(environ) if environ["REQUEST_METHOD"] == "POST" else None
        if route is None:
            return self.django(environ, start_response)
        fast_view, url_kwargs = route
        set_script_prefix(get_script_name(environ))
        signals.request_started.send(sender=WSGIHandler, environ=environ)
        request = WSGIRequest(environ)
        response = self._respond(request, fast_view, url_kwargs)
        if response is None:  # declined: Django answers it whole, from the body as sent
            if hasattr(request, "_body"):
                environ["wsgi.input"] = io.BytesIO(request._body)
            return self.django(environ, start_response)
        response._resource_closers.append(request.close)
        response._handler_class = WSGIHandler  # close() sends request_finished as Django's would
        if response.status_code >= 400:
            log_response("%s: %s", response.reason_phrase, request.path, response=response, request=request)
        headers = [*response.items(), *(("Set-Cookie", c.output(header="")) for c in response.cookies.values())]
        start_response(f"{response.status_code} {response.reason_phrase}", headers)
        return response

    def _route(self, environ):
        """(fast view, URL kwargs) for a token POST to a fast URL without a query, else None."""
        if environ.get("QUERY_STRING") or environ.get("HTTP_COOKIE"):
            return None  # a query for the control character check; cookies for CSRF's and the session's
        if not environ.get("HTTP_AUTHORIZATION", "").startswith("Token "):
            return None
        prefix, patterns = self._routes
        path = environ.get("PATH_INFO", "")
        if not path.startswith(prefix):
            return None
        rest = path[len(prefix) :]
        for pattern, fast_view, name in patterns:
            matched = pattern.match(rest)  # the URL's converters, as the resolver applies them
            if matched is not None and not matched[0]:
                environ[VIEW_KEY] = name  # the metrics' view label, without resolving again
                return fast_view, matched[2]
        return None

    def _respond(self, request, fast_view, url_kwargs):
        """The answer through the chain's steps that apply, each where the chain has it
        (an answer made by a step passes only the steps outside it), or None when the
        fast path declines the request."""
        try:
            response = self._security.process_request(request)  # the HTTPS redirect (reads the host)
        except Exception as exc:  # a refused host: the chain's 400, without the security headers
            return response_for_exception(request, exc)
        if response is None:
            response = self._below_security(request, fast_view, url_kwargs)
            if response is None:
                return None
        return self._security.process_response(request, response)

    def _below_security(self, request, fast_view, url_kwargs):
        try:
            response = self._common.process_request(request)  # a refused host raises
            if response is None:
                response = self._view(request, fast_view, url_kwargs)
                if response is None:
                    return None
            return self._common.process_response(request, response)
        except Exception as exc:  # as the chain answers it: 400, 403, 404 or 500
            return response_for_exception(request, exc)

    def _view(self, request, fast_view, url_kwargs):
        try:
            response = fast_view(request, **url_kwargs)
        except Exception as exc:
            response = response_for_exception(request, exc)
        if response is None:
            return None
        return self._xframe.process_response(request, response)


def _fast_routes():
    """The URL prefix of the fast URLs (their include's) and, per URL, its pattern below
    the prefix, its view's fast path (``token_fast_path``'s ``fast``) and its name."""
    found = [_named_pattern(name) for name in FAST_URL_NAMES]
    prefixes = {prefix for prefix, _ in found}
    if len(prefixes) != 1:
        raise ImproperlyConfigured(f"the rating cycle's URLs no longer share one prefix: {sorted(prefixes)}")
    return prefixes.pop(), [
        (pattern.pattern, pattern.callback.fast, name) for name, (_, pattern) in zip(FAST_URL_NAMES, found, strict=True)
    ]


def _named_pattern(name: str):
    """("/" + the include's route, the URL pattern) of the pattern named ``name``, one
    include deep (annotation.urls under "api/")."""
    for entry in get_resolver().url_patterns:
        for pattern in getattr(entry, "url_patterns", ()):
            if getattr(pattern, "name", None) == name:
                return "/" + str(entry.pattern), pattern
    raise ImproperlyConfigured(f"no URL named {name!r} one include deep")
