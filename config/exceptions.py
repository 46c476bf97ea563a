"""API errors always carry a readable ``detail`` and a ``code``; domain errors become 4xx,
never 500. What Django itself refuses (a malformed or too large request, a failed CSRF
check, a permission error outside DRF) answers JSON under /api/ and the project's
friendly pages elsewhere, never a traceback or Django's bare HTML. A database that does
not answer (stopped, restarting, unreachable) is a 503 with ``Retry-After``, not a 500."""

import logging
import sys

import psycopg2
from django.conf import settings
from django.core.exceptions import (
    BadRequest,
    PermissionDenied,
    RequestDataTooBig,
    SuspiciousOperation,
    TooManyFieldsSent,
    TooManyFilesSent,
)
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.template import loader
from django.views import defaults
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.response import Response
from rest_framework.views import exception_handler

from annotation.core.errors import DomainError
from config.metrics import DATABASE_UNAVAILABLE

logger = logging.getLogger("config.outage")

# SQLSTATEs of a server going away or not there yet, when they reach the client as a
# statement's error: admin_shutdown (a fast or immediate stop, pg_terminate_backend),
# crash_shutdown (another backend crashed), cannot_connect_now (starting up, shutting
# down, in recovery), too_many_connections; and class 08, the connection exceptions.
UNAVAILABLE_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "53300"})


