"""The rater's progress: the progress URL's answer, and the progress the claim and submit
answers carry when the rating page asks with ``progress_tz`` (read by the claim statement
itself when it can: ``rater_reads.rater_progress_ask``)."""

from __future__ import annotations

import dataclasses
import zoneinfo

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.apis.fields import OpaqueIdField, datetime_text, rater_ids
from annotation.core.roles import IsRater
from annotation.people.crowd import quota
from annotation.rating import policy
from annotation.rating import progress as rater_reads


class StudyProgressSerializer(serializers.Serializer):
    items_done = serializers.IntegerField(
        help_text="Items rated since joining, gold items included: what the quota counts."
    )
    quota = serializers.IntegerField(help_text="Items of the study's quota.")


class RaterProgressSerializer(serializers.Serializer):
    dataset = serializers.CharField()
    kinds = serializers.ListField(child=serializers.CharField(), help_text="Task kinds you are qualified for.")
    ratings_today = serializers.IntegerField()
    pairs_left = serializers.IntegerField(
        help_text="Pairs of your kinds left for you: the one you hold and those you may still be served."
    )
    pairs_left_by_kind = serializers.DictField(child=serializers.IntegerField(), help_text="pairs_left per kind.")
    day_starts_at = serializers.DateTimeField()
    held_slot_id = OpaqueIdField("slot", allow_null=True)
    held_until = serializers.DateTimeField(allow_null=True)
    study = StudyProgressSerializer(
        allow_null=True, help_text="A participant's items rated of their study's quota; null for raters."
    )


# Asked for with ``progress_tz``: the claim and submit answers carry the rater's progress,
# so the rating page updates its progress line without a request of its own.
PROGRESS_TZ_HELP = (
    "Also answer with your progress (as the progress URL answers it), 'today' in this IANA "
    "time zone, e.g. Europe/Berlin."
)


class RaterProgressApi(APIView):
    """Your progress on a dataset: ratings today, pairs left for you, the slot you hold;
    for a study participant also ``study``: items rated of the quota."""

    permission_classes = [IsRater]

    @extend_schema(
        parameters=[OpenApiParameter("tz", str, description="IANA time zone for 'today', e.g. Europe/Berlin")],
        responses={200: RaterProgressSerializer},
    )
    def get(self, request, dataset: str):
        return Response(progress_answer(request.user, dataset, request.query_params.get("tz")))


def progress_answer(
    rater,
    dataset: str,
    tz_name: str | None,
    *,
    field: str = "tz",
    answer_tz=None,
    ask: rater_reads.ProgressAsk | None = None,
    claimed=None,
) -> dict:
    """The rater's progress on ``dataset`` as the progress API answers it ("today" in the
    IANA time zone ``tz_name``; ``field`` names it in an error; ``answer_tz`` as in
    ``assignment_answer``; ``ask`` and ``claimed``, the assignment it was handed to, as
    ``rater_reads.rater_progress``'s)."""
    tz = _time_zone(tz_name, field=field)
    # Who: a participant reads their study only.
    participant = policy.participation(rater=rater, dataset=dataset)
    progress = rater_reads.rater_progress(rater=rater, dataset=dataset, tz=tz, ask=ask, claimed=claimed)
    study = None if participant is None else quota.study_progress(participant)
    return progress_data(progress, study, answer_tz)


def progress_data(progress: rater_reads.RaterProgress, study: dict | None, answer_tz=None) -> dict:
    """What ``RaterProgressSerializer`` answers, built directly: the rating page asks for
    progress with every claim and submit, and DRF's copies of the serializer's fields
    cost more than the progress statement (tests/annotation/apis/test_shared_fields.py keeps
    both equal). With the "answer" shortcut off (RATING_SHORTCUTS_OFF) the serializer answers."""
    if "answer" in settings.RATING_SHORTCUTS_OFF:
        return dict(RaterProgressSerializer({**dataclasses.asdict(progress), "study": study}).data)
    held = progress.held_slot_id
    return {
        "dataset": progress.dataset,
        "kinds": [str(kind) for kind in progress.kinds],
        "ratings_today": int(progress.ratings_today),
        "pairs_left": int(progress.pairs_left),
        "pairs_left_by_kind": {str(kind): int(n) for kind, n in progress.pairs_left_by_kind.items()},
        "day_starts_at": datetime_text(progress.day_starts_at, answer_tz),
        "held_slot_id": None if held is None else str(rater_ids().encode("slot", held)),
        "held_until": None if progress.held_until is None else datetime_text(progress.held_until, answer_tz),
        "study": None if study is None else {"items_done": int(study["items_done"]), "quota": int(study["quota"])},
    }


def progress_ask(rater, dataset: str, tz_name: str) -> rater_reads.ProgressAsk:
    """The progress a claim may read for the page (``rater_reads.rater_progress_ask``);
    raises ValidationError for an unknown time zone."""
    return rater_reads.rater_progress_ask(rater=rater, dataset=dataset, tz=_time_zone(tz_name, field="progress_tz"))


def _time_zone(name: str | None, *, field: str = "tz"):
    if not name:
        return None
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValidationError(
            {field: [f"unknown time zone {name!r}; use an IANA name such as Europe/Berlin"]}
        ) from None
