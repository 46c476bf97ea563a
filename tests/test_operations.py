"""The operator's pieces at the application's edge (web/operations.py, web/metrics.py),
around a stand-in application: request ids in the answer and in JSON log lines,
``/healthz`` and ``/readyz`` without a login, the metrics endpoint's token and address
checks and its counts; the settings that stop the start (config/operations.py,
web/serve.py); Celery's task failures counted. tests/test_operations_served.py scrapes a
served multi-worker server."""

from __future__ import annotations

import io
import ipaddress
import json
import logging
import os
import re
import sys
from wsgiref.util import setup_testing_defaults

import pytest
from kombu import Connection
from prometheus_client import REGISTRY
from pythonjsonlogger.json import JsonFormatter

from config.celery import app as celery_app
from config.metrics import DATABASE_UNAVAILABLE, RATING_LATENCY, REQUESTS, TASK_FAILURES, VIEW_KEY
from config.operations import metrics_problem
from config.request_id import RequestIdFilter
from tests.conftest import REPO_DIR
from tests.support.database_outage import closed_port
from web.operations import OperationsApplication
from web.serve import ServeSettingError, prepare_metrics

TOKEN = "t" * 40
logger = logging.getLogger("tests.operations")


def stand_in(environ, start_response):
    """An application that logs one line and answers 201 (or 500 past ``/boom``)."""
    logger.warning("serving %s", environ["PATH_INFO"])
    if environ["PATH_INFO"] == "/boom":
        raise RuntimeError("boom")
    start_response("201 Created", [("Content-Type", "text/plain")])
    return [b"made"]


def call(application, path: str, **environ):
    """(status, headers, body) of one request to a WSGI application."""
    env = {"PATH_INFO": path, "REMOTE_ADDR": "127.0.0.1", **environ}
    setup_testing_defaults(env)
    answered = {}

    def start_response(status, headers, exc_info=None):
        answered.update(status=status, headers=dict(headers))

    body = b"".join(application(env, start_response))
    return answered["status"], answered["headers"], body


def requests_counted(view: str, status: str) -> float:
    return REGISTRY.get_sample_value("cxc_http_requests_total", {"view": view, "status": status}) or 0.0


@pytest.fixture
def metrics_on(settings):
    settings.METRICS_ENABLED = True
    settings.METRICS_TOKEN = TOKEN
    settings.METRICS_ALLOWED_NETWORKS = (ipaddress.ip_network("10.0.0.0/8"),)
    settings.METRICS_MULTIPROC_DIR = ""
    return settings


def test_every_answer_carries_a_request_id_and_the_log_lines_hold_it(settings):
    settings.METRICS_ENABLED = False
    application = OperationsApplication(stand_in)
    lines = io.StringIO()
    handler = logging.StreamHandler(lines)
    handler.setFormatter(JsonFormatter("%(levelname)s %(name)s %(message)s %(request_id)s"))
    handler.addFilter(RequestIdFilter())
    logger.addHandler(handler)
    try:
        status, headers, _ = call(application, "/made")
        _, given, _ = call(application, "/made", HTTP_X_REQUEST_ID="proxy-id-1234")
        _, refused, _ = call(application, "/made", HTTP_X_REQUEST_ID="bad id\nwith a newline")
    finally:
        logger.removeHandler(handler)
    assert status == "201 Created" and re.fullmatch(r"[0-9a-f]{12}-[0-9a-f]+", headers["X-Request-ID"])
    assert given["X-Request-ID"] == "proxy-id-1234"
    assert refused["X-Request-ID"] not in ("bad id\nwith a newline", headers["X-Request-ID"])
    logged = [json.loads(line) for line in lines.getvalue().splitlines()]
    assert [entry["request_id"] for entry in logged] == [
        headers["X-Request-ID"],
        "proxy-id-1234",
        refused["X-Request-ID"],
    ]
    assert logged[0]["message"] == "serving /made"


@pytest.mark.django_db
def test_healthz_and_readyz_answer_without_a_login(settings):
    settings.METRICS_ENABLED = False
    application = OperationsApplication(stand_in)
    assert call(application, "/healthz")[0] == "200 OK"
    status, _, body = call(application, "/readyz")
    assert (status, json.loads(body)) == ("200 OK", {"ready": True, "database": "ok", "broker": "in-process"})
    # Off, the metrics are Django's to answer (its 404): the stand-in answers here.
    assert call(application, "/metrics")[0] == "201 Created"


@pytest.mark.django_db
def test_the_metrics_need_the_token_and_an_allowed_address_and_count_each_request(metrics_on):
    application = OperationsApplication(stand_in)
    made, failed = requests_counted("unmatched", "201"), requests_counted("unmatched", "500")
    call(application, "/made")
    with pytest.raises(RuntimeError):
        call(application, "/boom")
    bearer = f"Bearer {TOKEN}"
    assert call(application, "/metrics", REMOTE_ADDR="10.1.2.3")[0] == "401 Unauthorized"
    assert call(application, "/metrics", REMOTE_ADDR="10.1.2.3", HTTP_AUTHORIZATION="Bearer wrong")[0].startswith("401")
    assert call(application, "/metrics", REMOTE_ADDR="192.0.2.1", HTTP_AUTHORIZATION=bearer)[0] == "403 Forbidden"
    status, _, body = call(application, "/metrics", REMOTE_ADDR="10.1.2.3", HTTP_AUTHORIZATION=bearer)
    assert status == "200 OK"
    assert (requests_counted("unmatched", "201"), requests_counted("unmatched", "500")) == (made + 1, failed + 1)
    assert b"cxc_database_up 1.0" in body and b"cxc_http_requests_total" in body


