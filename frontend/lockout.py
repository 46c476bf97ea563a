"""The answer to a locked-out login (django-axes' AXES_LOCKOUT_CALLABLE): a page in the
project's style for /login/ and the admin's login, saying when to try again."""

from django.shortcuts import render

from annotation.people.lockout import lockout_remaining, whole_minutes


def lockout_response(request, original_response, credentials):
    """Called by axes' middleware for a request it flagged as locked out. API requests
    keep the view's own answer: POST /api/auth/token/ already answers 429 with a JSON
    ``locked_out`` error (annotation.people.accounts.AccountLocked); repeating that here would
    be a second place deciding its shape."""
    if request.path.startswith("/api/"):
        return original_response
    username = (credentials or {}).get("username") or request.POST.get("username", "")
    minutes = whole_minutes(lockout_remaining(request, username))
    response = render(request, "frontend/locked_out.html", {"minutes": minutes, "username": username}, status=429)
    response["Retry-After"] = str(minutes * 60)
    return response
