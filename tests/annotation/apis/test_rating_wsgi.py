"""The rating cycle's direct way past the middleware chain (web/rating_wsgi.py).

Every request here goes through WSGI twice from the same database state (a savepoint
rolled back in between), once through Django's application whole and once through the
wrapper, and both answers must be the same: status, every header in order and the body
(the rating's id, drawn from a sequence a rollback does not rewind, aside). The wrapper's
own count of the requests it passed to Django shows which took the direct way."""

from __future__ import annotations

import json

import pytest
from django.core import signals
from django.core.exceptions import ImproperlyConfigured
from django.core.handlers.wsgi import WSGIHandler
from django.db import close_old_connections, transaction
from django.test import RequestFactory
from knox.models import AuthToken

from annotation.rating import policy
from tests.factories import UserFactory
from tests.support import queue_support
from tests.support.queue_support import rate_url, submit_kwargs
from web.rating_wsgi import REVIEWED_MIDDLEWARE, RatingCycleApplication

pytestmark = pytest.mark.django_db

split = queue_support.split  # a split with three SIS pairs queued


class CountingDjango:
    """Django's WSGI application, counting the requests it answers."""

    def __init__(self):
        self.application = WSGIHandler()
        self.calls = 0

    def __call__(self, environ, start_response):
        self.calls += 1
        return self.application(environ, start_response)


@pytest.fixture
def apps(clock):
    """(Django whole, the wrapper around it); the clock keeps lease times equal."""
    django = CountingDjango()
    return django, RatingCycleApplication(django)


def call(application, environ: dict) -> tuple[str, list, bytes]:
    """One WSGI request, without the test transaction's connection closed by the request
    signals (as Django's test client does)."""
    started = []

    def start_response(status, headers, exc_info=None):
        started.append((status, headers))

    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        answer = application(environ, start_response)
        body = b"".join(answer)
        answer.close()
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)
    ((status, headers),) = started
    return status, headers, body


def post(path: str, body: bytes | dict, *, token: str | None, **extra) -> dict:
    """A POST's WSGI environ (a fresh body stream each time)."""
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    if token is not None:
        extra["HTTP_AUTHORIZATION"] = f"Token {token}"
    return RequestFactory().generic("POST", path, data, content_type="application/json", **extra).environ


def both(apps, make_environ, *, direct_way: bool = True) -> tuple[str, list, bytes]:
    """The request answered by Django whole (then undone) and by the wrapper: the two
    answers must agree, and the wrapper must have answered it itself (``direct_way``) or
    passed it to Django. Returns the wrapper's."""
    django, wrapper = apps
    with transaction.atomic():
        whole = call(django, make_environ())
        transaction.set_rollback(True)
    calls = django.calls
    direct = call(wrapper, make_environ())
    assert django.calls - calls == (0 if direct_way else 1)
    assert comparable(direct) == comparable(whole)
    # Content-Length where Django's answer has it (CommonMiddleware's; a refused host's 400
    # is made inside it and has none), and the body's.
    lengths = [[value for name, value in headers if name == "Content-Length"] for _, headers, _ in (whole, direct)]
    assert lengths[0] == [str(len(whole[2]))] or (lengths[0] == [] and whole[0].startswith("400")), whole
    assert lengths[1] == ([str(len(direct[2]))] if lengths[0] else []), direct
    return direct


def comparable(answer):
    status, headers, body = answer
    headers = [(name, value) for name, value in headers if name != "Content-Length"]
    if not body.startswith(b"{"):
        return status, headers, body
    data = json.loads(body)
    data.pop("rating_id", None)
    return status, headers, data


def token_of(user) -> str:
    return AuthToken.objects.create(user)[1]


def rater():
    return UserFactory(roles=["rater"], qualified_for=["SIS"])


