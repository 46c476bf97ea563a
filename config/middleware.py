"""Refuse URLs no endpoint can answer before any view or query sees them."""

from annotation.inputs import url_control_problem
from config.exceptions import error_response


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
