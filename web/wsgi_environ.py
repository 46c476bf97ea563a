"""The WSGI environ without the server process's environment variables.

Granian, and Django's runserver through wsgiref, copy the process environment into every
request's WSGI environ (gunicorn does not), so each request's ``request.META`` held
``DATABASE_URL`` with its password, ``SECRET_KEY`` and every other setting: Django's
error reports (the debug page; the 500 mail to ADMINS) print ``META``, masking only
names like KEY or PASS, and a variable named like a request header
(``HTTP_X_FORWARDED_PROTO``, ``HTTP_PROXY``) read as one the client sent on every
request that sent none."""

from __future__ import annotations

from collections.abc import Mapping

# What granian sets for every request (PEP 3333's CGI variables): kept even when the
# process environment happens to hold the same name and value. CONTENT_TYPE and
# CONTENT_LENGTH are not here: granian sets them only for a request that sends them, so
# without one a process variable of that name would pass as the request's.
REQUEST_VARIABLES = frozenset(
    {
        "REQUEST_METHOD",
        "SCRIPT_NAME",
        "PATH_INFO",
        "QUERY_STRING",
        "SERVER_NAME",
        "SERVER_PORT",
        "SERVER_PROTOCOL",
        "SERVER_SOFTWARE",
        "GATEWAY_INTERFACE",
        "REMOTE_ADDR",
    }
)


class WithoutProcessEnvironment:
    """WSGI: ``application`` called with an environ from which every variable of
    ``process_environ`` (the server process's environment, taken when this is made) is
    removed where it holds that variable's value, except the request variables above. A
    request header whose value equals a variable of the same name is removed with it."""

    def __init__(self, application, process_environ: Mapping[str, str]):
        self.application = application
        self.inherited = tuple((k, v) for k, v in process_environ.items() if k not in REQUEST_VARIABLES)

    def __call__(self, environ, start_response):
        for key, value in self.inherited:
            if environ.get(key) == value:
                del environ[key]
        return self.application(environ, start_response)