def test_the_cycle_takes_the_direct_way_and_answers_as_django_does(split, apps):
    django, _ = apps
    token = token_of(rater())
    claim = rate_url(split.dataset, "claim")
    status, _, body = both(apps, lambda: post(claim, {"kind": "SIS", "progress_tz": "Europe/Berlin"}, token=token))
    assert status == "200 OK"
    slot_id = json.loads(body)["slot_id"]
    submit = rate_url(split.dataset, "submit", slot_id)
    page_submit = {**submit_kwargs("k1"), "claim_next_kind": "SIS", "progress_tz": "UTC"}
    status, _, body = both(apps, lambda: post(submit, page_submit, token=token))
    assert status == "201 Created"
    assert json.loads(body)["progress"]["ratings_today"] == 1
    status, _, body = both(apps, lambda: post(submit, page_submit, token=token))
    assert (status, json.loads(body)["replayed"]) == ("200 OK", True)
    status, _, _ = both(apps, lambda: post(submit, {**submit_kwargs("k2")}, token=token))
    assert status == "409 Conflict"
    unknown = rate_url(type(split.dataset)(name="no-such-dataset"), "claim")
    status, _, _ = both(apps, lambda: post(unknown, {"kind": "SIS"}, token=token))
    assert status == "404 Not Found"
    assert django.calls == 5  # only the halves answered by Django whole


def test_what_the_chain_adds_is_added(split, apps, settings):
    token = token_of(rater())
    claim = rate_url(split.dataset, "claim")
    status, headers, _ = both(apps, lambda: post(claim, {"kind": "SIS"}, token=token))
    assert status == "200 OK"
    names = dict(headers)
    assert (names["X-Frame-Options"], names["X-Content-Type-Options"]) == ("DENY", "nosniff")
    assert (names["Referrer-Policy"], names["Cross-Origin-Opener-Policy"]) == ("same-origin", "same-origin")
    settings.SECURE_SSL_REDIRECT = True
    redirect = RatingCycleApplication(apps[0])  # the middleware reads the setting when made
    status, headers, _ = call(redirect, post(claim, {"kind": "SIS"}, token=token))
    assert (status, dict(headers)["Location"]) == ("301 Moved Permanently", f"https://testserver{claim}")
    settings.SECURE_SSL_REDIRECT = False
    settings.SECURE_HSTS_SECONDS = 3600
    hsts = RatingCycleApplication(apps[0])
    status, headers, _ = call(hsts, post(claim, {"kind": "SIS"}, token=token, **{"wsgi.url_scheme": "https"}))
    assert (status, dict(headers)["Strict-Transport-Security"]) == ("200 OK", "max-age=3600")


def test_a_host_outside_allowed_hosts_is_refused_as_django_refuses_it(split, apps):
    token = token_of(rater())
    claim = rate_url(split.dataset, "claim")
    status, _, _ = both(apps, lambda: post(claim, {"kind": "SIS"}, token=token, HTTP_HOST="evil.example"))
    assert status == "400 Bad Request"


def test_a_refused_host_under_the_https_redirect_is_refused_as_django_refuses_it(split, settings, clock):
    settings.SECURE_SSL_REDIRECT = True  # read when the middleware is made: both are made after
    django = CountingDjango()
    apps = (django, RatingCycleApplication(django))
    token = token_of(rater())
    claim = rate_url(split.dataset, "claim")
    status, _, _ = both(apps, lambda: post(claim, {"kind": "SIS"}, token=token, HTTP_HOST="evil.example"))
    assert status == "400 Bad Request"


def test_an_error_in_the_view_is_djangos_500_and_logged(split, apps, monkeypatch, caplog):
    token = token_of(rater())

    def broken(**kwargs):
        raise RuntimeError("the queue broke")

    monkeypatch.setattr(policy, "slot_claim", broken)
    claim = rate_url(split.dataset, "claim")
    status, _, body = both(apps, lambda: post(claim, {"kind": "SIS"}, token=token))
    assert (status, json.loads(body)["code"]) == ("500 Internal Server Error", "server_error")
    logged = [r for r in caplog.records if r.name == "django.request" and r.levelname == "ERROR"]
    assert len(logged) == 2 and all("the queue broke" in str(r.exc_info[1]) for r in logged)


