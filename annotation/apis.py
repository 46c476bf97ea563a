"""Thin API views: parse, call one service or selector, serialize."""

import dataclasses
import mimetypes
import zoneinfo

from django.conf import settings
from django.contrib.auth import authenticate
from django.db import transaction
from django.http import FileResponse
from django.urls import reverse
from django.utils.cache import get_conditional_response
from django.utils.http import http_date
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import export, queue, selectors
from annotation.exporters import FORMATS
from annotation.jobs import import_job_start, jobs_fail_orphaned
from annotation.models import FlagReason, Job, Modality, TaskKind
from annotation.roles import ROLES, IsAdmin, IsRater, IsResearcher
from annotation.tasks import run_export_job
from annotation.uploads import upload_store


class JobSerializer(serializers.ModelSerializer):
    class Meta:
        model = Job
        fields = [
            "id",
            "kind",
            "status",
            "params",
            "result",
            "error",
            "progress_done",
            "progress_total",
            "created_at",
            "started_at",
            "finished_at",
        ]


class DatasetSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    description = serializers.CharField()
    image_count = serializers.IntegerField()
    caption_count = serializers.IntegerField()


class DatasetListApi(APIView):
    @extend_schema(responses=DatasetSerializer(many=True))
    def get(self, request):
        return Response(DatasetSerializer(selectors.dataset_list(), many=True).data)


class ImportKarpathyApi(APIView):
    """Start a Karpathy JSON import as a background job (admins)."""

    permission_classes = [IsAdmin]
    parser_classes = [MultiPartParser, FormParser]

    class ImportKarpathyInputSerializer(serializers.Serializer):
        file = serializers.FileField()
        name = serializers.SlugField()
        images_root = serializers.CharField(required=False, allow_blank=True, default="")
        image_url_prefix = serializers.CharField(required=False, allow_blank=True, default="")
        splits = serializers.ListField(child=serializers.CharField(), required=False, default=list)
        key_prefix = serializers.CharField(required=False, allow_blank=True, default="")

    @extend_schema(request=ImportKarpathyInputSerializer, responses={202: JobSerializer})
    def post(self, request):
        data = self.ImportKarpathyInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        params = {k: v for k, v in data.validated_data.items() if k != "file"}
        params["path"] = upload_store(data.validated_data["file"], suffix_hint=".json")
        job = import_job_start(kind=Job.Kind.IMPORT_KARPATHY, params=params, created_by=request.user)
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


class ImportEmbeddingsApi(APIView):
    """Start an embeddings import as a background job (admins)."""

    permission_classes = [IsAdmin]
    parser_classes = [MultiPartParser, FormParser]

    class ImportEmbeddingsInputSerializer(serializers.Serializer):
        dataset = serializers.CharField()
        space = serializers.SlugField()
        modality = serializers.ChoiceField(choices=Modality.values)
        vectors = serializers.FileField()
        ids = serializers.FileField()
        model_name = serializers.CharField(required=False, allow_blank=True, default="")

    @extend_schema(request=ImportEmbeddingsInputSerializer, responses={202: JobSerializer})
    def post(self, request):
        data = self.ImportEmbeddingsInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        params = {
            "dataset": values["dataset"],
            "space": values["space"],
            "modality": values["modality"],
            "model_name": values["model_name"],
            "vectors_path": upload_store(values["vectors"], suffix_hint=".npy"),
            "ids_path": upload_store(values["ids"], suffix_hint=".txt"),
        }
        job = import_job_start(kind=Job.Kind.IMPORT_EMBEDDINGS, params=params, created_by=request.user)
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


class JobDetailApi(APIView):
    permission_classes = [IsAdmin]

    @extend_schema(responses=JobSerializer)
    def get(self, request, job_id: int):
        jobs_fail_orphaned()
        return Response(JobSerializer(selectors.job_get(job_id=job_id)).data)


# --- exports (researchers) -------------------------------------------------------------


class ExportFileSerializer(serializers.Serializer):
    name = serializers.CharField()
    split = serializers.CharField(allow_null=True)
    task = serializers.CharField(allow_null=True)
    rows = serializers.IntegerField(allow_null=True, help_text="Data rows (pairs or judgments); null for JSON files.")
    bytes = serializers.IntegerField()
    sha256 = serializers.CharField()
    url = serializers.SerializerMethodField()

    def get_url(self, entry) -> str:
        path = reverse("export-file", args=[self.context["job_id"], entry["name"]])
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path


