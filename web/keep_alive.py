"""Keep-alive clients spread again over the web server's processes.

A keep-alive connection stays with the worker process that accepted it, so raters who
connected in one burst stay spread as that burst fell: under load one process serves
many of them and the rest wait on it while another idles (bench-queue at 32 raters,
granian without this: the most served rater got 1.6-3.2 times the rated items of the
least served; gunicorn without its own limit, 4-13 times). ``SpreadKeepAlive`` adds
``Connection: close`` to one answer in ``every`` of its process; the server closes that
connection after the answer and its client connects again, to whichever process accepts
it this time: no binding lasts, and a process that drew many clients loses the busiest
first. Counted per process rather than per connection (WSGI does not name the
connection): a connection is closed after ``every`` requests on average. With it,
granian read 1.49-1.62 at 32 raters in the runs taking turns with gunicorn and 2.15 /
2.55 (split / page flow) in the full run after them; gunicorn with its own limit read
1.99 / 3.34 in the last sitting's full run.

``Connection`` is a hop-by-hop header, which PEP 3333 leaves to the server: granian and
gunicorn honour it from the application, wsgiref (Django's runserver) refuses it, so only
the served entry (``web.served_wsgi``) wraps the application with this. Pure WSGI.
"""

from __future__ import annotations

import itertools


class SpreadKeepAlive:
    """WSGI: ``application`` with ``Connection: close`` on every ``every``-th answer of
    this process (``every`` 0: none). An answer that already names its connection is left
    as it is."""

    def __init__(self, application, every: int):
        if every < 0:
            raise ValueError(f"every must be 0 (never) or more, got {every}")
        self.application = application
        self.every = every
        self._answers = itertools.count(1)  # next() is atomic under the GIL: threads share it

    def __call__(self, environ, start_response):
        if not self.every:
            return self.application(environ, start_response)

        def start(status, headers, exc_info=None):
            if next(self._answers) % self.every == 0 and not any(name.lower() == "connection" for name, _ in headers):
                headers = [*headers, ("Connection", "close")]
            if exc_info is None:  # as applications call it: a server's may take two arguments only
                return start_response(status, headers)
            return start_response(status, headers, exc_info)

        return self.application(environ, start)
