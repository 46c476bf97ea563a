"""Schemathesis against the Django WSGI app, over the served OpenAPI schema, as one role.

The app is served over HTTP from a thread of this process (wsgiref) rather than called
through schemathesis's in-process WSGI transport: in 4.32.5 that transport fails on the
probes of the ignored_auth check (it passes requests' ``max_redirects`` to werkzeug), and
real HTTP is what clients send anyway.

Used by the CI suite (tests/fuzz/test_api_fuzz.py: few examples, a fixed seed) and by
``make fuzz`` (scripts/fuzz.py: a time budget per role). Both run every phase schemathesis
has (examples, coverage, fuzzing, stateful) and every check it has; a run's figures are a
:class:`RoleReport`.
"""

from __future__ import annotations

import socket
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from wsgiref.simple_server import WSGIRequestHandler, make_server

import requests
import schemathesis
from django.apps import apps
from django.core.wsgi import get_wsgi_application
from django.db import connections
from hypothesis import strategies as st
from schemathesis.engine import events, from_schema

from tests.fuzz.world import ROLE_ACCOUNTS, World

SCHEMA_PATH = "/api/schema/?format=json"
TOKEN_PATH = "/api/auth/token/"


def wsgi_app():
    """The project's WSGI app, closing the serving thread's database connections after
    each request, as a server process's request cycle would: the thread ends without
    closing them, and an open connection keeps the test database from being dropped."""
    django_app = get_wsgi_application()

    def app(environ, start_response):
        try:
            return django_app(environ, start_response)
        finally:
            connections.close_all()

    return app


class _QuietHandler(WSGIRequestHandler):
    def setup(self):
        super().setup()
        # wsgiref writes the headers and the body separately; with Nagle's algorithm on,
        # the body waits for the client's delayed ACK, 40 ms a request.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format, *args):
        pass  # thousands of requests; the checks report what matters