class ExportJobSerializer(serializers.ModelSerializer):
    dataset = serializers.SerializerMethodField()
    splits = serializers.SerializerMethodField()
    formats = serializers.SerializerMethodField()
    pairs = serializers.SerializerMethodField()
    ratings = serializers.SerializerMethodField()
    files = serializers.SerializerMethodField()

    class Meta:
        model = Job
        fields = [
            "id",
            "status",
            "dataset",
            "splits",
            "formats",
            "progress_done",
            "progress_total",
            "error",
            "pairs",
            "ratings",
            "files",
            "created_at",
            "started_at",
            "finished_at",
        ]

    def get_dataset(self, job) -> str:
        return job.params.get("dataset", "")

    def get_splits(self, job) -> list[str]:
        return job.params.get("splits", [])

    def get_formats(self, job) -> list[str]:
        return job.params.get("formats", [])

    def get_pairs(self, job) -> int | None:
        return job.result.get("pairs")

    def get_ratings(self, job) -> int | None:
        return job.result.get("ratings")

    @extend_schema_field(ExportFileSerializer(many=True))
    def get_files(self, job) -> list[dict]:
        context = {**self.context, "job_id": job.id}
        return ExportFileSerializer(export.export_files(job=job), many=True, context=context).data


class ExportRequestSerializer(serializers.Serializer):
    dataset = serializers.CharField()
    splits = serializers.ListField(
        child=serializers.CharField(), required=False, default=list, help_text="Default: every split with pairs."
    )
    formats = serializers.ListField(
        child=serializers.ChoiceField(choices=FORMATS), required=False, default=lambda: list(FORMATS)
    )


class ExportListApi(APIView):
    """List export jobs (newest first), or start one (researchers and admins). The export
    runs as a background job; poll it, then download its files."""

    permission_classes = [IsResearcher]

    @extend_schema(
        parameters=[OpenApiParameter("dataset", OpenApiTypes.STR, description="Only exports of this dataset.")],
        responses=ExportJobSerializer(many=True),
    )
    def get(self, request):
        jobs_fail_orphaned()
        jobs = export.export_job_list(dataset_name=request.query_params.get("dataset") or None)
        return Response(ExportJobSerializer(jobs, many=True, context={"request": request}).data)

    @extend_schema(request=ExportRequestSerializer, responses={202: ExportJobSerializer})
    def post(self, request):
        data = ExportRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        with transaction.atomic():
            job = export.export_job_create(
                dataset_name=values["dataset"],
                splits=values["splits"],
                formats=values["formats"],
                created_by=request.user,
            )
            transaction.on_commit(lambda: run_export_job.delay(job.id))
        return Response(ExportJobSerializer(job, context={"request": request}).data, status=status.HTTP_202_ACCEPTED)


class ExportDetailApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(responses=ExportJobSerializer)
    def get(self, request, job_id: int):
        jobs_fail_orphaned()
        job = export.export_job_get(job_id=job_id)
        return Response(ExportJobSerializer(job, context={"request": request}).data)


class ExportFileListApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(responses=ExportFileSerializer(many=True))
    def get(self, request, job_id: int):
        job = export.export_job_get(job_id=job_id)
        files = export.export_files(job=job)
        return Response(ExportFileSerializer(files, many=True, context={"request": request, "job_id": job.id}).data)


class ExportFileDownloadApi(APIView):
    """Download one file of a finished export."""

    permission_classes = [IsResearcher]

    @extend_schema(responses={(200, "application/octet-stream"): OpenApiTypes.BINARY})
    def get(self, request, job_id: int, name: str):
        path = export.export_file_path(job=export.export_job_get(job_id=job_id), name=name)
        return FileResponse(path.open("rb"), as_attachment=True, filename=name)


# --- tokens ----------------------------------------------------------------------------


class TokenApi(APIView):
    """API tokens: POST username + password for your token (created on first use);
    DELETE (authenticated with the token) revokes it. The browser uses session login."""

    class TokenInputSerializer(serializers.Serializer):
        username = serializers.CharField()
        password = serializers.CharField(style={"input_type": "password"}, trim_whitespace=False)

    class TokenOutputSerializer(serializers.Serializer):
        token = serializers.CharField()
        username = serializers.CharField()
        roles = serializers.ListField(child=serializers.CharField())

    def get_permissions(self):
        return [AllowAny()] if self.request.method == "POST" else [IsAuthenticated()]

    def get_authenticators(self):
        # Obtaining a token needs no session, so no CSRF token either.
        if self.request is not None and self.request.method == "POST":
            return []
        return super().get_authenticators()

    @extend_schema(request=TokenInputSerializer, responses={200: TokenOutputSerializer}, auth=[])
    def post(self, request):
        data = self.TokenInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        user = authenticate(
            request._request, username=data.validated_data["username"], password=data.validated_data["password"]
        )
        if user is None:
            raise ValidationError({"password": ["wrong username or password, or the account is disabled"]})
        token, _ = Token.objects.get_or_create(user=user)
        roles = sorted(user.groups.filter(name__in=ROLES).values_list("name", flat=True))
        return Response(
            self.TokenOutputSerializer({"token": token.key, "username": user.get_username(), "roles": roles}).data
        )

    @extend_schema(request=None, responses={204: None})
    def delete(self, request):
        Token.objects.filter(user=request.user).delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- the rater API -----------------------------------------------------------------------


