"""Gunicorn settings for the web process, from the environment.

Run: ``gunicorn config.wsgi -c config/gunicorn.conf.py``. Threaded workers keep client
connections alive and overlap one request's database wait with another's Python work;
a process per core, plus one, keeps the cores busy despite the GIL (measured on 2
cores: 3 x 4 threads beat 2 x 4 and 2 x 8; sync workers lose keep-alive and came
last). Defaults: cores + 1 workers (at most 9) with 4 threads each.
"""

import multiprocessing
import os

bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("GUNICORN_WORKERS", min(9, multiprocessing.cpu_count() + 1)))
worker_class = os.environ.get("GUNICORN_WORKER_CLASS", "gthread")
threads = int(os.environ.get("GUNICORN_THREADS", 4))
keepalive = int(os.environ.get("GUNICORN_KEEPALIVE", 30))
# A keep-alive connection stays with the worker process that accepted it, so raters who
# connected in one burst stay spread as that burst fell: under load one process serves
# many of them and the rest wait on it while another idles (bench-queue at 32 raters:
# the most served rater got 4-13 times the cycles of the least served). Closing each
# connection after this many requests makes its client reconnect, and the new connection
# goes to a process waiting in accept, more likely an idle one. 0: never.
keepalive_requests = int(os.environ.get("GUNICORN_KEEPALIVE_REQUESTS", 20))


def pre_request(worker, req):
    """Close the connection after this response when it has served keepalive_requests."""
    if keepalive_requests and req.req_number % keepalive_requests == 0:
        req.must_close = True


# Clients of the rating API wait on claims; a stuck request is cut well before the lease ends.
timeout = int(os.environ.get("GUNICORN_TIMEOUT", 30))
graceful_timeout = 10
backlog = int(os.environ.get("GUNICORN_BACKLOG", 2048))
accesslog = os.environ.get("GUNICORN_ACCESSLOG") or None
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOGLEVEL", "warning")
# Each worker opens its own database connections after the fork.
preload_app = False
