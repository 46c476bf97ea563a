"""The run mode is explicit, and a configured service that is down fails loudly.

Each case starts a fresh Python process, since settings are read once per process.
"""

import os
import subprocess
import sys

import pytest

from config.runtime import autovacuum_warning
from tests.conftest import REPO_DIR


def run_python(code: str, **env_overrides: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "RUN_MODE", "CELERY_TASK_ALWAYS_EAGER")}
    env.update(env_overrides)
    env["DJANGO_SETTINGS_MODULE"] = "config.settings"
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); " + code],
        cwd=REPO_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def run_on_test_database(code: str) -> subprocess.CompletedProcess:
    """``run_python`` in services mode on the test database, tasks in-process."""
    return run_python(code, DATABASE_URL=os.environ["DATABASE_URL"], CELERY_TASK_ALWAYS_EAGER="true", SECRET_KEY="k")


def test_embedded_is_the_default_without_database_url(tmp_path):
    result = run_python(
        "from config.runtime import describe_mode; print(describe_mode())",
        VAR_DIR=str(tmp_path),
        CELERY_BROKER_URL="",
        REDIS_URL="",
    )
    assert result.returncode == 0, result.stderr
    assert "embedded mode: SQLite at" in result.stdout
    assert "tasks run in-process" in result.stdout


def test_services_mode_without_database_url_is_refused():
    result = run_python("", RUN_MODE="services")
    assert result.returncode != 0
    assert "RUN_MODE=services needs DATABASE_URL" in result.stderr


def test_services_mode_without_broker_is_refused():
    result = run_python(
        "", DATABASE_URL="postgres://postgres@127.0.0.1:5432/x", CELERY_BROKER_URL="", REDIS_URL="", SECRET_KEY="k"
    )
    assert result.returncode != 0
    assert "Celery needs CELERY_BROKER_URL or REDIS_URL" in result.stderr


def test_embedded_mode_with_database_url_is_refused():
    result = run_python("", RUN_MODE="embedded", DATABASE_URL="postgres://postgres@127.0.0.1:5432/x")
    assert result.returncode != 0
    assert "DATABASE_URL is set but RUN_MODE=embedded" in result.stderr


def test_database_down_fails_the_startup_check():
    result = run_python(
        "from config.runtime import check_services; check_services()",
        DATABASE_URL="postgres://postgres@127.0.0.1:1/nothing",
        REDIS_URL="redis://127.0.0.1:6379/0",
        SECRET_KEY="k",
    )
    assert result.returncode != 0
    assert "OperationalError" in result.stderr


@pytest.mark.postgres
def test_broker_down_fails_the_startup_check():
    result = run_python(
        "from config.runtime import check_services; check_services()",
        DATABASE_URL=os.environ["DATABASE_URL"],
        CELERY_BROKER_URL="redis://127.0.0.1:1/0",
        SECRET_KEY="k",
    )
    assert result.returncode != 0
    assert "Error" in result.stderr and "127.0.0.1:1" in result.stderr.replace("localhost", "127.0.0.1")


@pytest.mark.postgres
def test_the_startup_check_leaves_no_connection_open():
    result = run_on_test_database(
        "from django.db import connection; from config.runtime import check_services; check_services(); "
        "print('open' if connection.connection is not None else 'closed')"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-1] == "closed"