class StrictFloatField(serializers.FloatField):
    """A JSON number: strings and booleans are refused rather than converted."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictIntegerField(serializers.IntegerField):
    """A JSON whole number: strings, booleans and fractions are refused."""

    def to_internal_value(self, data):
        if (
            isinstance(data, bool)
            or not isinstance(data, int | float)
            or (isinstance(data, float) and not data.is_integer())
        ):
            self.fail("invalid")
        return super().to_internal_value(int(data))


class ItemSerializer(serializers.Serializer):
    type = serializers.ChoiceField(choices=Modality.choices)
    text = serializers.CharField(allow_null=True, help_text="Caption text (captions only).")
    url = serializers.CharField(allow_null=True, help_text="Image URL (images only).")
    width = serializers.IntegerField(allow_null=True)
    height = serializers.IntegerField(allow_null=True)


class AssignmentSerializer(serializers.Serializer):
    slot_id = serializers.IntegerField()
    pair_id = serializers.IntegerField()
    dataset = serializers.CharField()
    kind = serializers.ChoiceField(choices=TaskKind.choices)
    lease_expires_at = serializers.DateTimeField()
    lease_ttl_seconds = serializers.SerializerMethodField()
    heartbeat_seconds = serializers.SerializerMethodField(help_text="Send a heartbeat this often while rating.")
    resumed = serializers.BooleanField(help_text="The rater already held this slot (page reload).")
    items = serializers.SerializerMethodField(help_text="STS: two captions; SIS: two images; SITS: caption, image.")

    def get_lease_ttl_seconds(self, obj) -> int:
        return settings.LEASE_TTL_SECONDS

    def get_heartbeat_seconds(self, obj) -> int:
        return max(5, settings.LEASE_TTL_SECONDS // 3)

    # Plain dicts: a nested serializer per item costs more than the claim's query.
    @extend_schema_field(ItemSerializer(many=True))
    def get_items(self, obj) -> list[dict]:
        return [dataclasses.asdict(item) for item in obj.items]


class RatingClaimApi(APIView):
    """Claim the next pair to rate (raters). Returns the held pair again after a reload;
    204 when nothing is left for you."""

    permission_classes = [IsRater]

    class RatingClaimInputSerializer(serializers.Serializer):
        kind = serializers.ChoiceField(
            choices=TaskKind.choices, required=False, allow_null=True, default=None, help_text="Only this task kind."
        )

    @extend_schema(request=RatingClaimInputSerializer, responses={200: AssignmentSerializer, 204: None})
    def post(self, request, dataset: str):
        data = self.RatingClaimInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        assignment = queue.slot_claim(rater=request.user, dataset=dataset, kind=data.validated_data["kind"])
        if assignment is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(AssignmentSerializer(assignment).data)


class LeaseSerializer(serializers.Serializer):
    slot_id = serializers.IntegerField()
    lease_expires_at = serializers.DateTimeField()


class SlotHeartbeatApi(APIView):
    """Keep the lease on the slot you are rating (also renews a lease that expired while
    nobody else took the slot)."""

    permission_classes = [IsRater]

    @extend_schema(request=None, responses={200: LeaseSerializer})
    def post(self, request, dataset: str, slot_id: int):
        expires = queue.slot_heartbeat(rater=request.user, dataset=dataset, slot_id=slot_id)
        return Response(LeaseSerializer({"slot_id": slot_id, "lease_expires_at": expires}).data)


class RatingSubmitApi(APIView):
    """Submit your rating of the slot you hold. 201 when stored; 200 with the stored
    rating when the same idempotency key was submitted before; 409 when your lease
    expired and another rater took the slot.

    With ``claim_next_kind`` the answer also carries ``next``: the next pair of that kind
    claimed for you (null when none is left), so the page shows it without another round
    trip."""

    permission_classes = [IsRater]

    class RatingSubmitInputSerializer(serializers.Serializer):
        score = StrictFloatField(min_value=queue.SCORE_MIN, max_value=queue.SCORE_MAX, help_text="Continuous 0-5.")
        time_on_item_ms = StrictIntegerField(min_value=0, max_value=queue.MAX_TIME_ON_ITEM_MS)
        time_to_first_move_ms = StrictIntegerField(
            min_value=0, allow_null=True, help_text="null when the slider was never moved."
        )
        adjustments = StrictIntegerField(min_value=0, max_value=queue.MAX_ADJUSTMENTS, help_text="Slider moves.")
        idempotency_key = serializers.CharField(
            max_length=queue.MAX_IDEMPOTENCY_KEY, help_text="Chosen by the client, e.g. a UUID per item."
        )
        claim_next_kind = serializers.ChoiceField(
            choices=TaskKind.choices, required=False, help_text="Also claim your next pair of this kind."
        )

    class RatingSubmitOutputSerializer(serializers.Serializer):
        rating_id = serializers.IntegerField()
        pair_id = serializers.IntegerField()
        slot_id = serializers.IntegerField()
        created_at = serializers.DateTimeField()
        replayed = serializers.BooleanField(help_text="An earlier submission with this key was returned.")

    class RatingSubmitAndNextOutputSerializer(RatingSubmitOutputSerializer):
        next = AssignmentSerializer(allow_null=True, help_text="Present when claim_next_kind was given.")

    @extend_schema(
        request=RatingSubmitInputSerializer,
        responses={201: RatingSubmitAndNextOutputSerializer, 200: RatingSubmitAndNextOutputSerializer},
    )
    def post(self, request, dataset: str, slot_id: int):
        data = self.RatingSubmitInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        next_kind = data.validated_data.pop("claim_next_kind", None)
        submission = {"rater": request.user, "dataset": dataset, "slot_id": slot_id, **data.validated_data}
        if next_kind is None:
            result = queue.rating_submit(**submission)
            body = self.RatingSubmitOutputSerializer(result).data
        else:
            result, assignment = queue.rating_submit_and_claim_next(next_kind=next_kind, **submission)
            body = self.RatingSubmitOutputSerializer(result).data
            body["next"] = AssignmentSerializer(assignment).data if assignment is not None else None
        return Response(body, status=status.HTTP_200_OK if result.replayed else status.HTTP_201_CREATED)


class SlotSkipApi(APIView):
    """Pass on the pair you hold: the slot goes back to the queue and you will not be
    served this pair again."""

    permission_classes = [IsRater]

    class SlotSkipOutputSerializer(serializers.Serializer):
        slot_id = serializers.IntegerField()
        pair_id = serializers.IntegerField()

    @extend_schema(request=None, responses={200: SlotSkipOutputSerializer})
    def post(self, request, dataset: str, slot_id: int):
        pair_id = queue.slot_skip(rater=request.user, dataset=dataset, slot_id=slot_id)
        return Response(self.SlotSkipOutputSerializer({"slot_id": slot_id, "pair_id": pair_id}).data)


class SlotFlagApi(APIView):
    """Report the pair you hold (or rated) to the admins: broken image, unreadable
    caption, inappropriate, other (with a note). A held slot goes back to the queue."""

    permission_classes = [IsRater]

    class SlotFlagInputSerializer(serializers.Serializer):
        reason = serializers.ChoiceField(choices=FlagReason.choices)
        note = serializers.CharField(required=False, allow_blank=True, default="", max_length=queue.MAX_FLAG_NOTE)

    class SlotFlagOutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        pair_id = serializers.IntegerField()
        reason = serializers.CharField()
        note = serializers.CharField()
        created_at = serializers.DateTimeField()

    @extend_schema(request=SlotFlagInputSerializer, responses={201: SlotFlagOutputSerializer})
    def post(self, request, dataset: str, slot_id: int):
        data = self.SlotFlagInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        flag = queue.slot_flag(rater=request.user, dataset=dataset, slot_id=slot_id, **data.validated_data)
        return Response(self.SlotFlagOutputSerializer(flag).data, status=status.HTTP_201_CREATED)


class RaterProgressApi(APIView):
    """Your progress on a dataset: ratings today, pairs left for you, the slot you hold."""

    permission_classes = [IsRater]

    class RaterProgressOutputSerializer(serializers.Serializer):
        dataset = serializers.CharField()
        kinds = serializers.ListField(child=serializers.CharField(), help_text="Task kinds you are qualified for.")
        ratings_today = serializers.IntegerField()
        pairs_left = serializers.IntegerField(help_text="Pairs of your kinds still needing ratings, not rated by you.")
        pairs_left_by_kind = serializers.DictField(child=serializers.IntegerField(), help_text="pairs_left per kind.")
        day_starts_at = serializers.DateTimeField()
        held_slot_id = serializers.IntegerField(allow_null=True)
        held_until = serializers.DateTimeField(allow_null=True)

    @extend_schema(
        parameters=[OpenApiParameter("tz", str, description="IANA time zone for 'today', e.g. Europe/Berlin")],
        responses={200: RaterProgressOutputSerializer},
    )
    def get(self, request, dataset: str):
        tz = _time_zone(request.query_params.get("tz"))
        progress = selectors.rater_progress(rater=request.user, dataset=dataset, tz=tz)
        return Response(self.RaterProgressOutputSerializer(progress).data)


def _time_zone(name: str | None):
    if not name:
        return None
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValidationError({"tz": [f"unknown time zone {name!r}; use an IANA name such as Europe/Berlin"]}) from None


class RaterRatingListApi(APIView):
    """Your own ratings on a dataset, newest first (page back with ?before=<id>)."""

    permission_classes = [IsRater]

    class RaterRatingListParamsSerializer(serializers.Serializer):
        before = serializers.IntegerField(required=False, min_value=1)
        limit = serializers.IntegerField(required=False, min_value=1, max_value=500, default=50)

    class RaterRatingListOutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        pair_id = serializers.IntegerField()
        kind = serializers.CharField(source="pair.kind")
        score = serializers.FloatField()
        time_on_item_ms = serializers.IntegerField()
        time_to_first_move_ms = serializers.IntegerField(allow_null=True)
        adjustments = serializers.IntegerField()
        created_at = serializers.DateTimeField()

    @extend_schema(
        parameters=[RaterRatingListParamsSerializer], responses={200: RaterRatingListOutputSerializer(many=True)}
    )
    def get(self, request, dataset: str):
        params = self.RaterRatingListParamsSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        ratings = selectors.rater_rating_list(
            rater=request.user,
            dataset=dataset,
            before_id=params.validated_data.get("before"),
            limit=params.validated_data["limit"],
        )
        return Response(self.RaterRatingListOutputSerializer(ratings, many=True).data)


class RaterQualificationsApi(APIView):
    """The task kinds a rater may be served (admins): GET to read, PUT to set exactly."""

    permission_classes = [IsAdmin]

    class RaterQualificationsKindsSerializer(serializers.Serializer):
        kinds = serializers.ListField(child=serializers.ChoiceField(choices=TaskKind.choices), allow_empty=True)

    @extend_schema(responses={200: RaterQualificationsKindsSerializer})
    def get(self, request, username: str):
        rater = selectors.user_get(username=username)
        return Response({"kinds": selectors.qualification_kinds(rater=rater)})

    @extend_schema(request=RaterQualificationsKindsSerializer, responses={200: RaterQualificationsKindsSerializer})
    def put(self, request, username: str):
        data = self.RaterQualificationsKindsSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        rater = selectors.user_get(username=username)
        kinds = queue.qualifications_set(rater=rater, kinds=data.validated_data["kinds"])
        return Response({"kinds": kinds})


# --- images ------------------------------------------------------------------------------


class ImageFileApi(APIView):
    """An image file of a dataset kept on this server (any signed-in user). Cached by
    the browser and revalidated with Last-Modified / ETag."""

    def perform_content_negotiation(self, request, force=False):
        # The file is the answer whatever the Accept header says; errors are JSON.
        return (JSONRenderer(), JSONRenderer.media_type)

    @extend_schema(responses={(200, "image/*"): OpenApiTypes.BINARY})
    def get(self, request, dataset: str, key: str):
        path = selectors.image_file_get(dataset=dataset, key=key)
        stat = path.stat()
        etag = f'"{stat.st_size:x}-{stat.st_mtime_ns:x}"'
        last_modified = int(stat.st_mtime)
        not_modified = get_conditional_response(request._request, etag=etag, last_modified=last_modified)
        if not_modified is None:
            content_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
            response = FileResponse(path.open("rb"), content_type=content_type)
        else:
            response = not_modified
        response["ETag"] = etag
        response["Last-Modified"] = http_date(last_modified)
        # Private: images are only for signed-in users; a day, then revalidated cheaply.
        response["Cache-Control"] = "private, max-age=86400"
        return response
