"""The rating cycle over HTTP: claim, heartbeat, submit, skip, flag and progress, every
bad input a 4xx with a clear message and nothing stored; the OpenAPI schema; the same
cycle on the embedded SQLite mode."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from annotation.models import Flag, PairSkip, Rating, RatingSlot, SlotState
from tests.factories import DatasetFactory, SplitFactory, UserFactory
from tests.support import queue_support
from tests.support.queue_support import (
    TTL,
    api_claim,
    client_for,
    queue_pairs,
    rate_url,
    rater_client,
    submit_kwargs,
)
from tests.support.rating_support import api_id, db_id

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("auth_way")]

split = queue_support.split  # a split with three SIS pairs queued
auth_way = queue_support.auth_way  # each test with a token (fast path) and forced (DRF)


def test_claim_heartbeat_submit_cycle(split, clock):
    user, client = rater_client()
    response = api_claim(client, split.dataset)
    assert response.status_code == 200
    body = response.json()
    assert body["kind"] == "SIS"
    assert body["resumed"] is False
    assert body["lease_ttl_seconds"] == TTL
    assert body["heartbeat_seconds"] == TTL // 3
    assert [item["type"] for item in body["items"]] == ["image", "image"]
    assert all(item["url"].startswith("https://images.example.org/") for item in body["items"])
    slot_id = body["slot_id"]

    assert api_claim(client, split.dataset).json()["resumed"] is True
    clock.advance(100)
    beat = client.post(rate_url(split.dataset, "heartbeat", slot_id))
    assert beat.status_code == 200
    assert beat.json()["slot_id"] == slot_id

    response = client.post(rate_url(split.dataset, "submit", slot_id), submit_kwargs("uuid-1", 2.75), format="json")
    assert response.status_code == 201
    stored = response.json()
    assert stored["replayed"] is False
    rating = Rating.objects.get(pk=db_id("rating", stored["rating_id"]))
    assert (
        rating.rater_id,
        rating.score,
        rating.time_on_item_ms,
        rating.time_to_first_move_ms,
        rating.adjustments,
    ) == (
        user.id,
        2.75,
        4000,
        800,
        2,
    )
    replay = client.post(rate_url(split.dataset, "submit", slot_id), submit_kwargs("uuid-1", 2.75), format="json")
    assert replay.status_code == 200
    assert replay.json()["rating_id"] == stored["rating_id"]
    assert replay.json()["replayed"] is True
    assert Rating.objects.count() == 1


def test_claim_returns_204_when_nothing_is_left(clock):
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=1, ratings_per_pair=1)
    _, first = rater_client()
    _, second = rater_client()
    assert api_claim(first, split.dataset).status_code == 200
    response = api_claim(second, split.dataset)
    assert response.status_code == 204
    assert response.content == b""


def test_expired_lease_taken_by_another_gives_409(clock):
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=1)
    _, alice = rater_client()
    slot_id = api_claim(alice, split.dataset).json()["slot_id"]
    clock.advance(TTL + 1)
    _, bob = rater_client()
    assert api_claim(bob, split.dataset).json()["slot_id"] == slot_id  # the stranded slot goes first
    response = alice.post(rate_url(split.dataset, "submit", slot_id), submit_kwargs("late"), format="json")
    assert response.status_code == 409
    assert response.json()["detail"] == (
        "your lease on this rating slot expired and it was claimed by another rater; claim the next pair"
    )
    assert Rating.objects.count() == 0


BAD_SUBMISSIONS = [
    ({"score": 5.5}, "score"),
    ({"score": -1}, "score"),
    ({"score": "3.5"}, "score: A valid number is required."),
    ({"score": "high"}, "score: A valid number is required."),
    ({"score": True}, "score: A valid number is required."),
    ({"score": None}, "score: This field may not be null."),
    ({"score": [3]}, "score: A valid number is required."),
    ({"time_on_item_ms": "12"}, "time_on_item_ms: A valid integer is required."),
    ({"time_on_item_ms": -5}, "time_on_item_ms"),
    ({"time_on_item_ms": 10.5}, "time_on_item_ms: A valid integer is required."),
    ({"adjustments": -1}, "adjustments"),
    ({"time_to_first_move_ms": 99_999}, "time_to_first_move_ms must be between 0 and time_on_item_ms"),
    ({"idempotency_key": ""}, "idempotency_key: This field may not be blank."),
    ({"idempotency_key": "k" * 65}, "idempotency_key"),
]


@pytest.mark.parametrize(("change", "message"), BAD_SUBMISSIONS)
def test_bad_submission_is_400_naming_the_field_and_stores_nothing(split, clock, change, message):
    _, client = rater_client()
    slot_id = api_claim(client, split.dataset).json()["slot_id"]
    response = client.post(rate_url(split.dataset, "submit", slot_id), submit_kwargs("k") | change, format="json")
    assert response.status_code == 400
    assert message in response.json()["detail"]
    assert Rating.objects.count() == 0
    assert RatingSlot.objects.get(pk=db_id("slot", slot_id)).state == SlotState.LEASED


@pytest.mark.parametrize(
    "missing", ["score", "time_on_item_ms", "time_to_first_move_ms", "adjustments", "idempotency_key"]
)
def test_missing_field_is_400(split, clock, missing):
    _, client = rater_client()
    slot_id = api_claim(client, split.dataset).json()["slot_id"]
    body = submit_kwargs("k")
    del body[missing]
    response = client.post(rate_url(split.dataset, "submit", slot_id), body, format="json")
    assert response.status_code == 400
    assert response.json()["detail"] == f"{missing}: This field is required."
    assert Rating.objects.count() == 0


@pytest.mark.parametrize("raw", ['{"score": NaN}', '{"score": Infinity}', "{not json", '"a string"', "[1, 2]"])
def test_non_json_numbers_and_bodies_are_400(split, clock, raw):
    _, client = rater_client()
    slot_id = api_claim(client, split.dataset).json()["slot_id"]
    body = raw
    if raw.startswith('{"score"'):
        body = (
            raw[:-1]
            + ', "time_on_item_ms": 1, "time_to_first_move_ms": null, "adjustments": 0, "idempotency_key": "k"}'
        )
    response = client.post(rate_url(split.dataset, "submit", slot_id), body, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["detail"]
    assert Rating.objects.count() == 0


def test_slot_of_another_dataset_or_not_held(split, clock):
    other = SplitFactory()
    queue_pairs(split=other)
    _, alice = rater_client()
    bob_user, bob = rater_client()
    slot_id = api_claim(alice, split.dataset).json()["slot_id"]
    response = alice.post(rate_url(other.dataset, "submit", slot_id), submit_kwargs("a"), format="json")
    assert response.status_code == 404
    assert response.json()["detail"] == f"this rating slot is not in dataset {other.dataset.name!r}"
    response = bob.post(rate_url(split.dataset, "submit", slot_id), submit_kwargs("b"), format="json")
    assert response.status_code == 403
    assert "you do not hold" in response.json()["detail"]
    for action in ("heartbeat", "skip"):
        assert bob.post(rate_url(split.dataset, action, slot_id)).status_code == 403
    unknown = api_id("slot", 10**9)
    assert alice.post(rate_url(split.dataset, "submit", unknown), submit_kwargs("a"), format="json").status_code == 404
    assert api_claim(alice, DatasetFactory.build(name="missing")).status_code == 404
    assert Rating.objects.count() == 0
    assert RatingSlot.objects.get(pk=db_id("slot", slot_id)).rater_id != bob_user.pk


@pytest.mark.parametrize("slot_id", [2**63, 2**63 - 1, 10**30, "012"])
def test_a_slot_id_beyond_64_bits_is_a_404_like_any_unknown_slot(split, clock, slot_id):
    """Beyond 63 bits no opaque id matches the URL; 2**63 - 1 is the opaque id of a slot
    that does not exist; the answers name no database id either way."""
    _, client = rater_client()
    api_claim(client, split.dataset)
    answers = {
        "submit": client.post(rate_url(split.dataset, "submit", slot_id), submit_kwargs("big"), format="json"),
        "heartbeat": client.post(rate_url(split.dataset, "heartbeat", slot_id)),
        "skip": client.post(rate_url(split.dataset, "skip", slot_id)),
        "flag": client.post(rate_url(split.dataset, "flag", slot_id), {"reason": "broken_image"}, format="json"),
    }
    for action, response in answers.items():
        assert response.status_code == 404, (action, response.content)
        assert response.json()["code"] == "not_found"
        detail = response.json()["detail"]
        assert detail == "no such rating slot" or detail.startswith("no API endpoint at"), detail
        assert "#" not in detail
    assert Rating.objects.count() == 0 and Flag.objects.count() == 0 and PairSkip.objects.count() == 0


def test_skip_and_flag(split, clock):
    user, client = rater_client()
    first = api_claim(client, split.dataset).json()
    response = client.post(rate_url(split.dataset, "skip", first["slot_id"]))
    assert response.status_code == 200
    assert response.json() == {"slot_id": first["slot_id"], "pair_id": first["pair_id"]}
    assert PairSkip.objects.filter(rater=user, pair_id=db_id("pair", first["pair_id"])).exists()

    second = api_claim(client, split.dataset).json()
    assert second["pair_id"] != first["pair_id"]
    response = client.post(
        rate_url(split.dataset, "flag", second["slot_id"]),
        {"reason": "broken_image", "note": "grey box"},
        format="json",
    )
    assert response.status_code == 201
    assert response.json()["reason"] == "broken_image"
    flag = Flag.objects.get()
    assert (flag.pair_id, flag.rater_id, flag.note) == (db_id("pair", second["pair_id"]), user.id, "grey box")
    assert response.json()["id"] == api_id("flag", flag.pk)
    assert RatingSlot.objects.get(pk=db_id("slot", second["slot_id"])).state == SlotState.OPEN

    bad = client.post(rate_url(split.dataset, "flag", second["slot_id"]), {"reason": "boring"}, format="json")
    assert bad.status_code == 400
    assert "reason" in bad.json()["detail"]
    assert Flag.objects.count() == 1


def test_progress_and_own_ratings(split, clock):
    user, client = rater_client(kinds=["SIS"])
    _, other = rater_client()
    for c, key in ((client, "mine"), (other, "theirs")):
        slot_id = api_claim(c, split.dataset).json()["slot_id"]
        assert c.post(rate_url(split.dataset, "submit", slot_id), submit_kwargs(key), format="json").status_code == 201
    progress = client.get(rate_url(split.dataset, "progress"), {"tz": "Asia/Tokyo"})
    assert progress.status_code == 200
    body = progress.json()
    assert (body["ratings_today"], body["pairs_left"], body["kinds"], body["held_slot_id"]) == (1, 2, ["SIS"], None)
    assert body["day_starts_at"] == "2026-03-01T15:00:00Z"  # midnight of 2 March in Tokyo
    bad_tz = client.get(rate_url(split.dataset, "progress"), {"tz": "Mars/Olympus"})
    assert bad_tz.status_code == 400
    assert "unknown time zone" in bad_tz.json()["detail"]

    ratings = client.get(rate_url(split.dataset, "ratings")).json()
    assert [r["kind"] for r in ratings] == ["SIS"]
    assert Rating.objects.get(pk=db_id("rating", ratings[0]["id"])).rater_id == user.id
    assert client.get(rate_url(split.dataset, "ratings"), {"limit": 0}).status_code == 400
    # An empty value is not an integer, as the schema says (not "leave it out").
    empty = client.get(rate_url(split.dataset, "ratings"), {"limit": "", "before": ratings[0]["id"]})
    assert empty.status_code == 400
    assert empty.json()["errors"] == {"limit": ["A valid integer is required."]}


def test_claim_and_submit_answer_with_the_progress_when_asked(split, clock):
    _, client = rater_client(kinds=["SIS"])
    plain = api_claim(client, split.dataset).json()
    assert "progress" not in plain  # API clients that do not ask pay nothing for it
    claimed = client.post(rate_url(split.dataset, "claim"), {"progress_tz": "Asia/Tokyo"}, format="json").json()
    assert claimed["slot_id"] == plain["slot_id"]
    progress = claimed["progress"]
    assert (progress["ratings_today"], progress["pairs_left"], progress["held_slot_id"]) == (0, 3, plain["slot_id"])
    assert progress["day_starts_at"] == "2026-03-01T15:00:00Z"
    assert progress["study"] is None

    body = {**submit_kwargs("with-progress"), "claim_next_kind": "SIS", "progress_tz": "Asia/Tokyo"}
    stored = client.post(rate_url(split.dataset, "submit", plain["slot_id"]), body, format="json")
    assert stored.status_code == 201
    answer = stored.json()
    # Read after the rating and the next claim: one rated, the next pair held.
    assert answer["progress"]["ratings_today"] == 1
    assert answer["progress"]["pairs_left"] == 2
    assert answer["progress"]["held_slot_id"] == answer["next"]["slot_id"]
    assert answer["progress"] == client.get(rate_url(split.dataset, "progress"), {"tz": "Asia/Tokyo"}).json()


def test_a_bad_progress_time_zone_is_refused_before_anything_is_leased_or_stored(split, clock):
    user, client = rater_client(kinds=["SIS"])
    refused = client.post(rate_url(split.dataset, "claim"), {"progress_tz": "Mars/Olympus"}, format="json")
    assert refused.status_code == 400
    assert "progress_tz" in refused.json()["errors"]
    assert not RatingSlot.objects.filter(rater=user, state=SlotState.LEASED).exists()
    slot_id = api_claim(client, split.dataset).json()["slot_id"]
    body = {**submit_kwargs("bad-tz"), "progress_tz": "Mars/Olympus"}
    refused = client.post(rate_url(split.dataset, "submit", slot_id), body, format="json")
    assert refused.status_code == 400
    assert "unknown time zone" in refused.json()["detail"]
    assert not Rating.objects.filter(rater=user).exists()


def test_openapi_schema_lists_the_rater_api_without_warnings(split):
    out = io.StringIO()
    call_command("spectacular", "--validate", "--fail-on-warn", "--format", "openapi-json", stdout=out)
    schema = json.loads(out.getvalue())
    for path in (
        "/api/auth/token/",
        "/api/rate/{dataset}/claim/",
        "/api/rate/{dataset}/slots/{slot_id}/heartbeat/",
        "/api/rate/{dataset}/slots/{slot_id}/submit/",
        "/api/rate/{dataset}/slots/{slot_id}/skip/",
        "/api/rate/{dataset}/slots/{slot_id}/flag/",
        "/api/rate/{dataset}/progress/",
        "/api/rate/{dataset}/ratings/",
        "/media/images/{dataset}/{key}",
    ):
        assert path in schema["paths"], path
    submit_body = schema["components"]["schemas"]["RatingSubmitInput"]
    assert set(submit_body["required"]) == {
        "score",
        "time_on_item_ms",
        "time_to_first_move_ms",
        "adjustments",
        "idempotency_key",
    }
    assert submit_body["properties"]["score"]["maximum"] == 5
    assert "items" in schema["components"]["schemas"]["Assignment"]["properties"]
    submit_params = schema["paths"]["/api/rate/{dataset}/slots/{slot_id}/submit/"]["post"]["parameters"]
    [slot_param] = [param for param in submit_params if param["name"] == "slot_id"]
    assert slot_param["schema"] == {"type": "string", "pattern": "^[0-9]{1,19}$", "description": "An opaque id."}
    assert schema["components"]["schemas"]["Assignment"]["properties"]["slot_id"]["type"] == "string"
    served = client_for(UserFactory()).get("/api/schema/", {"format": "json"})
    assert served.status_code == 200


EMBEDDED_SCRIPT = """
from knox.models import AuthToken
from rest_framework.test import APIClient
from annotation.models import Rating
from tests.support.queue_support import queue_pairs, submit_kwargs
from tests.factories import SplitFactory, UserFactory

