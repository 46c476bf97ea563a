"""Evaluations (researchers and admins): score models on a dataset's split with its own
embedding spaces as a background job, poll it, read its comparison, download its files."""

from django.http import FileResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.apis.fields import StaleRunField
from annotation.core.roles import IsResearcher
from annotation.evaluation import failure_pages
from annotation.evaluation import jobs as evaluations
from annotation.evaluation.explain.adversarial import COLOUR_DISTANCE, COLOUR_POOLS
from annotation.jobs.dispatch import JOB_RUNS, evaluation_job_start
from annotation.models import Job
from config.openapi import error_response


class EvaluationFileSerializer(serializers.Serializer):
    name = serializers.CharField()
    bytes = serializers.IntegerField()
    url = serializers.SerializerMethodField()

    def get_url(self, entry) -> str:
        path = reverse("evaluation-file", args=[self.context["job_id"], entry["name"]])
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path


class EvaluationModelSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    image_space = serializers.SlugField(required=False, allow_null=True, default=None)
    caption_space = serializers.SlugField(required=False, allow_null=True, default=None)
    joint = serializers.BooleanField(
        required=False, default=False, help_text="One space for images and captions (a dual encoder)."
    )


class ComparisonRowSerializer(serializers.Serializer):
    section = serializers.CharField()
    task = serializers.CharField()
    positives = serializers.CharField()
    metric = serializers.CharField()
    models = serializers.DictField(
        help_text='Per model: {"value": number or null, "ci": [low, high] or null}; a null value comes with '
        '"unavailable": why it could not be computed.'
    )


class EvaluationJobSerializer(serializers.ModelSerializer):
    number = serializers.IntegerField(
        read_only=True,
        help_text="The evaluation's place in the order evaluations were started, from 1 (the id is a job id, "
        "shared with exports and imports).",
    )
    dataset = serializers.SerializerMethodField()
    split = serializers.SerializerMethodField()
    models = serializers.SerializerMethodField()
    ratings_export = serializers.SerializerMethodField()
    audited = serializers.SerializerMethodField()
    explain = serializers.SerializerMethodField()
    comparison = serializers.SerializerMethodField()
    skipped = serializers.SerializerMethodField()
    items = serializers.SerializerMethodField()
    files = serializers.SerializerMethodField()
    stale = StaleRunField(JOB_RUNS)

    class Meta:
        model = Job
        fields = [
            "id",
            "number",
            "status",
            "stale",
            "dataset",
            "split",
            "models",
            "ratings_export",
            "audited",
            "explain",
            "progress_done",
            "progress_total",
            "progress_message",
            "error",
            "comparison",
            "skipped",
            "items",
            "files",
            "created_at",
            "started_at",
            "finished_at",
        ]

    def get_dataset(self, job) -> str:
        return job.params.get("dataset", "")

    def get_split(self, job) -> str:
        return job.params.get("split", "")

    @extend_schema_field(EvaluationModelSerializer(many=True))
    def get_models(self, job) -> list[dict]:
        return job.params.get("models", [])

    def get_ratings_export(self, job) -> int | None:
        return job.params.get("ratings_export")

    def get_audited(self, job) -> bool:
        return bool(job.params.get("audited"))

    @extend_schema_field(
        serializers.DictField(
            allow_null=True,
            help_text='With explained failures: {"size_threshold": T_D, "adversarial": ...}; null without.',
        )
    )
    def get_explain(self, job) -> dict | None:
        return job.params.get("explain")

    @extend_schema_field(ComparisonRowSerializer(many=True))
    def get_comparison(self, job) -> list[dict]:
        return job.result.get("comparison", [])

    @extend_schema_field(
        serializers.DictField(
            child=serializers.DictField(child=serializers.CharField()),
            help_text="Per model: {task: why it was not evaluated} (empty until the job has succeeded).",
        )
    )
    def get_skipped(self, job) -> dict:
        return job.result.get("skipped", {})

    @extend_schema_field(
        serializers.DictField(
            child=serializers.IntegerField(), help_text='The split\'s {"images": n, "captions": n} once it has run.'
        )
    )
    def get_items(self, job) -> dict:
        return job.result.get("items", {})

    @extend_schema_field(EvaluationFileSerializer(many=True))
    def get_files(self, job) -> list[dict]:
        context = {**self.context, "job_id": job.id}
        return EvaluationFileSerializer(job.result.get("files", []), many=True, context=context).data


class AdversarialSerializer(serializers.Serializer):
    seed = serializers.IntegerField(required=False, default=0, min_value=0, help_text="Seed of the draws.")
    colour_distance = serializers.FloatField(
        required=False,
        default=COLOUR_DISTANCE,
        min_value=0,
        max_value=442,
        help_text="A replacement colour lies more than this sRGB distance away (0-442).",
    )
    colour_pool = serializers.ChoiceField(
        choices=COLOUR_POOLS,
        required=False,
        default="named",
        help_text="Replacement colours from every named colour or from those the captions use.",
    )


