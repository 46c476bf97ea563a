"""The rater API: claim, heartbeat, submit, skip, flag; the rater's progress and own
ratings; and the task kinds a rater is qualified for (admins)."""

import dataclasses

from django.conf import settings
from django.utils import timezone
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import serving as queue
from annotation.apis.fields import (
    OpaqueIdField,
    SharedFieldsMixin,
    StrictFloatField,
    StrictIntegerField,
    datetime_text,
    rater_ids,
)
from annotation.apis.rating_cycle import JsonAnswer, JsonOnlyMixin, claim_input, read_body, submit_input
from annotation.apis.rating_progress import PROGRESS_TZ_HELP, RaterProgressSerializer, progress_answer, progress_ask
from annotation.catalog import selectors
from annotation.core.cxc import KINDS
from annotation.core.roles import IsAdmin, IsRater
from annotation.models import FlagReason, Modality, TaskKind
from annotation.people import accounts
from annotation.people import selectors as people_selectors
from annotation.rating import policy
from annotation.rating import progress as rater_reads
from config.openapi import error_response

# The slot actions refuse with 409 a slot the rater held until another rater took it, or
# one they already rated (annotation/serving/slots.py not_held_error).
# The kinds the rating endpoints serve and take: the CxC tasks. A failure's review (REV)
# has endpoints of its own (annotation.apis.reviews), which store its marks.
RATING_KIND_CHOICES = [(kind, TaskKind(kind).label) for kind in KINDS]

SLOT_TAKEN = error_response("Your lease expired and another rater took the slot, or you already rated it.")


class ItemSerializer(serializers.Serializer):
    type = serializers.ChoiceField(choices=Modality.choices)
    text = serializers.CharField(allow_null=True, help_text="Caption text (captions only).")
    url = serializers.CharField(allow_null=True, help_text="Image URL (images only).")
    width = serializers.IntegerField(allow_null=True)
    height = serializers.IntegerField(allow_null=True)


