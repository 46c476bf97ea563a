"""API errors always carry a readable ``detail``; domain errors become 4xx, never 500."""

from rest_framework.response import Response
from rest_framework.views import exception_handler

from annotation.errors import DomainError


def api_exception_handler(exc, context):
    if isinstance(exc, DomainError):
        return Response({"detail": str(exc), "code": exc.code}, status=exc.http_status)
    response = exception_handler(exc, context)
    if response is not None and isinstance(response.data, dict) and "detail" not in response.data:
        response.data = {"detail": _flatten(response.data), "errors": response.data}
    return response


def _flatten(errors: dict) -> str:
    parts = []
    for field, messages in errors.items():
        if isinstance(messages, (list, tuple)):
            messages = "; ".join(str(m) for m in messages)
        parts.append(f"{field}: {messages}")
    return " | ".join(parts)
