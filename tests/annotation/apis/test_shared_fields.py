"""The rating cycle's serializers copy their declared fields shallowly per instance
(annotation.apis.fields.SharedFieldsMixin) instead of re-instantiating every field, and
still validate and answer as DRF's own copies would; the assignment answer, built
directly, equals its serializer's."""

import dataclasses
import json
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone
from rest_framework import fields as drf_fields
from rest_framework import serializers

from annotation.apis.fields import datetime_text
from annotation.apis.rating import (
    AssignmentSerializer,
    RatingClaimApi,
    RatingSubmitApi,
    assignment_answer,
    submit_answer,
)
from annotation.apis.rating_progress import RaterProgressSerializer, progress_data
from annotation.rating.progress import RaterProgress
from annotation.serving.shapes import SubmitResult, assignment_of

SUBMIT_INPUT = RatingSubmitApi.RatingSubmitInputSerializer
GOOD = {"score": 2.5, "time_on_item_ms": 4000, "time_to_first_move_ms": None, "adjustments": 1, "idempotency_key": "k"}


def test_an_instance_re_instantiates_no_field(monkeypatch):
    made = []
    original = drf_fields.Field.__init__

    def counting(self, *args, **kwargs):
        if not isinstance(self, serializers.BaseSerializer):  # the serializer itself is a Field
            made.append(type(self).__name__)
        original(self, *args, **kwargs)

    monkeypatch.setattr(drf_fields.Field, "__init__", counting)
    for serializer in (SUBMIT_INPUT(data=GOOD), RatingClaimApi.RatingClaimInputSerializer(data={})):
        assert serializer.is_valid(), serializer.errors
    assert made == []


def test_instances_bind_copies_of_their_own_and_validate_alike():
    first, second = SUBMIT_INPUT(data=GOOD), SUBMIT_INPUT(data={**GOOD, "score": 9})
    assert first.is_valid()
    assert not second.is_valid()
    assert "score" in second.errors and not first.errors
    assert first.fields["score"] is not second.fields["score"]
    assert first.fields["score"].parent is first and second.fields["score"].parent is second
    assert first.validated_data["score"] == 2.5


@pytest.mark.parametrize(
    "bad",
    [{"score": "2.5"}, {"time_on_item_ms": -1}, {"idempotency_key": "x" * 65}, {"claim_next_kind": "XYZ"}],
)
def test_each_rule_still_refuses(bad):
    serializer = SUBMIT_INPUT(data={**GOOD, **bad})
    assert not serializer.is_valid()
    assert set(serializer.errors) == set(bad)


def test_the_assignment_answer_has_every_declared_field():
    assert set(AssignmentSerializer().fields) == set(AssignmentSerializer._declared_fields)


@pytest.mark.parametrize("kind", ["STS", "SIS", "SITS"])
@pytest.mark.parametrize("resumed", [False, True])
def test_the_built_assignment_answer_equals_the_serializers(kind, resumed, settings):
    settings.LEASE_TTL_SECONDS = 45
    assignment = assignment_of(
        slot_id=123_456,
        pair_id=7,
        lease_expires_at=datetime(2026, 3, 2, 12, 30, 5, 123456, tzinfo=UTC),
        resumed=resumed,
        kind=kind,
        dataset="coco-val",
        images_root="",
        image_url_prefix="https://images.example.org/",
        caption_texts=("A dog runs.", None if kind != "STS" else "A cat sleeps."),
        images=(("img_1.jpg", "val/img_1.jpg", 640, 480), ("img_2.jpg", "val/img_2.jpg", None, None)),
    )
    built = assignment_answer(assignment)
    assert built == dict(AssignmentSerializer(assignment).data)
    assert json.dumps(built)  # plain JSON types only
    assert built["lease_expires_at"] == "2026-03-02T12:30:05.123456Z"
    assert (built["lease_ttl_seconds"], built["heartbeat_seconds"]) == (45, 15)


@pytest.mark.parametrize("replayed", [False, True])
def test_the_built_submit_answer_equals_the_serializers(replayed):
    result = SubmitResult(
        rating_id=99,
        pair_id=7,
        slot_id=123_456,
        created_at=datetime(2026, 3, 2, 12, 30, 5, tzinfo=UTC),
        replayed=replayed,
    )
    built = submit_answer(result)
    assert built == dict(RatingSubmitApi.RatingSubmitOutputSerializer(result).data)
    assert json.dumps(built)


@pytest.mark.parametrize("held", [None, 123_456])
@pytest.mark.parametrize("study", [None, {"items_done": 3, "quota": 40}])
def test_the_built_progress_answer_equals_the_serializers(held, study):
    progress = RaterProgress(
        dataset="coco-val",
        kinds=["SIS", "STS"],
        ratings_today=17,
        pairs_left=9,
        pairs_left_by_kind={"SIS": 9, "STS": 0},
        day_starts_at=datetime(2026, 3, 2, 0, 0, tzinfo=ZoneInfo("Europe/Berlin")),
        held_slot_id=held,
        held_until=None if held is None else datetime(2026, 3, 2, 12, 30, 5, 123456, tzinfo=UTC),
    )
    built = progress_data(progress, study)
    assert built == dict(RaterProgressSerializer({**dataclasses.asdict(progress), "study": study}).data)
    assert json.dumps(built)
    assert built["day_starts_at"] == "2026-03-01T23:00:00Z"
    assert (built["held_slot_id"] is None) == (held is None)


@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin", "America/St_Johns"])
@pytest.mark.parametrize(
    "value",
    [
        datetime(2026, 3, 2, 12, 30, 5, 123456, tzinfo=UTC),
        datetime(2026, 7, 2, 0, 0, tzinfo=ZoneInfo("Asia/Kolkata")),
        datetime(2026, 10, 25, 0, 30, tzinfo=UTC),  # Berlin's clocks go back that night
        datetime(2026, 3, 2, 12, 30, 5),  # naive: the field's own handling
    ],
)
def test_datetime_text_answers_as_drf_in_the_current_time_zone(zone, value):
    with timezone.override(ZoneInfo(zone)):
        expected = drf_fields.DateTimeField().to_representation(value)
        assert datetime_text(value, timezone.get_current_timezone()) == expected
        result = SubmitResult(rating_id=1, pair_id=2, slot_id=3, created_at=value, replayed=False)
        assert submit_answer(result)["created_at"] == expected
