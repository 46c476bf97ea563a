"""Two WSGI applications answering with their environ's keys and the values of the
``CXC_PROBE_*`` ones, one line each: ``raw`` as the server calls it, ``kept`` through
``web.wsgi_environ`` (tests/test_wsgi_environ.py serves both with granian)."""

import os

from web.wsgi_environ import WithoutProcessEnvironment


def raw(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    lines = [
        f"{key}={value}" if key.startswith(("CXC_PROBE", "HTTP_CXC_PROBE")) else key for key, value in environ.items()
    ]
    return ["\n".join(sorted(lines)).encode()]


kept = WithoutProcessEnvironment(raw, os.environ)