class EvaluationRequestSerializer(serializers.Serializer):
    dataset = serializers.CharField()
    split = serializers.CharField()
    models = EvaluationModelSerializer(many=True, help_text="At least one; each names the dataset's stored spaces.")
    ratings_export = serializers.IntegerField(
        required=False, allow_null=True, default=None, help_text="A succeeded export with CxC files: its ratings."
    )
    audited = serializers.BooleanField(required=False, default=True, help_text="Use the split's own ratings too.")
    explain = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Also explain each model's failures: captions ranked against the images' other captions, each "
        "failure's concept metrics over the annotated objects (failures.csv), the global means.",
    )
    size_threshold = serializers.FloatField(
        required=False,
        allow_null=True,
        default=None,
        min_value=0,
        max_value=1,
        help_text="SD's binary threshold T_D, a share of the image's area (default 0.1).",
    )
    adversarial = AdversarialSerializer(
        required=False,
        allow_null=True,
        default=None,
        help_text="With explain: also adversarial queries (an antonym, a colour, a size word changed), re-embedded "
        "by each caption space's own encoder; their settings.",
    )


class EvaluationListApi(APIView):
    """List evaluation jobs (newest first), or start one (researchers and admins)."""

    permission_classes = [IsResearcher]

    @extend_schema(
        parameters=[OpenApiParameter("dataset", OpenApiTypes.STR, description="Only evaluations of this dataset.")],
        responses=EvaluationJobSerializer(many=True),
    )
    def get(self, request):
        jobs = evaluations.evaluation_job_list(dataset_name=request.query_params.get("dataset") or None)
        return Response(EvaluationJobSerializer(jobs, many=True, context={"request": request}).data)

    @extend_schema(
        request=EvaluationRequestSerializer,
        responses={
            202: EvaluationJobSerializer,
            400: error_response("A model names no space, a space of the wrong modality, or a joint space that is not."),
            404: error_response("No such dataset, split, embedding space or export."),
            409: error_response("The export has not succeeded."),
        },
    )
    def post(self, request):
        data = EvaluationRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        job = evaluation_job_start(
            dataset_name=values["dataset"],
            split=values["split"],
            models=[evaluations.ModelSpec(**model) for model in values["models"]],
            ratings_export=values["ratings_export"],
            audited=values["audited"],
            explain=values["explain"],
            size_threshold=values["size_threshold"],
            adversarial=values["adversarial"],
            created_by=request.user,
        )
        job = evaluations.evaluation_job_get(job_id=job.id)  # with its number
        body = EvaluationJobSerializer(job, context={"request": request}).data
        return Response(body, status=status.HTTP_202_ACCEPTED)


class EvaluationDetailApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(responses=EvaluationJobSerializer)
    def get(self, request, job_id: int):
        job = evaluations.evaluation_job_get(job_id=job_id)
        return Response(EvaluationJobSerializer(job, context={"request": request}).data)


class EvaluationFileDownloadApi(APIView):
    """Download ``report.json`` (every figure of every model) or ``comparison.csv``."""

    permission_classes = [IsResearcher]

    def perform_content_negotiation(self, request, force=False):
        return (JSONRenderer(), JSONRenderer.media_type)

    @extend_schema(
        responses={
            (200, "text/csv"): OpenApiTypes.BINARY,
            (200, "application/json"): OpenApiTypes.OBJECT,
            409: error_response("The evaluation has not succeeded (yet)."),
        }
    )
    def get(self, request, job_id: int, name: str):
        path = evaluations.evaluation_file_path(job=evaluations.evaluation_job_get(job_id=job_id), name=name)
        media = evaluations.MEDIA_TYPES[name]
        return FileResponse(path.open("rb"), as_attachment=True, filename=name, content_type=media)


class FailuresQuerySerializer(serializers.Serializer):
    model = serializers.CharField(required=False, default=None, help_text="Default: the first model with failures.")
    sort = serializers.ChoiceField(choices=failure_pages.SORTS, required=False, default="rank")
    descending = serializers.BooleanField(required=False, default=False)
    offset = serializers.IntegerField(min_value=0, max_value=2_147_483_647, required=False, default=0)
    limit = serializers.IntegerField(min_value=1, max_value=failure_pages.PAGE_MAX, required=False, default=20)


class FailurePageSerializer(serializers.Serializer):
    count = serializers.IntegerField(help_text="The model's failures.")
    models = serializers.ListField(child=serializers.CharField(), help_text="The models with failures, in order.")
    rows = serializers.ListField(
        child=serializers.DictField(),
        help_text="The failures file's columns (numbers as numbers, an undefined metric null) with "
        "truth_image_url, retrieved_image_url and review (once queued for review: raters, mean, the share of "
        "raters per mark, the marks a majority ticked; else null).",
    )


class EvaluationFailuresApi(APIView):
    """A page of an explained evaluation's failures, one model's, sorted by rank, a
    concept metric or the crowd's mean review score (researchers and admins)."""

    permission_classes = [IsResearcher]

    @extend_schema(
        parameters=[FailuresQuerySerializer],
        responses={
            200: FailurePageSerializer,
            404: error_response("No such evaluation, no explained failures, or no failures of that model."),
            409: error_response("The evaluation has not succeeded."),
        },
    )
    def get(self, request, job_id: int):
        query = FailuresQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        job = evaluations.evaluation_job_get(job_id=job_id)
        page = failure_pages.failures_page(job=job, **query.validated_data)
        return Response(FailurePageSerializer(page).data)
