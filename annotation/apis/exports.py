"""Exports (researchers and admins): start one, poll it, list and download its files."""

from django.http import FileResponse, StreamingHttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import export
from annotation.apis.fields import StaleRunField
from annotation.core.roles import IsResearcher
from annotation.export import FORMATS
from annotation.jobs.dispatch import JOB_RUNS, export_job_start
from annotation.models import Job
from annotation.runs import selectors as run_selectors
from config.openapi import error_response


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
    archive_url = serializers.SerializerMethodField(help_text="One zip of every file; null until the job succeeded.")
    stale = StaleRunField(JOB_RUNS)

    class Meta:
        model = Job
        fields = [
            "id",
            "status",
            "stale",
            "dataset",
            "splits",
            "formats",
            "progress_done",
            "progress_total",
            "progress_message",
            "error",
            "pairs",
            "ratings",
            "files",
            "archive_url",
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

    def get_archive_url(self, job) -> str | None:
        if not export.export_files(job=job):
            return None
        path = reverse("export-archive", args=[job.id])
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path


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
        jobs = run_selectors.export_job_list(dataset_name=request.query_params.get("dataset") or None)
        return Response(ExportJobSerializer(jobs, many=True, context={"request": request}).data)

    @extend_schema(
        request=ExportRequestSerializer,
        responses={202: ExportJobSerializer, 404: error_response("No dataset of that name.")},
    )
    def post(self, request):
        data = ExportRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        job = export_job_start(
            dataset_name=values["dataset"], splits=values["splits"], formats=values["formats"], created_by=request.user
        )
        return Response(ExportJobSerializer(job, context={"request": request}).data, status=status.HTTP_202_ACCEPTED)


class ExportDetailApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(responses=ExportJobSerializer)
    def get(self, request, job_id: int):
        job = run_selectors.export_job_get(job_id=job_id)
        return Response(ExportJobSerializer(job, context={"request": request}).data)


class ExportFileListApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(responses=ExportFileSerializer(many=True))
    def get(self, request, job_id: int):
        job = run_selectors.export_job_get(job_id=job_id)
        files = export.export_files(job=job)
        return Response(ExportFileSerializer(files, many=True, context={"request": request, "job_id": job.id}).data)


class ExportFileDownloadApi(APIView):
    """Download one file of a finished export: CSV, JSON, JSONL (as NDJSON) or Parquet."""

    permission_classes = [IsResearcher]

    def perform_content_negotiation(self, request, force=False):
        # The file is the answer whatever the Accept header says; errors are JSON.
        return (JSONRenderer(), JSONRenderer.media_type)

    @extend_schema(
        responses={
            # manifest.json and agreement.json are JSON objects; the rest are files as such.
            **{(200, media): OpenApiTypes.BINARY for media in dict.fromkeys(export.MEDIA_TYPES.values())},
            (200, "application/json"): OpenApiTypes.OBJECT,
            409: error_response("The export has not succeeded (yet); its files are not ready."),
        }
    )
    def get(self, request, job_id: int, name: str):
        path = export.export_file_path(job=run_selectors.export_job_get(job_id=job_id), name=name)
        return FileResponse(path.open("rb"), as_attachment=True, filename=name, content_type=export.media_type(name))


class ExportArchiveApi(APIView):
    """Download every file of a finished export as one zip,
    ``<dataset>-export-<id>.zip`` (its files in the folder ``<dataset>-export-<id>/``).
    The zip is made while it is sent: no copy of the export in memory or on disk."""

    permission_classes = [IsResearcher]

    def perform_content_negotiation(self, request, force=False):
        return (JSONRenderer(), JSONRenderer.media_type)

    @extend_schema(
        responses={
            (200, "application/zip"): OpenApiTypes.BINARY,
            404: error_response("No such export job, or one of its files is no longer on disk."),
            409: error_response("The export has not succeeded (yet); its files are not ready."),
        }
    )
    def get(self, request, job_id: int):
        name, chunks = export.export_archive(job=run_selectors.export_job_get(job_id=job_id))
        response = StreamingHttpResponse(chunks, content_type="application/zip")
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response
