"""The id of the request a thread is serving, for the logs: ``web.operations`` sets it as
each request comes in (and sends it back in the answer's X-Request-ID), and
``RequestIdFilter`` writes it into every log record, so a rater's or a proxy's report of
one answer finds its log lines. Outside a request (start-up, Celery) it is ``-``."""

import logging
from contextvars import ContextVar

current_request_id: ContextVar[str] = ContextVar("current_request_id", default="-")


class RequestIdFilter(logging.Filter):
    """Adds ``request_id`` to each record (the JSON log's field; the plain one ignores it)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = current_request_id.get()
        return True