@contextmanager
def serving() -> Iterator[str]:
    """The app on an ephemeral port of 127.0.0.1 for the duration; yields its base URL."""
    server = make_server("127.0.0.1", 0, wsgi_app(), handler_class=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, name="fuzz-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def token_obtain(base_url: str, role: str) -> str:
    """The role's API token, through POST /api/auth/token/ as any client gets it."""
    username, password = ROLE_ACCOUNTS[role]
    _login_lockouts_reset()
    response = requests.post(base_url + TOKEN_PATH, json={"username": username, "password": password}, timeout=30)
    if response.status_code != 200:
        raise RuntimeError(f"{role}: POST {TOKEN_PATH} answered {response.status_code}: {response.text}")
    return response.json()["token"]


def _login_lockouts_reset() -> None:
    """With login throttling (django-axes), the fuzzed wrong passwords lock out 127.0.0.1
    within a few requests, and the run's own logins (a new token after the fuzzer revoked
    one) would be refused with it. So lockouts are cleared just before each of those; the
    fuzzed logins still meet the lockout and its documented answer."""
    if apps.is_installed("axes"):
        from axes.utils import reset

        reset()


@dataclass
class RoleReport:
    role: str
    requests: int = 0
    server_errors: int = 0
    failures: Counter = field(default_factory=Counter)  # check name -> failing responses
    operations: set = field(default_factory=set)  # operations that got at least one response
    operations_total: int = 0
    rounds: int = 0  # make fuzz: engine runs, one seed each
    phases: dict = field(default_factory=dict)  # phase -> outcome (skipped: why)
    statuses: Counter = field(default_factory=Counter)
    errors: list = field(default_factory=list)  # engine errors (e.g. a strategy it could not build)
    examples: dict = field(default_factory=dict)  # (check, operation, status) -> one reproduction

    def summary(self) -> dict:
        return {
            "requests": self.requests,
            "server_errors_5xx": self.server_errors,
            "violations": sum(self.failures.values()),
            "violations_by_check": dict(sorted(self.failures.items())),
            "operations_covered": len(self.operations),
            "operations_total": self.operations_total,
            "engine_errors": len(self.errors),
            "phases": self.phases,
        }


# positive_data_acceptance expects a schema-valid request to be answered 2xx (or 401,
# 403, 404, 409, 429). These operations check more than a schema can say, and answer a
# schema-valid request that fails those checks with a documented 400; for them 400 is
# expected too (status_code_conformance still holds them to their documented answers).
SEMANTIC_400 = {
    ("POST", "/api/auth/token/"): "a username and password that do not match",
    ("POST", "/api/exports/"): "split names the dataset does not have",
    ("POST", "/api/imports/karpathy/"): "the file must be a Karpathy-split JSON",
    ("POST", "/api/imports/embeddings/"): "the files must be a .npy array and its ids",
    ("POST", "/api/imports/objects/"): "the file must be a COCO instances JSON of the dataset's images",
    ("POST", "/api/sampling/batches/"): "method names, budgets and spaces the split must have",
    ("POST", "/api/sampling/batches/upload/"): "the file must be a CxC-shaped CSV pair list",
    ("PUT", "/api/raters/{username}/qualifications/"): "the user must be a rater",
    ("GET", "/api/raters/{username}/qualifications/"): "dataset must name a dataset, in printable text",
    ("PUT", "/api/datasets/{dataset}/quiz/"): "the quiz's error threshold must be above 0",
    ("GET", "/api/rate/{dataset}/progress/"): "tz must be an IANA time zone name",
    ("POST", "/api/rate/{dataset}/claim/"): "progress_tz must be an IANA time zone name",
    ("POST", "/api/rate/{dataset}/slots/{slot_id}/flag/"): "reason other needs a note",
    ("POST", "/api/rate/{dataset}/slots/{slot_id}/submit/"): (
        "the first move cannot come after the time on item; progress_tz must be an IANA time zone name"
    ),
    ("POST", "/api/datasets/{dataset}/gold/"): "the file must be a gold pair list of the dataset's items",
    ("POST", "/api/raters/"): "the file must be a rater list (username,email,kinds) of new user names",
    ("POST", "/api/datasets/{dataset}/pauses/"): "the reason must be text without NUL characters",
    ("POST", "/api/datasets/{dataset}/pauses/{pause_id}/lift/"): "the note must be text without NUL characters",
    ("POST", "/api/datasets/{dataset}/exclusions/"): "the rater must have valid ratings in the window",
    ("POST", "/api/datasets/{dataset}/exclusions/{exclusion_id}/undo/"): "the reason must be text without NUL",
    ("POST", "/api/datasets/{dataset}/campaign-links/"): "codes, id parameter and return URL a platform takes",
    ("POST", "/api/evaluations/"): "models named by the dataset's own embedding spaces, a split it has",
    ("POST", "/api/rate/{dataset}/review/{slot_id}/submit/"): (
        "marks by their names, each once, a fair alternative alone; the first move within the time on item"
    ),
}
# Multipart forms send a list as repeated fields, so one value ("splits=AAA") is a valid
# list of one; the fuzzer's negative check calls it a string where an array is due.
ONE_VALUE_IS_A_LIST = [("POST", "/api/imports/karpathy/")]
POSITIVE_EXPECTED = ["2xx", "3xx", 401, 403, 404, 409, 429]


def fuzz_config(*, max_examples: int, seed: int, deterministic: bool, max_seconds: int | None = None):
    """Every phase and every check, ``max_examples`` per operation and phase; the run stops
    after ``max_seconds`` if given. Shrinking stays on, so a failure reported is a small one."""
    limits = {} if max_seconds is None else {"max-time": max_seconds}
    return schemathesis.Config.from_dict(
        {
            **limits,
            "seed": seed,
            # Nothing carried between runs: a run's outcome depends on its seed alone.
            "cache": {"enabled": False},
            # The app runs in this process: a slow example is the app, not the fuzzer.
            "suppress-health-check": ["too_slow"],
            "workers": 1,
            "request-timeout": 60,
            "continue-on-failure": True,
            "generation": {"max-examples": max_examples, "deterministic": deterministic, "database": "none"},
            "checks": {"enabled": True},
            "phases": {"stateful": {"enabled": True, "max-steps": 6}},
            "operations": [
                {
                    # The operation's label: separate method and path filters would each match alone.
                    "include-name": f"{method} {path}",
                    "checks": {"positive_data_acceptance": {"expected-statuses": [*POSITIVE_EXPECTED, 400]}},
                }
                for method, path in SEMANTIC_400
            ]
            + [
                {
                    "include-name": f"{method} {path}",
                    "checks": {"negative_data_rejection": {"enabled": False}},
                }
                for method, path in ONE_VALUE_IS_A_LIST
            ],
        }
    )


def role_fuzz(*, role: str, world: World, config, base_url: str, report: RoleReport | None = None) -> RoleReport:
    """Fuzz every operation of the schema with the role's token, every phase within the
    configured examples per operation (and max-time, if set); returns the figures, added
    to ``report`` when one is given."""
    token = token_obtain(base_url, role)
    schema = schemathesis.openapi.from_url(
        base_url + SCHEMA_PATH, config=config, headers={"Authorization": f"Token {token}"}
    )
    _register_auth(schema, base_url, role)
    _register_real_values(schema, world)
    if report is None:
        report = RoleReport(role=role, operations_total=len(list(schema.get_all_operations())))
    for event in from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished):
            _tally(report, event.recorder)
        elif isinstance(event, events.PhaseFinished):
            skipped = event.phase.skip_reason
            report.phases[event.phase.name.value] = f"skipped: {skipped.value}" if skipped else event.status.value
        elif isinstance(event, events.NonFatalError):
            report.errors.append(f"{event.label}: {event.info.format()}")
        elif isinstance(event, events.FatalError):
            report.errors.append(f"fatal: {event.exception!r}")
    return report