@pytest.mark.django_db
def test_readyz_asks_the_broker_when_tasks_do_not_run_in_process(settings, monkeypatch):
    settings.METRICS_ENABLED = False
    settings.CELERY_TASK_ALWAYS_EAGER = False
    application = OperationsApplication(stand_in)
    monkeypatch.setattr(celery_app, "connection_for_write", lambda: Connection(os.environ["TEST_REDIS_URL"]))
    assert call(application, "/readyz")[0] == "200 OK"
    refused = f"redis://127.0.0.1:{closed_port()}/0"
    monkeypatch.setattr(celery_app, "connection_for_write", lambda: Connection(refused))
    status, _, body = call(application, "/readyz")
    assert (status, json.loads(body)) == (
        "503 Service Unavailable",
        {"ready": False, "database": "ok", "broker": "unavailable"},
    )


def test_the_metrics_settings_that_stop_the_start(tmp_path):
    nets = (ipaddress.ip_network("10.0.0.0/8"),)
    assert metrics_problem(enabled=False, token="", networks=(), folder="") is None
    assert metrics_problem(enabled=True, token=TOKEN, networks=(), folder=str(tmp_path)) is None
    assert metrics_problem(enabled=True, token="", networks=nets, folder="") is None
    assert "METRICS_TOKEN must have at least 32" in metrics_problem(enabled=True, token="short", networks=(), folder="")
    assert "neither METRICS_TOKEN nor METRICS_ALLOWED_NETWORKS" in metrics_problem(
        enabled=True, token="", networks=(), folder=""
    )
    assert metrics_problem(enabled=True, token=TOKEN, networks=(), folder=str(tmp_path / "made")) is None
    assert (tmp_path / "made").is_dir()
    (tmp_path / "a-file").write_text("")
    assert "PROMETHEUS_MULTIPROC_DIR" in metrics_problem(
        enabled=True, token=TOKEN, networks=(), folder=str(tmp_path / "a-file" / "metrics")
    )


@pytest.mark.parametrize(
    ("variable", "value", "named"),
    [
        ("METRICS_ENABLED", "ture", "METRICS_ENABLED must be true or false"),
        ("METRICS_ALLOWED_NETWORKS", "10.0.0.0/8,intranet", "METRICS_ALLOWED_NETWORKS must list"),
        ("LOG_FORMAT", "xml", "LOG_FORMAT must be one of plain, json"),
    ],
)
def test_a_bad_operations_setting_stops_the_start_naming_it(monkeypatch, variable, value, named):
    from django.core.exceptions import ImproperlyConfigured

    monkeypatch.setenv(variable, value)
    sys.modules.pop("config.operations", None)
    try:
        with pytest.raises(ImproperlyConfigured, match=named):
            import config.operations
    finally:
        monkeypatch.undo()
        sys.modules.pop("config.operations", None)
        import config.operations  # noqa: F401


def test_the_server_start_needs_a_metrics_folder_and_empties_the_webs_files(tmp_path):
    with pytest.raises(ServeSettingError, match="PROMETHEUS_MULTIPROC_DIR is not set"):
        prepare_metrics({"METRICS_ENABLED": "true"})
    assert prepare_metrics({"METRICS_ENABLED": "false", "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}) is None
    for name in ("counter_web-11.db", "histogram_web-12.db", "counter_worker-13.db"):
        (tmp_path / name).write_bytes(b"")
    assert prepare_metrics({"METRICS_ENABLED": "true", "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}) == str(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["counter_worker-13.db"]


@pytest.mark.django_db  # reading the registry reads the queue's gauges once the endpoint was made
def test_a_failed_celery_task_is_counted_by_name():
    @celery_app.task(name="tests.operations.fails")
    def fails():
        raise ValueError("no")

    before = REGISTRY.get_sample_value("cxc_celery_task_failures_total", {"task": "tests.operations.fails"}) or 0
    fails.apply(throw=False)
    after = REGISTRY.get_sample_value("cxc_celery_task_failures_total", {"task": "tests.operations.fails"})
    assert after == before + 1


def test_the_grafana_dashboard_reads_only_metrics_the_app_exports():
    dashboard = json.loads((REPO_DIR / "docs" / "grafana" / "cxc-dashboard.json").read_text())
    read = {
        re.sub(r"_(total|bucket|count|sum)$", "", name)
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in re.findall(r"\bcxc_[a-z_]+", target["expr"])
    }
    exported = {metric._name for metric in (REQUESTS, RATING_LATENCY, DATABASE_UNAVAILABLE, TASK_FAILURES)}
    exported |= {"cxc_database_up", "cxc_queue_pairs_open", "cxc_leases_held", "cxc_leases_expired"}
    assert read == exported


def test_the_worker_counts_in_files_of_its_own_and_empties_only_those(tmp_path, monkeypatch):
    from config import celery as celery_module
    from config import metrics

    for name in ("counter_web-h-11.db", "counter_worker-h-12.db"):
        (tmp_path / name).write_bytes(b"")
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    try:
        celery_module._count_as_worker()
        assert metrics._process_identifier().startswith("worker-")
        assert sorted(p.name for p in tmp_path.iterdir()) == ["counter_web-h-11.db"]
    finally:
        metrics.set_role("web")
    assert metrics._process_identifier().startswith("web-")


@pytest.mark.django_db
def test_django_leaves_the_resolved_views_name_for_the_count(client):
    assert client.get("/api/schema/").wsgi_request.environ[VIEW_KEY] == "api-schema"
    assert client.get("/admin/login/").wsgi_request.environ[VIEW_KEY] == "admin:login"
    assert VIEW_KEY not in client.get("/no-such-page/").wsgi_request.environ
