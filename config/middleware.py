"""Refuse URLs no endpoint can answer before any view or query sees them; Django's
messages, made on first use; the view's name left for the request counts."""

from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.messages.storage import default_storage
from django.utils.functional import SimpleLazyObject, empty

from annotation.core.inputs import url_control_problem
from config.exceptions import error_response
from config.metrics import VIEW_KEY


class RefuseControlCharactersMiddleware:
    """A control character (NUL, newline, escape ...) in the decoded path or in a query
    parameter is a 400 naming where it is. No name, id or parameter of this application
    has one, and PostgreSQL cannot even compare text holding a NUL: without this, such a
    URL reached the database and answered 500."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        problem = _problem(request)
        if problem is not None:
            return error_response(request, status=400, detail=problem, code="control_character", template="400.html")
        return self.get_response(request)


def _problem(request) -> str | None:
    problem = url_control_problem(request.path)
    if problem:
        return f"the URL path {problem}; no name or id has one"
    for name, values in request.GET.lists():
        problem = url_control_problem(name)
        if problem:
            return f"a query parameter name ({name!r}) {problem}"
        for value in values:
            problem = url_control_problem(value)
            if problem:
                return f"query parameter {name!r} {problem}; no value has one"
    return None


class LazyMessageMiddleware(MessageMiddleware):
    """Django's MessageMiddleware with the message storage made when a view or a template
    first uses it: the admin's pages do, the API's requests (nearly all requests, the
    rating cycle) never do, and making the storage (reading its cookie, its session
    key) was a fortieth of the CPU of each."""

    def process_request(self, request):
        request._messages = SimpleLazyObject(lambda: default_storage(request))

    def process_response(self, request, response):
        messages = getattr(request, "_messages", None)
        if isinstance(messages, SimpleLazyObject) and messages._wrapped is empty:
            return response  # never used: nothing to store
        return super().process_response(request, response)


class ViewNameMiddleware:
    """Leaves the resolved view's name (``admin:index``, ``rate-heartbeat`` ...) in the WSGI
    environ, where ``web.operations`` labels the request's count with it once answered.
    Django resolves the URL anyway; resolving it again at the edge took 42 us for a path
    not seen before (every image's, every slot's). A request refused before its view is
    found (no URL matched, a control character) is counted as ``unmatched``."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        request.environ[VIEW_KEY] = request.resolver_match.view_name
