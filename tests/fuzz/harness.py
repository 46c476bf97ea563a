"""Schemathesis against the Django WSGI app, over the served OpenAPI schema, as one role.

Used by the CI suite (tests/fuzz/test_api_fuzz.py: few examples, a fixed seed) and by
``make fuzz`` (scripts/fuzz.py: a time budget per role). Both run every phase schemathesis
has (examples, coverage, fuzzing, stateful) and every check it has; a run's figures are a
:class:`RoleReport`.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field

import schemathesis
from django.core.wsgi import get_wsgi_application
from django.db import connections
from hypothesis import strategies as st
from schemathesis.engine import events, from_schema
from werkzeug.test import Client

from tests.fuzz.world import ROLE_ACCOUNTS, World

SCHEMA_PATH = "/api/schema/?format=json"
TOKEN_PATH = "/api/auth/token/"


def wsgi_app():
    """The project's WSGI app, closing this thread's database connections after each
    request as a server process's request cycle would: the engine's worker threads end
    without closing theirs, and an open connection keeps the test database from being dropped."""
    django_app = get_wsgi_application()

    def app(environ, start_response):
        try:
            return django_app(environ, start_response)
        finally:
            connections.close_all()

    return app


def token_obtain(app, role: str) -> str:
    """The role's API token, through POST /api/auth/token/ as any client gets it."""
    username, password = ROLE_ACCOUNTS[role]
    response = Client(app).post(TOKEN_PATH, json={"username": username, "password": password})
    if response.status_code != 200:
        body = response.get_data(as_text=True)
        raise RuntimeError(f"{role}: POST {TOKEN_PATH} answered {response.status_code}: {body}")
    return response.get_json()["token"]


@dataclass
class RoleReport:
    role: str
    requests: int = 0
    server_errors: int = 0
    failures: Counter = field(default_factory=Counter)  # check name -> failing responses
    operations: set = field(default_factory=set)  # operations that got at least one response
    operations_total: int = 0
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
        }


def fuzz_config(*, max_examples: int, seed: int, deterministic: bool):
    """Every phase and every check. Shrinking stays on, so a failure reported is a small one."""
    return schemathesis.Config.from_dict(
        {
            "seed": seed,
            # The app runs in this process: a slow example is the app, not the fuzzer.
            "suppress-health-check": ["too_slow"],
            "workers": 1,
            "continue-on-failure": True,
            "generation": {"max-examples": max_examples, "deterministic": deterministic, "database": "none"},
            "checks": {"enabled": True},
            "phases": {"stateful": {"enabled": True, "max-steps": 6}},
        }
    )


def role_fuzz(*, role: str, world: World, config) -> RoleReport:
    """Fuzz every operation of the schema with the role's token; returns the figures."""
    app = wsgi_app()
    token = token_obtain(app, role)
    schema = schemathesis.openapi.from_wsgi(
        SCHEMA_PATH, app, config=config, headers={"Authorization": f"Token {token}"}
    )
    _register_auth(schema, app, role)
    _register_real_values(schema, world)
    report = RoleReport(role=role, operations_total=len(list(schema.get_all_operations())))
    for event in from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished | events.FuzzScenarioFinished):
            _tally(report, event.recorder)
        elif isinstance(event, events.NonFatalError):
            report.errors.append(f"{event.label}: {event.info.format()}")
        elif isinstance(event, events.FatalError):
            report.errors.append(f"fatal: {event.exception!r}")
    return report


def _register_auth(schema, app, role: str) -> None:
    lock = threading.Lock()

    # DELETE /api/auth/token/ revokes the token the run uses; a 401 fetches a new one
    # (through the same POST) and the request is sent again with it.
    @schema.auth(retry_on=[401])
    class RoleToken:
        def get(self, case, ctx):
            with lock:
                return token_obtain(app, role)

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