split = SplitFactory()
queue_pairs(split=split, n_pairs=2, ratings_per_pair=1)
users = [UserFactory(roles=["rater"], qualified_for=["SIS"]) for _ in range(3)]
clients = [APIClient(HTTP_AUTHORIZATION="Token " + AuthToken.objects.create(user=u)[1]) for u in users]
base = "/api/rate/" + split.dataset.name
slots = []
for client in clients[:2]:
    answer = client.post(base + "/claim/", {}, format="json")
    assert answer.status_code == 200, answer.content
    slots.append(answer.json()["slot_id"])
assert clients[0].post(base + "/claim/", {}, format="json").json()["resumed"] is True
assert clients[2].post(base + "/claim/", {}, format="json").status_code == 204
for client, slot in zip(clients, slots):
    body = submit_kwargs("key-" + str(slot))
    assert client.post(base + "/slots/%s/submit/" % slot, body, format="json").status_code == 201
    assert client.post(base + "/slots/%s/submit/" % slot, body, format="json").status_code == 200
assert Rating.objects.count() == 2
print("EMBEDDED-OK")
"""


@pytest.mark.slow
def test_embedded_sqlite_mode_claims_and_submits(tmp_path):
    """The rating API on the embedded SQLite mode, from migrations up, in a subprocess."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[3]
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "RUN_MODE")}
    env |= {
        "RUN_MODE": "embedded",
        "SQLITE_PATH": str(tmp_path / "db.sqlite3"),
        "VAR_DIR": str(tmp_path / "var"),
        "SECRET_KEY": "embedded-test",
    }
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "--no-input", "-v", "0"], cwd=repo, env=env, check=True)
    done = subprocess.run(
        [*manage, "shell", "-v", "0", "-c", EMBEDDED_SCRIPT], cwd=repo, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("EMBEDDED-OK")


def test_the_rating_cycle_answers_json_whatever_the_accept_header_asks(split, clock):
    _, client = rater_client()
    url = rate_url(split.dataset, "claim")
    answer = client.post(url, {}, format="json", HTTP_ACCEPT="text/html")
    assert answer.status_code == 200 and answer["Content-Type"] == "application/json"
    assert json.loads(answer.content)["resumed"] is False
    refused = client.post(url, {"kind": "XYZ"}, format="json", HTTP_ACCEPT="text/html")
    assert refused.status_code == 400 and refused["Content-Type"] == "application/json"
    assert "kind" in json.loads(refused.content)["errors"]