def test_a_refusal_is_logged_as_django_logs_it(split, apps, caplog):
    token = token_of(rater())
    claim = rate_url(type(split.dataset)(name="no-such-dataset"), "claim")
    both(apps, lambda: post(claim, {"kind": "SIS"}, token=token))
    logged = [r.getMessage() for r in caplog.records if r.name == "django.request"]
    assert logged == [f"Not Found: {claim}"] * 2


def test_what_the_direct_way_declines_reaches_django_with_its_body(split, apps):
    django, _ = apps
    token = token_of(rater())
    claim = rate_url(split.dataset, "claim")
    declined = [
        (lambda: post(claim, {"kind": "sis"}, token=token), "400 Bad Request"),  # DRF names the problem
        (lambda: post(claim, {"kind": "SIS", "extra": 1}, token=token), "200 OK"),  # read by DRF
        (lambda: post(claim, {"kind": "SIS"}, token="not-a-token"), "401 Unauthorized"),
        (lambda: post(claim, b'{"kind": NaN}', token=token), "400 Bad Request"),
    ]
    for make_environ, expected in declined:
        status, _, body = both(apps, make_environ, direct_way=False)
        assert status == expected, body
    assert django.calls == 2 * len(declined)
    status, _, body = both(apps, lambda: post(claim, {"kind": "sis"}, token=token), direct_way=False)
    assert json.loads(body)["detail"] == 'kind: "sis" is not a valid choice.'  # the body reached DRF


def test_other_requests_go_to_django_whole(split, apps):
    django, wrapper = apps
    token = token_of(rater())
    claim = rate_url(split.dataset, "claim")
    others = [
        post(claim + "?x=%01", {"kind": "SIS"}, token=token),  # the control character check
        post(claim + "?x=1", {"kind": "SIS"}, token=token),
        post(claim, {"kind": "SIS"}, token=None),  # no token: a session's request, CSRF checked
        post(claim, {"kind": "SIS"}, token=token, HTTP_COOKIE="csrftoken=short"),  # CSRF renews the cookie
        post(claim[:-1], {"kind": "SIS"}, token=token),  # APPEND_SLASH's
        post(rate_url(split.dataset, "skip", 1), {}, token=token),
        RequestFactory().get(claim, HTTP_AUTHORIZATION=f"Token {token}").environ,
    ]
    statuses = [call(wrapper, environ)[0] for environ in others]
    assert django.calls == len(others)
    assert statuses[0] == "400 Bad Request"


def test_the_request_signals_are_sent_once_each(split, apps):
    _, wrapper = apps
    token = token_of(rater())
    sent = []

    def started(sender, **kwargs):
        sent.append(("started", sender))

    def finished(sender, **kwargs):
        sent.append(("finished", sender))

    signals.request_started.connect(started)
    signals.request_finished.connect(finished)
    try:
        status, _, _ = call(wrapper, post(rate_url(split.dataset, "claim"), {"kind": "SIS"}, token=token))
    finally:
        signals.request_started.disconnect(started)
        signals.request_finished.disconnect(finished)
    assert status == "200 OK"
    assert sent == [("started", WSGIHandler), ("finished", WSGIHandler)]


def test_another_middleware_list_stops_the_server_from_starting(settings):
    settings.MIDDLEWARE = [*REVIEWED_MIDDLEWARE, "django.middleware.gzip.GZipMiddleware"]
    with pytest.raises(ImproperlyConfigured, match="REVIEWED_MIDDLEWARE"):
        RatingCycleApplication(WSGIHandler())


def test_the_served_application_is_the_wrapper():
    from web.operations import OperationsApplication
    from web.wsgi import application
    from web.wsgi_environ import WithoutProcessEnvironment

    # Under the process environment's filter (web/wsgi_environ.py), which comes first, and
    # the request ids and counts (web/operations.py), which see both ways alike.
    assert isinstance(application, WithoutProcessEnvironment)
    assert isinstance(application.application, OperationsApplication)
    assert isinstance(application.application.application, RatingCycleApplication)
