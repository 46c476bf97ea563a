"""The token fast path of the claim and submit (annotation/apis/rating_cycle.py): which
requests take it, which go to DRF's views, and that both answer alike. The rating API's
own tests (test_queue_api, test_submit_next_api, test_gold_dodging) run every test both
with a token and with DRF's forced authentication."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from knox.models import AuthToken
from rest_framework.test import APIClient
from rest_framework.views import APIView

from annotation.core.errors import DomainError
from annotation.rating import policy
from tests.factories import UserFactory
from tests.support import queue_support
from tests.support.queue_support import api_claim, rate_url, submit_kwargs

pytestmark = pytest.mark.django_db

split = queue_support.split  # a split with three SIS pairs queued


@pytest.fixture
def drf_answered(monkeypatch):
    """The names of the DRF views that answered a request, in order."""
    names = []
    initialize = APIView.initialize_request

    def counted(self, request, *args, **kwargs):
        names.append(type(self).__name__)
        return initialize(self, request, *args, **kwargs)

    monkeypatch.setattr(APIView, "initialize_request", counted)
    return names


def token_client(user, **client_kwargs) -> APIClient:
    client = APIClient(**client_kwargs)
    client.credentials(HTTP_AUTHORIZATION=f"Token {AuthToken.objects.create(user)[1]}")
    return client


def forced_client(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def rater(**kwargs):
    return UserFactory(roles=["rater"], qualified_for=["SIS"], **kwargs)


def submit(client, dataset, slot_id, key="k1", **extra):
    return client.post(rate_url(dataset, "submit", slot_id), {**submit_kwargs(key, 3.5), **extra}, format="json")


def headers_of(response) -> dict:
    """The answer's headers but its length (the ids in the body differ)."""
    return {name: value for name, value in response.items() if name != "Content-Length"}


def test_a_token_raters_plain_claim_and_submit_take_the_fast_path(split, drf_answered):
    client = token_client(rater())
    claimed = api_claim(client, split.dataset, kind="SIS", progress_tz="Europe/Berlin")
    assert claimed.status_code == 200
    assert claimed.json()["progress"]["pairs_left"] == 3
    slot_id = claimed.json()["slot_id"]
    stored = submit(client, split.dataset, slot_id, claim_next_kind="SIS", progress_tz="UTC")
    assert stored.status_code == 201
    assert stored.json()["next"]["kind"] == "SIS"
    assert stored.json()["progress"]["ratings_today"] == 1
    replayed = submit(client, split.dataset, slot_id)
    assert (replayed.status_code, replayed.json()["replayed"]) == (200, True)
    assert drf_answered == []


def test_the_token_scheme_is_read_in_any_case_as_knox_reads_it(split, drf_answered):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"token {AuthToken.objects.create(rater())[1]}")
    assert api_claim(client, split.dataset, kind="SIS").status_code == 200
    assert drf_answered == []


def test_every_other_request_goes_to_drf_and_is_answered_as_before(split, drf_answered):
    user = rater()
    client = token_client(user)
    odd_bodies = [
        ({"kind": "SIS", "extra": 1}, 200, None),  # DRF passes over a field it does not know
        ({"kind": "sis"}, 400, 'kind: "sis" is not a valid choice.'),
        ({"progress_tz": 5}, 400, "progress_tz: unknown time zone '5'; use an IANA name such as Europe/Berlin"),
    ]
    for body, status, detail in odd_bodies:
        answer = api_claim(client, split.dataset, **body)
        assert answer.status_code == status, body
        if detail is not None:
            assert answer.json()["detail"] == detail
    nan = client.post(rate_url(split.dataset, "claim"), b'{"kind": NaN}', content_type="application/json")
    assert (nan.status_code, nan.json()["code"]) == (400, "parse_error")
    latin = client.post(
        rate_url(split.dataset, "claim"), b'{"kind": "SIS"}', content_type="application/json; charset=latin-1"
    )
    assert latin.status_code == 200  # DRF reads the body in its charset
    form = client.post(rate_url(split.dataset, "claim"), {"kind": "SIS"})
    assert (form.status_code, form.json()["code"]) == (415, "unsupported_media_type")
    got = client.get(rate_url(split.dataset, "claim"))
    assert (got.status_code, got["Allow"]) == (405, "POST, OPTIONS")
    put = client.generic("PUT", rate_url(split.dataset, "claim"), b'{"kind": "SIS"}', content_type="application/json")
    assert put.status_code == 405  # a plain body under another method is not a claim
    assert drf_answered == ["RatingClaimApi"] * (len(odd_bodies) + 5)


@pytest.mark.parametrize(
    ("authorization", "status", "detail"),
    [
        ("Token not-a-token", 401, "Invalid token."),
        ("Token", 401, "Invalid token header. No credentials provided."),
        ("TOKEN", 401, "Invalid token header. No credentials provided."),
        ("Token a b", 401, "Invalid token header. Token string should not contain spaces."),
        ("Bearer abc", 401, "Authentication credentials were not provided."),
    ],
)
def test_a_refused_credential_is_drfs_401(split, drf_answered, authorization, status, detail):
    answer = APIClient(HTTP_AUTHORIZATION=authorization).post(
        rate_url(split.dataset, "claim"), {"kind": "SIS"}, format="json"
    )
    assert (answer.status_code, answer.json()["detail"], answer["WWW-Authenticate"]) == (status, detail, "Token")
    assert drf_answered == ["RatingClaimApi"]