class AssignmentSerializer(SharedFieldsMixin, serializers.Serializer):
    slot_id = OpaqueIdField("slot", help_text="The slot's opaque id, for its URLs (heartbeat, submit, skip, flag).")
    pair_id = OpaqueIdField("pair")
    dataset = serializers.CharField()
    kind = serializers.ChoiceField(choices=TaskKind.choices)
    lease_expires_at = serializers.DateTimeField()
    lease_ttl_seconds = serializers.SerializerMethodField()
    heartbeat_seconds = serializers.SerializerMethodField(help_text="Send a heartbeat this often while rating.")
    resumed = serializers.BooleanField(help_text="The rater already held this slot (page reload).")
    items = serializers.SerializerMethodField(help_text="STS: two captions; SIS: two images; SITS: caption, image.")

    # The views answer with assignment_answer; this serializer describes it (OpenAPI).
    def get_lease_ttl_seconds(self, obj) -> int:
        return settings.LEASE_TTL_SECONDS

    def get_heartbeat_seconds(self, obj) -> int:
        return max(5, settings.LEASE_TTL_SECONDS // 3)

    # Plain dicts: a nested serializer per item costs more than the claim's query.
    @extend_schema_field(ItemSerializer(many=True))
    def get_items(self, obj) -> list[dict]:
        return [dataclasses.asdict(item) for item in obj.items]


def assignment_answer(assignment, answer_tz=None) -> dict:
    """What ``AssignmentSerializer`` answers for ``assignment``, built directly: the claim
    and the submit's next pair are the rating cycle, and walking DRF's fields cost more
    than the claim's own query (tests/annotation/apis/test_shared_fields.py keeps both equal).
    ``answer_tz``: the current time zone when the caller looked it up (``datetime_text``).
    With the "answer" shortcut off (RATING_SHORTCUTS_OFF) the serializer answers."""
    if "answer" in settings.RATING_SHORTCUTS_OFF:
        return dict(AssignmentSerializer(assignment).data)
    ids = rater_ids()
    ttl = settings.LEASE_TTL_SECONDS
    return {
        "slot_id": str(ids.encode("slot", assignment.slot_id)),
        "pair_id": str(ids.encode("pair", assignment.pair_id)),
        "dataset": assignment.dataset,
        "kind": assignment.kind,
        "lease_expires_at": datetime_text(assignment.lease_expires_at, answer_tz),
        "lease_ttl_seconds": ttl,
        "heartbeat_seconds": max(5, ttl // 3),
        "resumed": assignment.resumed,
        "items": [
            {"type": item.type, "text": item.text, "url": item.url, "width": item.width, "height": item.height}
            for item in assignment.items
        ],
    }


def submit_answer(result, answer_tz=None) -> dict:
    """What ``RatingSubmitApi.RatingSubmitOutputSerializer`` answers for a stored rating,
    built directly, as ``assignment_answer`` (tests/annotation/apis/test_shared_fields.py)."""
    if "answer" in settings.RATING_SHORTCUTS_OFF:
        return dict(RatingSubmitApi.RatingSubmitOutputSerializer(result).data)
    ids = rater_ids()
    return {
        "rating_id": str(ids.encode("rating", result.rating_id)),
        "pair_id": str(ids.encode("pair", result.pair_id)),
        "slot_id": str(ids.encode("slot", result.slot_id)),
        "created_at": datetime_text(result.created_at, answer_tz),
        "replayed": result.replayed,
    }


class ClaimAnswerSerializer(AssignmentSerializer):
    progress = RaterProgressSerializer(required=False, help_text="Present when progress_tz was given.")


class RatingClaimApi(JsonOnlyMixin, APIView):
    """Claim the next pair to rate (raters). Returns the held pair again after a reload;
    204 when nothing is left for you."""

    permission_classes = [IsRater]

    class RatingClaimInputSerializer(SharedFieldsMixin, serializers.Serializer):
        kind = serializers.ChoiceField(
            choices=RATING_KIND_CHOICES, required=False, allow_null=True, default=None, help_text="Only this task kind."
        )
        progress_tz = serializers.CharField(required=False, max_length=64, help_text=PROGRESS_TZ_HELP)

    @extend_schema(
        request=RatingClaimInputSerializer,
        responses={
            200: ClaimAnswerSerializer,
            204: None,
            409: error_response("Another claim of yours is in progress; try again."),
        },
    )
    def post(self, request, dataset: str):
        values = read_body(claim_input, self.RatingClaimInputSerializer, request.data)
        return claim_answer(request.user, dataset=dataset, values=values)


def claim_answer(rater, *, dataset: str, values: dict) -> JsonAnswer:
    """The claim's answer for the body's ``values`` (DRF's view and the token fast path's)."""
    tz_name = values.get("progress_tz")
    # A bad time zone is refused before anything is leased.
    ask = None if tz_name is None else progress_ask(rater, dataset, tz_name)
    read = None if ask is None else ask.claim_read
    assignment = policy.slot_claim(rater=rater, dataset=dataset, kind=values["kind"], read=read)
    if assignment is None:
        return JsonAnswer(None, status=status.HTTP_204_NO_CONTENT)
    answer_tz = timezone.get_current_timezone()
    body = assignment_answer(assignment, answer_tz)
    if tz_name is not None:
        body["progress"] = progress_answer(
            rater, dataset, tz_name, field="progress_tz", answer_tz=answer_tz, ask=ask, claimed=assignment
        )
    return JsonAnswer(body)


class SubmissionFieldsSerializer(SharedFieldsMixin, serializers.Serializer):
    """What every submission of a score sends (a rating, a review): the score, how it was
    given, and the client's idempotency key."""

    score = StrictFloatField(min_value=queue.SCORE_MIN, max_value=queue.SCORE_MAX, help_text="Continuous 0-5.")
    time_on_item_ms = StrictIntegerField(min_value=0, max_value=queue.MAX_TIME_ON_ITEM_MS)
    time_to_first_move_ms = StrictIntegerField(
        min_value=0, allow_null=True, help_text="null when the slider was never moved."
    )
    adjustments = StrictIntegerField(min_value=0, max_value=queue.MAX_ADJUSTMENTS, help_text="Slider moves.")
    idempotency_key = serializers.CharField(
        max_length=queue.MAX_IDEMPOTENCY_KEY, help_text="Chosen by the client, e.g. a UUID per item."
    )


class LeaseSerializer(serializers.Serializer):
    slot_id = OpaqueIdField("slot")
    lease_expires_at = serializers.DateTimeField()


class SlotHeartbeatApi(APIView):
    """Keep the lease on the slot you are rating (also renews a lease that expired while
    nobody else took the slot)."""

    permission_classes = [IsRater]

    @extend_schema(request=None, responses={200: LeaseSerializer, 409: SLOT_TAKEN})
    def post(self, request, dataset: str, slot_id: int):
        expires = policy.slot_heartbeat(rater=request.user, dataset=dataset, slot_id=slot_id)
        return Response(LeaseSerializer({"slot_id": slot_id, "lease_expires_at": expires}).data)


class RatingSubmitApi(JsonOnlyMixin, APIView):
    """Submit your rating of the slot you hold. 201 when stored; 200 with the stored
    rating when the same idempotency key was submitted before; 409 when your lease
    expired and another rater took the slot.

    With ``claim_next_kind`` the answer also carries ``next``: the next pair of that kind
    claimed for you (null when none is left), so the page shows it without another round
    trip."""

    permission_classes = [IsRater]

    class RatingSubmitInputSerializer(SubmissionFieldsSerializer):
        claim_next_kind = serializers.ChoiceField(
            choices=RATING_KIND_CHOICES, required=False, help_text="Also claim your next pair of this kind."
        )
        progress_tz = serializers.CharField(required=False, max_length=64, help_text=PROGRESS_TZ_HELP)

    class RatingSubmitOutputSerializer(SharedFieldsMixin, serializers.Serializer):
        rating_id = OpaqueIdField("rating")
        pair_id = OpaqueIdField("pair")
        slot_id = OpaqueIdField("slot")
        created_at = serializers.DateTimeField()
        replayed = serializers.BooleanField(help_text="An earlier submission with this key was returned.")

    class RatingSubmitAndNextOutputSerializer(RatingSubmitOutputSerializer):
        next = AssignmentSerializer(allow_null=True, help_text="Present when claim_next_kind was given.")
        progress = RaterProgressSerializer(required=False, help_text="Present when progress_tz was given.")

    @extend_schema(
        request=RatingSubmitInputSerializer,
        responses={
            201: RatingSubmitAndNextOutputSerializer,
            200: RatingSubmitAndNextOutputSerializer,
            409: error_response("Your lease expired and another rater took the slot, or you rated this pair already."),
        },
    )
    def post(self, request, dataset: str, slot_id: int):
        values = read_body(submit_input, self.RatingSubmitInputSerializer, request.data)
        return submit_answer_for(request.user, dataset=dataset, slot_id=slot_id, values=values)


def submit_answer_for(rater, *, dataset: str, slot_id: int, values: dict) -> JsonAnswer:
    """The submit's answer for the body's ``values`` (DRF's view and the token fast path's)."""
    values = dict(values)
    next_kind = values.pop("claim_next_kind", None)
    tz_name = values.pop("progress_tz", None)
    # A bad time zone is refused before anything is stored.
    ask = None if tz_name is None else progress_ask(rater, dataset, tz_name)
    submission = {"rater": rater, "dataset": dataset, "slot_id": slot_id, **values}
    answer_tz = timezone.get_current_timezone()
    assignment = None
    if next_kind is None:
        result = policy.rating_submit(**submission)
        body = submit_answer(result, answer_tz)
    else:
        read = None if ask is None else ask.claim_read
        result, assignment = policy.rating_submit_and_claim_next(next_kind=next_kind, read=read, **submission)
        body = submit_answer(result, answer_tz)
        body["next"] = assignment_answer(assignment, answer_tz) if assignment is not None else None
    if tz_name is not None:
        body["progress"] = progress_answer(
            rater, dataset, tz_name, field="progress_tz", answer_tz=answer_tz, ask=ask, claimed=assignment
        )
    return JsonAnswer(body, status=status.HTTP_200_OK if result.replayed else status.HTTP_201_CREATED)


class SlotSkipApi(APIView):
    """Pass on the pair you hold: the slot goes back to the queue and you will not be
    served this pair again."""

    permission_classes = [IsRater]

    class SlotSkipOutputSerializer(serializers.Serializer):
        slot_id = OpaqueIdField("slot")
        pair_id = OpaqueIdField("pair")

    @extend_schema(request=None, responses={200: SlotSkipOutputSerializer, 409: SLOT_TAKEN})
    def post(self, request, dataset: str, slot_id: int):
        pair_id = policy.slot_skip(rater=request.user, dataset=dataset, slot_id=slot_id)
        return Response(self.SlotSkipOutputSerializer({"slot_id": slot_id, "pair_id": pair_id}).data)


class SlotFlagApi(APIView):
    """Report the pair you hold (or rated) to the admins: broken image, unreadable
    caption, inappropriate, other (with a note). A held slot goes back to the queue."""

    permission_classes = [IsRater]

    class SlotFlagInputSerializer(serializers.Serializer):
        reason = serializers.ChoiceField(choices=FlagReason.choices)
        note = serializers.CharField(required=False, allow_blank=True, default="", max_length=queue.MAX_FLAG_NOTE)

    class SlotFlagOutputSerializer(serializers.Serializer):
        id = OpaqueIdField("flag")
        pair_id = OpaqueIdField("pair")
        reason = serializers.CharField()
        note = serializers.CharField()
        created_at = serializers.DateTimeField()

    @extend_schema(request=SlotFlagInputSerializer, responses={201: SlotFlagOutputSerializer, 409: SLOT_TAKEN})
    def post(self, request, dataset: str, slot_id: int):
        data = self.SlotFlagInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        flag = policy.slot_flag(rater=request.user, dataset=dataset, slot_id=slot_id, **data.validated_data)
        return Response(self.SlotFlagOutputSerializer(flag).data, status=status.HTTP_201_CREATED)


class RaterRatingListApi(APIView):
    """Your own ratings on a dataset, newest first (page back with ?before=<id>)."""

    permission_classes = [IsRater]

    class RaterRatingListParamsSerializer(serializers.Serializer):
        before = OpaqueIdField("rating", required=False, help_text="The id of the oldest rating of the last page.")
        limit = serializers.IntegerField(required=False, min_value=1, max_value=500, default=50)

    class RaterRatingListOutputSerializer(serializers.Serializer):
        id = OpaqueIdField("rating")
        pair_id = OpaqueIdField("pair")
        kind = serializers.CharField()
        score = serializers.FloatField()
        time_on_item_ms = serializers.IntegerField()
        time_to_first_move_ms = serializers.IntegerField(allow_null=True)
        adjustments = serializers.IntegerField()
        created_at = serializers.DateTimeField()

    @extend_schema(
        parameters=[RaterRatingListParamsSerializer], responses={200: RaterRatingListOutputSerializer(many=True)}
    )
    def get(self, request, dataset: str):
        # A plain dict, not the QueryDict: DRF reads an empty form value of an optional
        # field as "left out", while the schema (and a client) means an integer.
        params = self.RaterRatingListParamsSerializer(data=request.query_params.dict())
        params.is_valid(raise_exception=True)
        policy.participation(rater=request.user, dataset=dataset)  # who: a participant reads their study only
        ratings = rater_reads.rater_rating_list(
            rater=request.user,
            dataset=dataset,
            before_id=params.validated_data.get("before"),
            limit=params.validated_data["limit"],
        )
        return Response(self.RaterRatingListOutputSerializer(ratings, many=True).data)


_QUALIFICATION_DATASET_HELP = (
    "A dataset's name: the kinds granted in that dataset alone. Left out: the kinds granted in every "
    "dataset. A rater may rate a kind in a dataset when either grants it."
)


class RaterQualificationsApi(APIView):
    """The task kinds a rater may be served (admins), per dataset or in every dataset:
    GET to read, PUT to set exactly (the other scope's grants stay)."""

    permission_classes = [IsAdmin]

    class RaterQualificationsParamsSerializer(serializers.Serializer):
        dataset = serializers.CharField(required=False, help_text=_QUALIFICATION_DATASET_HELP)

    class RaterQualificationsKindsSerializer(serializers.Serializer):
        kinds = serializers.ListField(child=serializers.ChoiceField(choices=TaskKind.choices), allow_empty=True)
        dataset = serializers.CharField(required=False, allow_null=True, help_text=_QUALIFICATION_DATASET_HELP)

    @extend_schema(
        parameters=[RaterQualificationsParamsSerializer], responses={200: RaterQualificationsKindsSerializer}
    )
    def get(self, request, username: str):
        params = self.RaterQualificationsParamsSerializer(data=request.query_params.dict())
        params.is_valid(raise_exception=True)
        dataset = params.validated_data.get("dataset")
        kinds = people_selectors.user_qualification_kinds(username=username, dataset=dataset)
        return Response({"kinds": kinds, "dataset": dataset})

    @extend_schema(request=RaterQualificationsKindsSerializer, responses={200: RaterQualificationsKindsSerializer})
    def put(self, request, username: str):
        data = self.RaterQualificationsKindsSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        rater = people_selectors.user_get(username=username)
        name = data.validated_data.get("dataset")
        dataset = selectors.dataset_get(name=name) if name is not None else None
        kinds = accounts.qualifications_set(rater=rater, kinds=data.validated_data["kinds"], dataset=dataset)
        return Response({"kinds": kinds, "dataset": name})
