"""What an operator watches, at the edge of the application (outside Django's middleware
and the rating cycle's direct way, so that both are seen alike):

- every request gets an id: the caller's ``X-Request-ID`` when it is a plain token (a
  proxy's), else a new one; the answer carries it back and every log line written while
  serving it holds it (``config.request_id``);
- with METRICS_ENABLED, every request is counted by view (URL name) and status, and the
  rating cycle's claim and submit timed (``config.metrics``); ``/metrics`` answers the
  scrape (``web.metrics``);
- ``/healthz``: the process answers (200, nothing else is asked); ``/readyz``: the
  database and, unless tasks run in-process, the broker answer (200, else 503). Neither
  asks for a login nor touches a table.

The view's name comes in the environ (``config.metrics.VIEW_KEY``): from the rating
cycle's direct way (``web.rating_wsgi``) for the requests it routes, from
``config.middleware.ViewNameMiddleware`` once Django has resolved the URL; a request that
reached no view is ``unmatched``. The cost per request is a counter increment and, for claims
and submits, a histogram observation (docs/operator-guide.md, "Metrics, health and logs").

Imports: ``config`` (settings, metrics, the request id), ``web.metrics``, Django.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
import re
import time

from django.conf import settings
from django.db import Error as DatabaseError
from django.db import connection

from config.metrics import RATING_LATENCY, REQUESTS, VIEW_KEY
from config.request_id import current_request_id

logger = logging.getLogger("web.operations")

TIMED_VIEWS = ("rate-claim", "rate-submit")
_GIVEN_ID = re.compile(r"[A-Za-z0-9._-]{8,64}")
_PLAIN = [("Content-Type", "application/json"), ("Cache-Control", "no-store")]


class RequestIds:
    """New request ids: a random prefix per process and a running number, unique across
    the workers without a system call per request (os.urandom took 0.5 us)."""

    def __init__(self):
        self.prefix = os.urandom(6).hex()
        self.numbers = itertools.count(1)

    def __call__(self, environ) -> str:
        given = environ.get("HTTP_X_REQUEST_ID")
        if given and _GIVEN_ID.fullmatch(given):
            return given
        return f"{self.prefix}-{next(self.numbers):x}"


class OperationsApplication:
    """WSGI: ``application`` with request ids, the health answers and (when on) the metrics."""

    def __init__(self, application):
        self.application = application
        self.counting = settings.METRICS_ENABLED
        self.request_id = RequestIds()
        self._own = {"/healthz": self._healthz, "/readyz": self._readyz}
        if self.counting:
            from web.metrics import MetricsEndpoint

            self._own["/metrics"] = MetricsEndpoint()
        self._counters: dict[tuple[str, str], object] = {}  # (view, status) -> bound counter
        self._timers = {view: RATING_LATENCY.labels(view=view) for view in TIMED_VIEWS}

    def __call__(self, environ, start_response):
        own = self._own.get(environ.get("PATH_INFO", ""))
        if own is not None:
            return own(environ, start_response)
        rid = self.request_id(environ)
        current_request_id.set(rid)
        seen = []

        def answer(status, headers, exc_info=None):
            seen.append(status)
            headers.append(("X-Request-ID", rid))
            return start_response(status, headers, exc_info)

        if not self.counting:
            return self.application(environ, answer)
        started = time.perf_counter()
        try:
            return self.application(environ, answer)
        finally:
            self._count(environ, seen[-1][:3] if seen else "500", time.perf_counter() - started)

    def _count(self, environ, status: str, seconds: float) -> None:
        view = environ.get(VIEW_KEY, "unmatched")
        counter = self._counters.get((view, status))
        if counter is None:
            counter = self._counters[(view, status)] = REQUESTS.labels(view=view, status=status)
        counter.inc()
        timer = self._timers.get(view)
        if timer is not None:
            timer.observe(seconds)

    def _healthz(self, environ, start_response):
        start_response("200 OK", list(_PLAIN))
        return [b'{"status": "alive"}\n']

    def _readyz(self, environ, start_response):
        checks = {"database": _database_check(), "broker": _broker_check()}
        ready = all(result in ("ok", "in-process") for result in checks.values())
        start_response("200 OK" if ready else "503 Service Unavailable", list(_PLAIN))
        return [json.dumps({"ready": ready, **checks}).encode() + b"\n"]


def _database_check() -> str:
    """``ok`` when ``SELECT 1`` answers; a connection the database ended (a restart) is
    dropped and tried once more anew."""
    for _ in range(2):
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
            return "ok"
        except DatabaseError as problem:
            reason = str(problem).strip().splitlines()[0] if str(problem).strip() else type(problem).__name__
            with contextlib.suppress(DatabaseError):
                connection.close()
    logger.warning("readyz: the database does not answer: %s", reason)
    return "unavailable"


def _broker_check() -> str:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return "in-process"
    from config.celery import app

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=3)
    except Exception as problem:  # kombu raises the transport's own errors
        logger.warning("readyz: the broker does not answer: %s", problem)
        return "unavailable"
    return "ok"