def test_tokens_of_non_raters_and_inactive_raters_are_refused(split, drf_answered):
    admin = token_client(UserFactory(roles=["admin"]))
    refused = api_claim(admin, split.dataset, kind="SIS")
    assert (refused.status_code, refused.json()["detail"]) == (403, "Only raters may do this.")
    gone = rater()
    client = token_client(gone)
    get_user_model().objects.filter(pk=gone.pk).update(is_active=False)
    inactive = submit(client, split.dataset, "1")
    assert (inactive.status_code, inactive.json()["detail"]) == (401, "User inactive or deleted.")
    assert drf_answered == ["RatingClaimApi", "RatingSubmitApi"]


def test_a_session_still_needs_its_csrf_token_and_a_token_does_not(split):
    user = rater()
    session = APIClient(enforce_csrf_checks=True)
    session.force_login(user)
    refused = api_claim(session, split.dataset, kind="SIS")
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["detail"]
    assert api_claim(token_client(user, enforce_csrf_checks=True), split.dataset, kind="SIS").status_code == 200


def test_refusals_after_the_token_read_the_same_both_ways(split, drf_answered):
    user = rater()
    fast, slow = token_client(user), forced_client(user)
    requests = [
        lambda client: submit(client, split.dataset, "12345"),  # a slot the rater never held: 409
        lambda client: api_claim(client, split.dataset, kind="SIS", progress_tz="Mars/Olympus"),
        lambda client: client.post("/api/rate/no-such-dataset/claim/", {}, format="json"),
        lambda client: submit(client, split.dataset, "12345", progress_tz="Nowhere/At_All"),
    ]
    for request in requests:
        drf_answered.clear()
        by_token, by_drf = request(fast), request(slow)
        assert by_token.status_code >= 400
        assert (by_token.status_code, by_token.json(), headers_of(by_token)) == (
            by_drf.status_code,
            by_drf.json(),
            headers_of(by_drf),
        )
        assert len(drf_answered) == 1  # the forced client's request alone


def test_answers_read_the_same_both_ways(split):
    user = rater()
    fast, slow = token_client(user), forced_client(user)
    first = api_claim(fast, split.dataset, kind="SIS", progress_tz="UTC")
    again = api_claim(slow, split.dataset, kind="SIS", progress_tz="UTC")  # the held slot, resumed
    assert headers_of(first) == headers_of(again)
    assert first["Allow"] == "POST, OPTIONS"
    renewed = {"lease_expires_at": None, "resumed": True}  # a resumed claim renews the lease
    assert {**first.json(), **renewed, "progress": None} == {**again.json(), **renewed, "progress": None}
    assert first.json()["progress"].keys() == again.json()["progress"].keys()
    by_token = submit(fast, split.dataset, first.json()["slot_id"], key="same")
    by_drf = submit(slow, split.dataset, first.json()["slot_id"], key="same")  # the replay
    assert (by_token.status_code, by_drf.status_code) == (201, 200)
    assert headers_of(by_token) == headers_of(by_drf)
    assert {**by_token.json(), "replayed": True} == by_drf.json()


class TooSoon(DomainError):
    code = "too_soon"
    http_status = 429

    def __init__(self):
        super().__init__("Wait a moment.")
        self.headers = {"Retry-After": "7"}


def test_a_domain_errors_status_and_headers_read_the_same_both_ways(split, monkeypatch):
    def refuse(**kwargs):
        raise TooSoon()

    monkeypatch.setattr(policy, "slot_claim", refuse)
    user = rater()
    by_token = api_claim(token_client(user), split.dataset, kind="SIS")
    by_drf = api_claim(forced_client(user), split.dataset, kind="SIS")
    assert (by_token.status_code, by_token["Retry-After"], by_token.json()) == (
        429,
        "7",
        {"detail": "Wait a moment.", "code": "too_soon"},
    )
    assert headers_of(by_token) == headers_of(by_drf)


def test_an_error_no_handler_answers_is_raised_as_drf_raises_it(split, monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("the claim broke")

    monkeypatch.setattr(policy, "slot_claim", broken)
    user = rater()
    for client in (token_client(user), forced_client(user)):
        with pytest.raises(RuntimeError, match="the claim broke"):
            api_claim(client, split.dataset, kind="SIS")


@pytest.mark.parametrize(
    "body",
    [b'\xef\xbb\xbf{"kind": "SIS"}', '{"kind": "SIS"}'.encode("utf-16")],
    ids=["utf-8 with a BOM", "utf-16"],
)
def test_a_body_drf_would_not_read_as_utf_8_goes_to_drf(split, drf_answered, body):
    client = token_client(rater())
    answer = client.post(rate_url(split.dataset, "claim"), body, content_type="application/json")
    assert (answer.status_code, answer.json()["code"]) == (400, "parse_error")
    assert drf_answered == ["RatingClaimApi"]


def test_a_body_past_djangos_limit_goes_to_drf(split, drf_answered, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10
    client = token_client(rater())
    answer = client.post(rate_url(split.dataset, "claim"), {"kind": "SIS"}, format="json")
    assert answer.status_code != 200
    assert drf_answered == ["RatingClaimApi"]