def database_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` (Django's wrapper or the driver's own error, or one raised from
    either) says PostgreSQL cannot be reached, rather than that a statement failed.

    libpq's own failures carry no SQLSTATE: a refused or timed-out connection, "server
    closed the connection unexpectedly" (a stop or a crash under a running statement or
    a kept connection), and a refusal at connect time ("the database system is starting
    up", "too many clients"). A closed connection is psycopg2's InterfaceError. A
    statement the server refused (a syntax error, a constraint, a deadlock, a
    cancelled statement) has its SQLSTATE and stays a server error; so do SQLite's."""
    seen = 0
    while exc is not None and seen < 5:  # Django raises its wrapper "from" the driver's error
        if isinstance(exc, psycopg2.InterfaceError):
            return True
        if isinstance(exc, psycopg2.OperationalError):
            code = exc.pgcode
            return code is None or code.startswith("08") or code in UNAVAILABLE_SQLSTATES
        exc, seen = exc.__cause__, seen + 1
    return False


UNAVAILABLE_DETAIL = (
    "The database is unavailable (restarting or unreachable). Send the request again after "
    "Retry-After seconds; a rating sent again with its idempotency key is stored once."
)


def _unavailable_headers() -> dict[str, str]:
    return {"Retry-After": str(settings.DATABASE_RETRY_AFTER_SECONDS), "Cache-Control": "no-store"}


def _logged_unavailable(request, exc: BaseException, response):
    """``response``, logged in one line with the driver's reason and marked as logged, so
    that Django's log of every 5xx answer (through handler500, with the traceback) does
    not repeat it: an outage answers every request with this."""
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    DATABASE_UNAVAILABLE.labels(answer="api" if _is_api(request) else "page").inc()
    logger.error("Database unavailable, answered 503 to %s %s: %s", request.method, request.path, reason)
    response._has_been_logged = True  # read by django.utils.log.log_response
    return response


def api_exception_handler(exc, context):
    if database_unavailable(exc):
        detail = {"detail": UNAVAILABLE_DETAIL, "code": "database_unavailable"}
        return _logged_unavailable(
            context["request"], exc, Response(detail, status=503, headers=_unavailable_headers())
        )
    if isinstance(exc, DomainError):
        return Response({"detail": str(exc), "code": exc.code}, status=exc.http_status, headers=exc.headers)
    if isinstance(exc, (SuspiciousOperation, BadRequest)):
        # Raised while DRF reads the body (too large, too many fields); Django's own
        # handler would answer an HTML page, or a debug page with DEBUG on.
        status, detail, code = refused_request(exc)
        return Response({"detail": detail, "code": code}, status=status)
    response = exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(response.data, dict) and "detail" not in response.data:
        response.data = {"detail": _flatten(response.data), "code": "invalid", "errors": response.data}
    elif isinstance(response.data, list):
        response.data = {"detail": "; ".join(str(m) for m in response.data), "code": "invalid"}
    elif isinstance(response.data, dict) and "code" not in response.data:
        response.data["code"] = _code_of(exc)
    return response


def _code_of(exc) -> str:
    if isinstance(exc, ValidationError):
        return "invalid"
    if isinstance(exc, APIException):
        codes = exc.get_codes()
        return codes if isinstance(codes, str) else exc.default_code
    if isinstance(exc, PermissionDenied):
        return "permission_denied"
    return "not_found"  # DRF answers Http404, the only other Django error it handles


def _flatten(errors: dict) -> str:
    parts = []
    for field, messages in errors.items():
        if isinstance(messages, (list, tuple)):
            messages = "; ".join(str(m) for m in messages)
        parts.append(f"{field}: {messages}")
    return " | ".join(parts)


def refused_request(exc: Exception) -> tuple[int, str, str]:
    """(status, detail, code) for a request Django refuses as malformed, naming the limit
    it broke. The message of any other SuspiciousOperation stays in the log."""
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        detail = (
            f"the request body is larger than DATA_UPLOAD_MAX_MEMORY_SIZE={limit:,} bytes; "
            "send files as multipart uploads"
        )
        return 413, detail, "request_too_large"
    if isinstance(exc, TooManyFieldsSent):
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
        return 400, f"the request has more than DATA_UPLOAD_MAX_NUMBER_FIELDS={limit:,} fields", "too_many_fields"
    if isinstance(exc, TooManyFilesSent):
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FILES
        return 400, f"the request has more than DATA_UPLOAD_MAX_NUMBER_FILES={limit:,} files", "too_many_files"
    if isinstance(exc, BadRequest) and str(exc):
        return 400, str(exc), "bad_request"
    return 400, "the request is malformed and was refused", "bad_request"


# --- handler400/403/404/500 (config/urls.py) and CSRF_FAILURE_VIEW -------------------


def _is_api(request) -> bool:
    # Image files are served under /media/images/ through the API (the schema lists them).
    return request.path.startswith(("/api/", "/media/images/"))


def error_response(request, *, status: int, detail: str, code: str, template: str):
    """JSON in the API's error shape under /api/; elsewhere the project's page
    ``template``, which shows ``detail``."""
    if _is_api(request):
        return JsonResponse({"detail": detail, "code": code}, status=status)
    return render(request, template, {"detail": detail}, status=status)


def bad_request(request, exception):
    status, detail, code = refused_request(exception)
    return error_response(request, status=status, detail=detail, code=code, template="400.html")


def permission_denied(request, exception):
    if _is_api(request):
        detail = str(exception) or "You do not have permission to perform this action."
        return JsonResponse({"detail": detail, "code": "permission_denied"}, status=403)
    return defaults.permission_denied(request, exception)


def csrf_failure(request, reason=""):
    """A form or API call without a valid CSRF token (an expired page, another site)."""
    if _is_api(request):
        detail = f"CSRF check failed: {reason}. Send the csrftoken cookie's value in the X-CSRFToken header."
        return JsonResponse({"detail": detail, "code": "csrf_failed"}, status=403)
    detail = "This form has expired or came from another site. Reload the page and send it again."
    return render(request, "403.html", {"detail": detail}, status=403)


def page_not_found(request, exception):
    """API paths answer JSON like every other API error; pages get the project's 404.html."""
    if _is_api(request):
        return JsonResponse({"detail": f"no API endpoint at {request.path}", "code": "not_found"}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request):
    """With DEBUG off: no traceback and no exception text, only that it failed (the
    traceback goes to the log). JSON for API paths, the project's 500.html for pages.
    An unreachable database is a 503 instead (``database_unavailable_response``)."""
    exc = sys.exc_info()[1]  # Django calls handler500 while handling the exception
    if exc is not None and database_unavailable(exc):
        return database_unavailable_response(request, exc)
    if _is_api(request):
        detail = "Internal server error; the details are in the server's log."
        return JsonResponse({"detail": detail, "code": "server_error"}, status=500)
    return defaults.server_error(request)


def database_unavailable_response(request, exc: BaseException):
    """503 with Retry-After: JSON in the API's shape under /api/, else the 503 page,
    rendered without the request (its context processors would ask the database for the
    user)."""
    if _is_api(request):
        response = JsonResponse({"detail": UNAVAILABLE_DETAIL, "code": "database_unavailable"}, status=503)
    else:
        context = {"retry_after": settings.DATABASE_RETRY_AFTER_SECONDS}
        response = HttpResponse(loader.render_to_string("503.html", context), status=503)
    for name, value in _unavailable_headers().items():
        response[name] = value
    return _logged_unavailable(request, exc, response)