def _register_auth(schema, base_url: str, role: str) -> None:
    lock = threading.Lock()

    # DELETE /api/auth/token/ revokes the token the run uses; a 401 fetches a new one
    # (through the same POST) and the request is sent again with it.
    @schema.auth(retry_on=[401])
    class RoleToken:
        def get(self, case, ctx):
            with lock:
                return token_obtain(base_url, role)

        def set(self, case, data, ctx):
            case.headers = {**(case.headers or {}), "Authorization": f"Token {data}"}


def _register_real_values(schema, world: World) -> None:
    # Generated ids are nearly always missing objects; half the time take a real one.
    real = {name: st.sampled_from(values) for name, values in world.path_values.items() if values}

    @schema.hook
    def before_generate_path_parameters(context, strategy):
        names = [p.name for p in context.operation.path_parameters]
        if not names or not all(name in real for name in names):
            return strategy
        return st.one_of(strategy, st.fixed_dictionaries({name: real[name] for name in names}))


def _tally(report: RoleReport, recorder) -> None:
    for case_id, interaction in recorder.interactions.items():
        response = interaction.response
        if response is None:
            continue
        report.requests += 1
        report.statuses[response.status_code] += 1
        report.server_errors += response.status_code >= 500
        report.operations.add(recorder.cases[case_id].value.operation.label)
    for case_id, checks in recorder.checks.items():
        for check in checks:
            if check.failure_info is None:
                continue
            report.failures[check.name] += 1
            interaction = recorder.interactions.get(case_id)
            status = interaction.response.status_code if interaction and interaction.response else None
            key = (check.name, recorder.cases[case_id].value.operation.label, status)
            failure = check.failure_info.failure
            report.examples.setdefault(
                key, f"[{check.name}] {failure.title}: {failure.message}\n{check.failure_info.code_sample}"
            )
