"""API errors always carry a readable ``detail`` and a ``code``; domain errors become 4xx,
never 500. What Django itself refuses (a malformed or too large request, a failed CSRF
check, a permission error outside DRF) answers JSON under /api/ and the project's
friendly pages elsewhere, never a traceback or Django's bare HTML."""

from django.conf import settings
from django.core.exceptions import (
    BadRequest,
    PermissionDenied,
    RequestDataTooBig,
    SuspiciousOperation,
    TooManyFieldsSent,
    TooManyFilesSent,
)
from django.http import JsonResponse
from django.shortcuts import render
from django.views import defaults
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.response import Response
from rest_framework.views import exception_handler

from annotation.core.errors import DomainError


def api_exception_handler(exc, context):
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
    traceback goes to the log). JSON for API paths, the project's 500.html for pages."""
    if _is_api(request):
        detail = "Internal server error; the details are in the server's log."
        return JsonResponse({"detail": detail, "code": "server_error"}, status=500)
    return defaults.server_error(request)
