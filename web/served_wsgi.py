"""The served web application (``python -m web.serve``): ``web.wsgi``'s, with
keep-alive connections spread over the worker processes (``web.keep_alive``; every
WEB_KEEPALIVE_REQUESTS-th answer of a process closes its connection), and each request
thread's database connections closed when the thread ends. Django's runserver keeps
``web.wsgi``, whose server refuses the hop-by-hop header this adds."""

import threading

from django.conf import settings
from django.db import connections

from web.keep_alive import SpreadKeepAlive
from web.wsgi import application as django_application


class _ClosedWithTheThread:
    """Held in a thread-local: when the thread ends, its storage is cleared and this
    closes the thread's database connections (each thread has its own Django
    connection objects). The raw connection is closed, not Django's wrapper, whose
    close() refuses any thread but its own."""

    def __init__(self, wrappers: list):
        self.wrappers = wrappers

    def __del__(self):
        for wrapper in self.wrappers:
            if wrapper.connection is not None:
                wrapper.connection.close()


class CloseConnectionsWithThreads:
    """WSGI: ``application`` whose request threads close their database connections when
    they end. Granian stops a request thread idle for a while and starts another when
    requests come back; the old thread's connection stayed open until the garbage
    collector found it (reference cycles), so a server idle now and then piled up
    backends until PostgreSQL refused connections: one process of 4 threads, three bursts
    after idle spells, held 4, 7, then 10 backends, and bench-queue's 1m phase answered
    1,005 requests with 500. Django closes a connection itself only at its age
    (CONN_MAX_AGE), and only when a request comes."""

    def __init__(self, application):
        self.application = application
        self._threads = threading.local()

    def __call__(self, environ, start_response):
        if not hasattr(self._threads, "guard"):
            self._threads.guard = _ClosedWithTheThread(connections.all())
        return self.application(environ, start_response)


application = CloseConnectionsWithThreads(SpreadKeepAlive(django_application, settings.WEB_KEEPALIVE_REQUESTS))
