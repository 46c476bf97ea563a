"""Shared fixtures. Services are chosen by scripts/probe_services.py (see scripts/test)."""

import os
from pathlib import Path

import pytest

REPO_DIR = Path(__file__).resolve().parent.parent
SHARED_DIR = Path(os.environ.get("SHARED_DIR", REPO_DIR.parent / "shared"))

if os.environ.get("MUTATION_TEST_DATABASE"):
    # `make mutation`: prepared databases, one per mutmut worker, and tests marked sql_paths
    # on both SQL paths (see tests/support/mutation_mode.py).
    from tests.support.mutation_mode import (  # noqa: F401
        _sql_path_switch,
        django_db_setup,
        order_for_the_mutant,
        pytest_generate_tests,
        pytest_runtest_logreport,
        pytest_sessionfinish,
    )


def pytest_collection_modifyitems(config, items):
    if os.environ.get("MUTATION_TEST_DATABASE"):
        order_for_the_mutant(items)
    if os.environ.get("SQL_PATHS") == "portable":
        _deselect_tests_that_choose_their_path(config, items)
    without_pg = os.environ.get("TESTS_WITHOUT_POSTGRES")
    without_redis = os.environ.get("TESTS_WITHOUT_REDIS")
    for item in items:
        if without_pg and "postgres" in item.keywords:
            item.add_marker(pytest.mark.skip(reason=f"PostgreSQL not reachable at {without_pg}"))
        if without_redis and "redis" in item.keywords:
            item.add_marker(pytest.mark.skip(reason=f"Redis not reachable at {without_redis}"))


def _deselect_tests_that_choose_their_path(config, items) -> None:
    """The test command's second pass (SQL_PATHS=portable) leaves out the tests taking the
    ``engine`` fixture: they set the path themselves and ran every path in the first pass."""
    chosen = [item for item in items if "engine" in getattr(item, "fixturenames", ())]
    if chosen:
        config.hook.pytest_deselected(items=chosen)
        items[:] = [item for item in items if "engine" not in getattr(item, "fixturenames", ())]


def skip_or_fail(reason: str) -> None:
    """Skip a test whose data is missing, except under CI (CI=true), where the shared data
    is always laid beside the clone: there a missing folder is a failure, not a skip."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{reason} (CI must have it: SHARED_DIR or ../shared)")
    pytest.skip(reason)


@pytest.fixture
def shared_dir() -> Path:
    if not SHARED_DIR.is_dir():
        skip_or_fail(f"shared data folder {SHARED_DIR} is absent")
    return SHARED_DIR


@pytest.fixture
def coco_mini(shared_dir) -> Path:
    folder = shared_dir / "coco_mini"
    if not (folder / "dataset.json").is_file():
        skip_or_fail(f"{folder}/dataset.json is absent")
    return folder


@pytest.fixture(autouse=True)
def _fast_passwords(settings):
    """Password hashing is deliberately slow; tests create many users."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _data_dir(settings, tmp_path):
    """Each test writes embeddings, uploads and exports under its own temporary folder."""
    settings.DATA_DIR = tmp_path / "data"
    settings.EXPORT_DIR = tmp_path / "exports"


@pytest.fixture(autouse=True)
def _statement_counts_with_memory(request):
    """A test that counts the statements serving's per-process memories spare (marker
    statement_count) runs with them on, whatever SERVING_PROCESS_MEMORY the pass sets."""
    if request.node.get_closest_marker("statement_count"):
        request.getfixturevalue("settings").SERVING_PROCESS_MEMORY = True


@pytest.fixture(autouse=True)
def _process_caches_reset(monkeypatch):
    """Each test starts with no memory of which datasets serve gold and at what rate (the
    claim's choice of statement, annotation/serving/claim.py) or of their ids (the
    progress's, annotation/rating/progress_sql.py), whatever an earlier test's datasets were
    called."""
    from annotation.rating import progress_sql
    from annotation.serving import claim

    monkeypatch.setattr(claim, "_gold_seen", {})
    monkeypatch.setattr(claim, "_gold_one_in", {})
    monkeypatch.setattr(progress_sql, "_dataset_ids", {})


@pytest.fixture(autouse=True)
def _csv_answers_walked(monkeypatch):
    """Every answer the test client gets, in every test: a CSV (or zip) from a view the
    CSV walk does not know fails the test (tests/support/csv_endpoints.py)."""
    from django.test.client import Client

    from tests.support.csv_endpoints import check_walked

    request = Client.request

    def checked(self, **kwargs):
        response = request(self, **kwargs)
        check_walked(response)
        return response

    monkeypatch.setattr(Client, "request", checked)


@pytest.fixture
def admin_api():
    """An API client signed in as an admin (a new user in the admin group)."""
    from rest_framework.test import APIClient

    from tests.factories import UserFactory

    client = APIClient()
    client.force_authenticate(UserFactory(roles=["admin"]))
    return client
