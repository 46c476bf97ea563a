"""Unknown names and ids are friendly 404s; with DEBUG off no error page shows a traceback."""

import json

import pytest
from django.core.exceptions import BadRequest, PermissionDenied, SuspiciousOperation
from django.middleware.csrf import _get_failure_view
from django.test import Client, RequestFactory
from django.urls import get_resolver

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
    _explode_at(monkeypatch, "annotation.catalog.selectors.dataset_list")
    response = client_all_roles.get("/api/datasets/")
    assert response.status_code == 500
    assert response["Content-Type"].startswith("application/json")
    body = response.content.decode()
    assert "secret-internal-detail" not in body and "Traceback" not in body
    assert response.json()["detail"]


# --- bad requests: JSON in the API's error shape under /api/, the project's pages elsewhere ---


@pytest.mark.parametrize(
    ("path", "named"),
    [
        ("/api/exports/?dataset=%00", "query parameter 'dataset' has the control character U+0000 at character 1"),
        ("/api/raters/a%00b/qualifications/", "the URL path has the control character U+0000 at character 14"),
        ("/api/sampling/splits/lx/v%00al/", "the URL path has the control character U+0000 at character 26"),
        ("/api/exports/?dataset=coco%1b", "query parameter 'dataset' has the control character U+001B at character 5"),
    ],
)
def test_a_control_character_in_an_api_path_or_query_is_a_json_400_naming_it(client_all_roles, settings, path, named):
    settings.DEBUG = False
    response = client_all_roles.get(path)
    assert response.status_code == 400, response.content[:300]
    assert response.json() == {"detail": response.json()["detail"], "code": "control_character"}
    assert named in response.json()["detail"]


def test_a_control_character_in_a_page_path_is_the_project_400_page(client_all_roles, settings):
    settings.DEBUG = False
    response = client_all_roles.get("/rate/de%00mo/sts/")
    assert response.status_code == 400
    html = response.content.decode()
    assert "frontend/base.css" in html and "Bad request" in html
    assert "the URL path has the control character U+0000 at character 9" in html


@pytest.mark.parametrize("debug", [True, False])
def test_a_json_body_over_the_limit_is_a_json_413_naming_the_limit(client_all_roles, settings, debug):
    settings.DEBUG = debug
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1_000
    body = json.dumps({"dataset": "x", "split": "val", "methods": {"c2c_cocaption": None}, "pad": "p" * 2_000})
    response = client_all_roles.post("/api/sampling/batches/", body, content_type="application/json")
    assert response.status_code == 413
    assert response.json() == {
        "detail": (
            "the request body is larger than DATA_UPLOAD_MAX_MEMORY_SIZE=1,000 bytes; send files as multipart uploads"
        ),
        "code": "request_too_large",
    }


# The API takes forms only on its upload endpoints (JSON elsewhere, a form is a 415).
@pytest.mark.parametrize(("path", "is_api"), [("/api/imports/karpathy/", True), ("/login/", False)])
def test_too_many_form_fields_name_the_limit(client_all_roles, settings, path, is_api):
    settings.DEBUG = False
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 5
    response = client_all_roles.post(path, {f"field{n}": "x" for n in range(10)})
    assert response.status_code == 400
    if is_api:
        assert response.json() == {
            "detail": "the request has more than DATA_UPLOAD_MAX_NUMBER_FIELDS=5 fields",
            "code": "too_many_fields",
        }
    else:
        html = response.content.decode()
        assert "frontend/base.css" in html
        assert "the request has more than DATA_UPLOAD_MAX_NUMBER_FIELDS=5 fields" in html


def test_a_csrf_failure_on_a_page_is_the_project_403_page():
    response = Client(enforce_csrf_checks=True).post("/login/", {"username": "a", "password": "b"})
    assert response.status_code == 403
    html = response.content.decode()
    assert "frontend/base.css" in html
    assert "This form has expired or came from another site" in html


def test_a_csrf_failure_under_api_is_json():
    # No view under /api/ is left to Django's CSRF middleware today (DRF checks sessions
    # itself), so the configured failure view is called as the middleware would call it.
    response = _get_failure_view()(RequestFactory().post("/api/some/form/"), reason="CSRF cookie not set")
    assert response.status_code == 403
    assert json.loads(response.content) == {
        "detail": (
            "CSRF check failed: CSRF cookie not set. Send the csrftoken cookie's value in the X-CSRFToken header."
        ),
        "code": "csrf_failed",
    }


@pytest.mark.parametrize(
    ("status", "exception", "expected"),
    [
        (400, SuspiciousOperation("secret-internal-detail"), (400, "the request is malformed and was refused")),
        (400, BadRequest("the header X-Thing is not a number"), (400, "the header X-Thing is not a number")),
        (403, PermissionDenied("only admins may do this"), (403, "only admins may do this")),
    ],
)
def test_djangos_own_400_and_403_under_api_are_json(status, exception, expected):
    handler = get_resolver().resolve_error_handler(status)
    response = handler(RequestFactory().get("/api/anything/"), exception)
    assert response.status_code == expected[0]
    body = json.loads(response.content)
    assert body["detail"] == expected[1] and body["code"]


def test_every_drf_error_carries_a_code(client_all_roles):
    anonymous = Client()
    answers = {
        "method_not_allowed": client_all_roles.put("/api/datasets/"),
        "unsupported_media_type": client_all_roles.post(
            "/api/imports/karpathy/", "{}", content_type="application/json"
        ),
        "parse_error": client_all_roles.post("/api/sampling/batches/", "{oops", content_type="application/json"),
        "not_authenticated": anonymous.get("/api/datasets/"),
        "invalid": client_all_roles.post("/api/sampling/batches/", {}, content_type="application/json"),
    }
    for code, response in answers.items():
        assert response["Content-Type"].startswith("application/json"), code
        assert response.json()["code"] == code, (code, response.json())
        assert response.json()["detail"], code
