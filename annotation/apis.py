"""Thin API views: parse, call one service or selector, serialize."""

from django.db import transaction
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import selectors
from annotation.models import Job, Modality
from annotation.roles import IsAdmin
from annotation.services import job_create
from annotation.tasks import run_import_job
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


def _enqueue(job: Job) -> None:
    transaction.on_commit(lambda: run_import_job.delay(job.id))


class ImportKarpathyApi(APIView):
    """Start a Karpathy JSON import as a background job (admins)."""

    permission_classes = [IsAdmin]
    parser_classes = [MultiPartParser, FormParser]

    class InputSerializer(serializers.Serializer):
        file = serializers.FileField()
        name = serializers.SlugField()
        images_root = serializers.CharField(required=False, allow_blank=True, default="")
        image_url_prefix = serializers.CharField(required=False, allow_blank=True, default="")
        splits = serializers.ListField(child=serializers.CharField(), required=False, default=list)
        key_prefix = serializers.CharField(required=False, allow_blank=True, default="")

    @extend_schema(request=InputSerializer, responses={202: JobSerializer})
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        params = {k: v for k, v in data.validated_data.items() if k != "file"}
        params["path"] = upload_store(data.validated_data["file"], suffix_hint=".json")
        with transaction.atomic():
            job = job_create(kind=Job.Kind.IMPORT_KARPATHY, params=params, created_by=request.user)
            _enqueue(job)
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


class ImportEmbeddingsApi(APIView):
    """Start an embeddings import as a background job (admins)."""

    permission_classes = [IsAdmin]
    parser_classes = [MultiPartParser, FormParser]

    class InputSerializer(serializers.Serializer):
        dataset = serializers.CharField()
        space = serializers.SlugField()
        modality = serializers.ChoiceField(choices=Modality.values)
        vectors = serializers.FileField()
        ids = serializers.FileField()
        model_name = serializers.CharField(required=False, allow_blank=True, default="")

    @extend_schema(request=InputSerializer, responses={202: JobSerializer})
    def post(self, request):
        data = self.InputSerializer(data=request.data)
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
        with transaction.atomic():
            job = job_create(kind=Job.Kind.IMPORT_EMBEDDINGS, params=params, created_by=request.user)
            _enqueue(job)
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


class JobDetailApi(APIView):
    permission_classes = [IsAdmin]

    @extend_schema(responses=JobSerializer)
    def get(self, request, job_id: int):
        return Response(JobSerializer(selectors.job_get(job_id=job_id)).data)
