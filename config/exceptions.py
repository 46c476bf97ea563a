"""API errors always carry a readable ``detail``; domain errors become 4xx, never 500.
Unmatched paths and server errors get friendly pages (JSON under /api/), never a traceback."""

from django.core.exceptions import PermissionDenied
from django.http import Http404, JsonResponse
from django.views import defaults
from rest_framework.response import Response
from rest_framework.views import exception_handler

from annotation.errors import DomainError


def api_exception_handler(exc, context):
    if isinstance(exc, DomainError):
        return Response({"detail": str(exc), "code": exc.code}, status=exc.http_status)
    response = exception_handler(exc, context)
    if response is not None and isinstance(response.data, dict):
        if "detail" not in response.data:
            response.data = {"detail": _flatten(response.data), "errors": response.data}
        response.data.setdefault("code", _code(exc))
    return response


def _code(exc) -> str:
    """DRF's own name for the error (not_authenticated, permission_denied, invalid ...);
    Django's Http404 and PermissionDenied, which DRF answers too, named as DRF names them."""
    if isinstance(exc, Http404):
        return "not_found"
    if isinstance(exc, PermissionDenied):
        return "permission_denied"
    return exc.default_code


def _flatten(errors: dict) -> str:
    parts = []
    for field, messages in errors.items():
        if isinstance(messages, (list, tuple)):
            messages = "; ".join(str(m) for m in messages)
        parts.append(f"{field}: {messages}")
    return " | ".join(parts)


# --- handler404 / handler500 (config/urls.py) ----------------------------------------------


def _is_api(request) -> bool:
    # Image files are served under /media/images/ through the API (the schema lists them).
    return request.path.startswith(("/api/", "/media/images/"))


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
