"""plotly.min.js is served by the app from the pinned plotly package (no CDN), and nothing
else of that package is."""

import re
from pathlib import Path

from django.conf import settings
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.http import HttpResponse
from django.test import RequestFactory
from whitenoise.middleware import WhiteNoiseMiddleware

from frontend.vendor import PLOTLY, VendorFinder
from tests.conftest import REPO_DIR


def test_the_served_version_is_the_one_requirements_pin():
    pins = dict(line.split("==") for line in (REPO_DIR / "requirements.txt").read_text().splitlines() if "==" in line)
    assert pins["plotly"] == PLOTLY.version
    assert PLOTLY.static_path == f"frontend/vendor/plotly-{PLOTLY.version}/plotly.min.js"
    assert PLOTLY.source.read_bytes()[:40].startswith(b"/**\n* plotly.js v")


def test_the_finder_finds_plotly_min_js_and_nothing_else_of_the_package():
    assert finders.find(PLOTLY.static_path) == str(PLOTLY.source)
    folder = PLOTLY.static_path.rsplit("/", 1)[0]
    for other in ("widgetbundle.js", "datasets/iris.csv.gz", "../plotly.min.js"):
        assert finders.find(f"{folder}/{other}") is None, other
    assert [path for path, _ in VendorFinder().list(None)] == ["plotly.min.js"]
    assert VendorFinder().check() == []


def test_the_versioned_url_is_cached_for_good():
    url = f"{settings.STATIC_URL}{PLOTLY.static_path}"
    assert re.match(settings.WHITENOISE_IMMUTABLE_FILE_TEST, f"/{url}")
    assert not re.match(settings.WHITENOISE_IMMUTABLE_FILE_TEST, f"/{settings.STATIC_URL}frontend/base.css")


def test_collected_it_is_served_gzipped_with_a_long_cache(settings, tmp_path):
    """As in production: collectstatic writes it with a .gz beside it, whitenoise serves
    that to a browser that accepts gzip, cached for good."""
    settings.STATIC_ROOT = tmp_path / "static"
    settings.DEBUG = False
    call_command("collectstatic", interactive=False, verbosity=0)
    copied = Path(settings.STATIC_ROOT) / PLOTLY.static_path
    assert copied.read_bytes() == PLOTLY.source.read_bytes()
    assert sorted(p.name for p in copied.parent.iterdir()) == ["plotly.min.js", "plotly.min.js.gz"]

    serve = WhiteNoiseMiddleware(lambda request: HttpResponse(status=404))
    response = serve(RequestFactory().get(f"/static/{PLOTLY.static_path}", HTTP_ACCEPT_ENCODING="gzip"))
    assert response.status_code == 200
    assert response["Content-Encoding"] == "gzip"
    assert "immutable" in response["Cache-Control"] and "max-age=315360000" in response["Cache-Control"]
    assert int(response["Content-Length"]) < copied.stat().st_size / 2
    # The file, not response.close(): that sends request_finished, which touches the database.
    response.file_to_stream.close()
