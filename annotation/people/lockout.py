"""Login lockouts (django-axes): how long one still lasts, for the API's Retry-After and
the lockout page. Attempts live in axes' AccessAttempt table; admins lift a lockout
there or with ``manage.py axes_reset_username`` (docs/admin-guide.md,
"Accounts and security")."""

from __future__ import annotations

import math
from datetime import timedelta

from axes.handlers.proxy import AxesProxyHandler
from axes.helpers import get_cool_off, get_credentials
from django.db.models import Max
from django.utils import timezone


def is_locked_out(request) -> bool:
    """Whether axes refused (or just locked out) the login attempt made with ``request``,
    the Django request that was passed to ``authenticate()``."""
    return bool(getattr(request, "axes_locked_out", False))


def lockout_remaining(request, username: str | None) -> timedelta:
    """How long the lockout of ``username`` from this request's address still lasts.
    ``request`` must have been through ``authenticate()`` (axes annotated it)."""
    cool_off = get_cool_off(request)
    attempts = AxesProxyHandler.get_implementation().get_user_attempts(request, get_credentials(username))
    latest = max(
        (found for found in (q.aggregate(latest=Max("attempt_time"))["latest"] for q in attempts) if found),
        default=None,
    )
    if latest is None:
        # An admin reset the attempts between the refusal and now: the full cool-off
        # is still a true upper bound, and the next attempt will go through anyway.
        return cool_off
    return max(latest + cool_off - timezone.now(), timedelta(0))


def whole_minutes(delta: timedelta) -> int:
    """``delta`` rounded up to whole minutes, at least 1 ("try again in 1 minute")."""
    return max(1, math.ceil(delta.total_seconds() / 60))