def test_faiss_cpu_variant_lines_stay_out_of_the_output():
    # faiss logs at INFO which builds it tried ("Could not load library with AVX512
    # support ..."): with the project's logging a command's output stays clean.
    code = "import django; django.setup(); import faiss; print('loaded', faiss.__version__)"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "LOG_LEVEL": "INFO"}
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_DIR, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "loaded" in done.stdout
    assert "AVX" not in done.stderr and "Could not load library" not in done.stderr


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("UPLOAD_MAX_FILENAME_CHARS", "300", "UPLOAD_MAX_FILENAME_CHARS must be from 1 to 255"),
        ("UPLOAD_MAX_CAPTION_CHARS", "0", "UPLOAD_MAX_CAPTION_CHARS must be at least 1, got 0"),
    ],
)
def test_an_impossible_field_limit_is_refused_at_start(tmp_path, variable, value, message):
    result = run_python("", VAR_DIR=str(tmp_path), CELERY_BROKER_URL="", REDIS_URL="", **{variable: value})
    assert result.returncode != 0
    assert message in result.stderr


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("CLIENT_IP_HEADER", "X_REAL_IP", "CLIENT_IP_HEADER names a request.META key such as HTTP_X_REAL_IP"),
        ("AXES_FAILURE_LIMIT", "0", "AXES_FAILURE_LIMIT must be at least 1, got 0"),
        ("CROWD_NEW_PARTICIPANTS_PER_LINK", "0", "CROWD_NEW_PARTICIPANTS_PER_LINK must be at least 1, got 0"),
    ],
)
def test_an_impossible_sign_in_setting_is_refused_at_start(tmp_path, variable, value, message):
    result = run_python("", VAR_DIR=str(tmp_path), **{variable: value})
    assert result.returncode != 0
    assert message in result.stderr


def test_a_client_ip_header_reaches_the_settings_and_axes(tmp_path):
    """config/sign_in.py names axes' address callable only with a header: axes then reads
    the proxy's header, and without one the connection's address."""
    show = (
        "from django.test import RequestFactory; from axes.helpers import get_client_ip_address; "
        "request = RequestFactory().get('/', HTTP_X_REAL_IP='203.0.113.9', REMOTE_ADDR='10.0.0.1'); "
        "print(get_client_ip_address(request, use_ipware=False))"
    )
    behind_a_proxy = run_python(show, VAR_DIR=str(tmp_path), CLIENT_IP_HEADER="HTTP_X_REAL_IP")
    assert behind_a_proxy.returncode == 0, behind_a_proxy.stderr
    assert behind_a_proxy.stdout.split() == ["203.0.113.9"]
    direct = run_python(show, VAR_DIR=str(tmp_path), CLIENT_IP_HEADER="")
    assert direct.returncode == 0, direct.stderr
    assert direct.stdout.split() == ["10.0.0.1"]


def test_a_dashboard_refresh_under_ten_seconds_is_refused(tmp_path):
    result = run_python("", VAR_DIR=str(tmp_path), DASHBOARD_REFRESH_SECONDS="5")
    assert result.returncode != 0
    assert "DASHBOARD_REFRESH_SECONDS must be at least 10, got 5" in result.stderr


def test_autovacuum_off_is_warned_about_naming_the_setting_and_on_is_not():
    assert autovacuum_warning("on") is None
    warning = autovacuum_warning("off")
    assert "autovacuum=off" in warning and "VACUUM ANALYZE" in warning


@pytest.mark.postgres
def test_the_startup_check_warns_when_the_servers_autovacuum_is_off():
    result = run_on_test_database(
        "import logging; logging.basicConfig(); from django.db import connection; "
        "from config.runtime import check_services; check_services(); "
        "connection.ensure_connection(); cursor = connection.cursor(); cursor.execute('SHOW autovacuum'); "
        "print('autovacuum', cursor.fetchone()[0])"
    )
    assert result.returncode == 0, result.stderr
    setting = result.stdout.split()[-1]
    warned = [line for line in result.stderr.splitlines() if "PostgreSQL runs with autovacuum=off" in line]
    assert bool(warned) == (setting == "off"), result.stderr
    assert all("WARNING" in line for line in warned), warned


def test_the_startup_check_in_embedded_mode_asks_sqlite_and_warns_of_nothing(tmp_path):
    result = run_python(
        "import logging; logging.basicConfig(); from config.runtime import check_services; check_services(); "
        "print('checked')",
        VAR_DIR=str(tmp_path),
        CELERY_BROKER_URL="",
        REDIS_URL="",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-1] == "checked"
    assert "autovacuum" not in result.stderr
