"""The claim and submit bodies read directly (annotation/apis/rating_cycle.py) give exactly
what the DRF serializers give, and every body the direct reading does not take goes to the
serializers (so each refusal names its problem as before). No database."""

import json
import math

import numpy as np
import pytest

from annotation.apis.rating import RatingClaimApi, RatingSubmitApi
from annotation.apis.rating_cycle import claim_input, submit_input

SUBMIT = RatingSubmitApi.RatingSubmitInputSerializer
CLAIM = RatingClaimApi.RatingClaimInputSerializer
GOOD = {
    "score": 2.5,
    "time_on_item_ms": 4000,
    "time_to_first_move_ms": 350,
    "adjustments": 3,
    "idempotency_key": "6f1c2a9e-0b7d-4c55-9a53-2f8e1d3b7c10",
}

# Values each field may take in a generated body: (plain ones, odd ones of every kind).
SUBMIT_VALUES = {
    "score": (
        [0, 5, 2.5, 0.0, 5.0, 4.999, 3],
        [-0.0, -0.1, 5.0001, 7, "2.5", True, None, math.inf, math.nan, [1], 10**400, -(10**400)],
    ),
    "time_on_item_ms": ([0, 1, 4000, 86_400_000], [86_400_001, -1, 4000.0, 4000.5, "4000", False, None, 2**70]),
    "time_to_first_move_ms": ([None, 0, 350], [-5, 350.0, "350", True, 2**63, 10**1001]),
    "adjustments": ([0, 3, 10_000], [10**6, -1, 3.0, "3", None]),
    "idempotency_key": (
        ["k", "6f1c2a9e", "x" * 64],
        ["x" * 65, "", " k", "k ", "a\x00b", "é", "\ud800", 5, None, "a b"],
    ),
    "claim_next_kind": (["STS", "SIS", "SITS"], ["sts", "", None, 1, "XYZ"]),
    "progress_tz": (["Europe/Berlin", "UTC", "x" * 64], ["", " UTC", "x" * 65, None, 3, "Europe/Nowhere"]),
}
CLAIM_VALUES = {
    "kind": (["STS", "SIS", "SITS", None], ["", "sts", 1, ["STS"]]),
    "progress_tz": SUBMIT_VALUES["progress_tz"],
}


def serializer_values(serializer_class, data):
    serializer = serializer_class(data=data)
    return dict(serializer.validated_data) if serializer.is_valid() else None


def bodies(values: dict, required: tuple, rng: np.random.Generator, count: int):
    """Generated bodies: each field present or not (required ones mostly present), each
    value mostly a plain one; now and then an unknown field or no object at all."""
    for _ in range(count):
        body = {}
        for name, (plain, odd) in values.items():
            if rng.random() < (0.95 if name in required else 0.5):
                choices = plain if rng.random() < 0.85 else odd
                body[name] = choices[rng.integers(len(choices))]
        if rng.random() < 0.05:
            body["unexpected"] = 1
        yield body if rng.random() > 0.02 else [body]


def check_same(direct, serializer_class, body):
    expected = serializer_values(serializer_class, body)
    got = direct(body)
    if got is not None:
        assert got == expected, body
        assert [type(v) for v in got.values()] == [type(v) for v in expected.values()], body
    return got is not None, expected is not None


def test_the_direct_submit_reading_gives_what_the_serializer_gives():
    rng = np.random.default_rng(7)
    taken = valid = 0
    required = ("score", "time_on_item_ms", "time_to_first_move_ms", "adjustments", "idempotency_key")
    for body in bodies(SUBMIT_VALUES, required, rng, 4000):
        direct_took, serializer_took = check_same(submit_input, SUBMIT, body)
        taken += direct_took
        valid += serializer_took
    # Most well-formed bodies are read directly; the others reach the serializer.
    assert taken > 200 and valid > taken


def test_the_direct_claim_reading_gives_what_the_serializer_gives():
    rng = np.random.default_rng(8)
    taken = 0
    for body in bodies(CLAIM_VALUES, (), rng, 1000):
        taken += check_same(claim_input, CLAIM, body)[0]
    assert taken > 100


@pytest.mark.parametrize(
    "body",
    [
        GOOD,
        {**GOOD, "time_to_first_move_ms": None, "score": 0},
        {**GOOD, "claim_next_kind": "SITS", "progress_tz": "Europe/Berlin"},
        json.loads(json.dumps({**GOOD, "score": 5})),
    ],
)
def test_the_rating_pages_bodies_are_read_directly(body):
    assert submit_input(body) == serializer_values(SUBMIT, body)
    assert claim_input({}) == {"kind": None} == serializer_values(CLAIM, {})
    assert claim_input({"kind": "SIS", "progress_tz": "UTC"}) == {"kind": "SIS", "progress_tz": "UTC"}


@pytest.mark.parametrize(
    "edge",
    [
        {"idempotency_key": "k", "score": 0, "time_on_item_ms": 0, "adjustments": 0, "time_to_first_move_ms": 0},
        {"idempotency_key": "x" * 64, "score": 5, "time_on_item_ms": 86_400_000, "adjustments": 100_000},
        {"progress_tz": "x" * 64},
    ],
)
def test_the_rating_pages_edge_values_are_read_directly_too(edge):
    body = {**GOOD, **edge}
    assert submit_input(body) is not None
    assert submit_input(body) == serializer_values(SUBMIT, body)


@pytest.mark.parametrize(
    "change",
    [
        {"score": "2.5"},
        {"score": 5.5},
        {"score": True},
        {"score": 10**400},
        {"time_on_item_ms": 4000.0},
        {"adjustments": -1},
        {"idempotency_key": " k"},
        {"idempotency_key": "a\x00b"},
        {"idempotency_key": "x" * 65},
        {"claim_next_kind": "sts"},
        {"progress_tz": ""},
        {"extra": 1},
    ],
)
def test_anything_else_goes_to_the_serializer(change):
    assert submit_input({**GOOD, **change}) is None
    missing = dict(GOOD)
    del missing["adjustments"]
    assert submit_input(missing) is None
    assert submit_input([GOOD]) is None


@pytest.mark.parametrize("body", [{"slot_id": "12", "text": "Un chien \u2028 court", "n": 1.5, "none": None}, None])
@pytest.mark.parametrize("status", [200, 201, 204])
def test_a_json_answer_has_the_bytes_and_headers_of_a_drf_response(body, status):
    from rest_framework.renderers import JSONRenderer
    from rest_framework.response import Response

    from annotation.apis.rating_cycle import JsonAnswer

    drf = Response(body, status=status)
    drf.accepted_renderer, drf.accepted_media_type, drf.renderer_context = JSONRenderer(), "application/json", {}
    drf.render()
    ours = JsonAnswer(body, status=status)
    assert JsonAnswer(body).status_code == 200
    assert (ours.status_code, ours.content, ours.data) == (drf.status_code, drf.content, body)
    assert ours.get("Content-Type") == drf.get("Content-Type")
