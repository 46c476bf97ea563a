"""``manage.py check --deploy`` is clean in services mode with the documented TLS
settings (README, "Production"), and warns without them."""

import secrets
import subprocess
import sys

from tests.conftest import REPO_DIR

TLS_SETTINGS = {
    "SECURE_SSL_REDIRECT": "true",
    "SECURE_PROXY_SSL_HEADER": "HTTP_X_FORWARDED_PROTO",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "true",
    "SECURE_HSTS_PRELOAD": "true",
    "SESSION_COOKIE_SECURE": "true",
    "CSRF_COOKIE_SECURE": "true",
}


def deploy_check(**settings: str) -> subprocess.CompletedProcess:
    # Only these variables: nothing from the test run's own environment leaks in.
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": "/tmp",
        "RUN_MODE": "services",
        # check --deploy does not connect; the URLs only have to be well formed.
        "DATABASE_URL": "postgres://cxc@127.0.0.1:5432/cxc",
        "REDIS_URL": "redis://127.0.0.1:6379/0",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DEBUG": "false",
        "ALLOWED_HOSTS": "annotate.example.org",
        **settings,
    }
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_deploy_check_is_clean_with_the_documented_tls_settings():
    result = deploy_check(**TLS_SETTINGS)
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout
    assert "WARNING" not in result.stderr


def test_deploy_check_warns_without_them():
    result = deploy_check()
    assert result.returncode != 0
    for check in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert check in result.stderr


def test_a_proxy_ssl_header_that_is_not_a_meta_key_is_refused():
    result = deploy_check(**(TLS_SETTINGS | {"SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto"}))
    assert result.returncode != 0
    assert "SECURE_PROXY_SSL_HEADER names a request.META key" in result.stderr
