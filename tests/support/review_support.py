"""The crowd's review of retrieval failures in tests: an explained evaluation job of the
hand-built split (two models failing the same six queries alike: 12 failures, 6 pairs),
raters qualified for reviews, and a review's submission through the API."""

from __future__ import annotations

import itertools

from tests.factories import UserFactory
from tests.support.export_data import client_for

_KEYS = itertools.count()


def explained_job_id(dataset, django_capture_on_commit_callbacks) -> int:
    """A succeeded explained evaluation job of the hand-built split with models one and two."""
    model = {"image_space": "image-model", "caption_space": "caption-model", "joint": True}
    payload = {
        "dataset": dataset.name,
        "split": "val",
        "models": [{"name": "one", **model}, {"name": "two", **model}],
        "audited": False,
        "explain": True,
        "size_threshold": 0.05,
    }
    with django_capture_on_commit_callbacks(execute=True):
        answer = client_for("researcher").post("/api/evaluations/", payload, format="json")
    assert answer.status_code == 202, answer.content
    return answer.json()["id"]


def reviewer():
    """A rater qualified for reviews only, and their API client."""
    from rest_framework.test import APIClient

    user = UserFactory(roles=["rater"], qualified_for=["REV"])
    client = APIClient()
    client.force_authenticate(user)
    return user, client


def review_body(score: float = 2.5, marks=("object_class",), **values) -> dict:
    body = {
        "score": score,
        "time_on_item_ms": 9000,
        "time_to_first_move_ms": 1200,
        "adjustments": 2,
        "idempotency_key": f"review-{next(_KEYS)}",
        "marks": list(marks),
    }
    return body | values


def review_claim(client, dataset):
    return client.post(f"/api/rate/{dataset.name}/review/claim/", {}, format="json")


def review_submit(client, dataset, slot_id: str, body: dict):
    return client.post(f"/api/rate/{dataset.name}/review/{slot_id}/submit/", body, format="json")


def review_all(client, dataset, score_of=lambda claimed: 2.5, marks_of=lambda claimed: ["object_class"]) -> int:
    """Claim and submit reviews until none is left for this rater; how many were stored."""
    stored = 0
    while (claimed := review_claim(client, dataset)).status_code == 200:
        item = claimed.json()
        answer = review_submit(client, dataset, item["slot_id"], review_body(score_of(item), marks_of(item)))
        assert answer.status_code == 201, answer.content
        stored += 1
    assert claimed.status_code == 204, claimed.content
    return stored
