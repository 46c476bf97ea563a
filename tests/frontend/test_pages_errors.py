"""Unknown names and ids are friendly 404s; with DEBUG off no error page shows a traceback."""

import pytest
from django.test import Client

from tests.factories import DatasetFactory, UserFactory

pytestmark = pytest.mark.django_db

EVERY_ROLE = ["rater", "researcher", "admin"]
EVERY_KIND = ["STS", "SIS", "SITS"]


@pytest.fixture
def client_all_roles() -> Client:
    """Signed in as a user who passes every permission check, so each answer below is
    about the unknown name, not about who asks."""
    client = Client(raise_request_exception=False)
    client.force_login(UserFactory(roles=EVERY_ROLE, qualified_for=EVERY_KIND, is_staff=True))
    return client


@pytest.mark.parametrize("debug", [True, False])
@pytest.mark.parametrize("path", ["/rate/no-such-dataset/sts/", "/rate/no-such-dataset/xyz/"])
def test_rate_page_of_an_unknown_dataset_or_kind_is_a_friendly_404(client_all_roles, settings, debug, path):
    settings.DEBUG = debug
    response = client_all_roles.get(path)
    assert response.status_code == 404
    html = response.content.decode()
    assert "frontend/base.css" in html, "rendered in the project's look, not Django's debug page"
    assert "Back to your tasks" in html
    assert "Traceback" not in html and "URLconf" not in html


def test_rate_page_names_the_unknown_dataset(client_all_roles):
    DatasetFactory(name="known")
    response = client_all_roles.get("/rate/no-such-dataset/sts/")
    assert "no-such-dataset" in response.content.decode()
    assert "No such dataset" in response.content.decode()


@pytest.mark.parametrize(
    ("method", "path", "named"),
    [
        ("get", "/media/images/no-such-dataset/a.jpg", "no-such-dataset"),
        ("get", "/media/images/known/missing.jpg", "missing.jpg"),
        ("post", "/api/rate/no-such-dataset/claim/", "no-such-dataset"),
        ("get", "/api/rate/no-such-dataset/progress/", "no-such-dataset"),
        ("get", "/api/rate/no-such-dataset/ratings/", "no-such-dataset"),
        ("post", "/api/rate/no-such-dataset/slots/999999/heartbeat/", ""),
        ("post", "/api/rate/no-such-dataset/slots/999999/skip/", ""),
        ("get", "/api/jobs/999999/", "999999"),
        ("get", "/api/exports/999999/", "999999"),
        ("get", "/api/exports/999999/files/", "999999"),
        ("get", "/api/exports/999999/files/scores.csv", "999999"),
        ("get", "/api/raters/nobody/qualifications/", "nobody"),
        ("get", "/api/sampling/batches/999999/", "999999"),
        ("post", "/api/sampling/batches/999999/start/", "999999"),
        ("get", "/api/sampling/splits/no-such-dataset/val/", "no-such-dataset"),
    ],
)
def test_api_and_image_paths_with_unknown_names_are_json_404s(client_all_roles, method, path, named):
    DatasetFactory(name="known", image_url_prefix="", images_root="/nonexistent")
    # The API takes JSON bodies only (a form body is refused with 415 before any lookup).
    response = getattr(client_all_roles, method)(path, content_type="application/json")
    assert response.status_code == 404, response.content[:300]
    detail = response.json()["detail"]
    assert named in detail


@pytest.mark.parametrize("path", ["/no/such/page/", "/rate/a/b/c/"])
def test_unmatched_page_with_debug_off_is_the_project_404(client_all_roles, settings, path):
    settings.DEBUG = False
    response = client_all_roles.get(path)
    assert response.status_code == 404
    html = response.content.decode()
    assert "frontend/base.css" in html
    assert "Page not found" in html
    assert "URLconf" not in html and "Traceback" not in html


def test_unmatched_api_path_is_a_json_404(client_all_roles, settings):
    settings.DEBUG = False
    response = client_all_roles.get("/api/no-such-endpoint/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    assert "/api/no-such-endpoint/" in response.json()["detail"]


def _explode_at(monkeypatch, target: str) -> None:
    """Make the function at ``target`` (dotted path) raise an unexpected error."""

    def explode(*args, **kwargs):
        raise RuntimeError("secret-internal-detail")

    monkeypatch.setattr(target, explode)


def test_server_error_with_debug_off_shows_no_traceback(client_all_roles, settings, monkeypatch):
    settings.DEBUG = False
    _explode_at(monkeypatch, "frontend.views.home_sections")
    response = client_all_roles.get("/")
    assert response.status_code == 500
    html = response.content.decode()
    assert "frontend/base.css" in html
    assert "Something went wrong" in html
    assert "Traceback" not in html and "secret-internal-detail" not in html and "RuntimeError" not in html


def test_api_server_error_with_debug_off_is_json_without_traceback(client_all_roles, settings, monkeypatch):
    settings.DEBUG = False
    _explode_at(monkeypatch, "annotation.selectors.dataset_list")
    response = client_all_roles.get("/api/datasets/")
    assert response.status_code == 500
    assert response["Content-Type"].startswith("application/json")
    body = response.content.decode()
    assert "secret-internal-detail" not in body and "Traceback" not in body
    assert response.json()["detail"]
