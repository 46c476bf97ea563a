"""Datasets, and the imports that create them (admins start them as background jobs)."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.apis.jobs import JobSerializer
from annotation.catalog import selectors
from annotation.catalog.upload_limits import LimitedMultiPartParser
from annotation.catalog.uploads import EMBEDDINGS, KARPATHY, OBJECTS, upload_store, upload_store_all
from annotation.core.roles import IsAdmin, IsTeamMember
from annotation.jobs.dispatch import import_job_start
from annotation.models import Job, Modality
from config.openapi import error_response


class DatasetSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    description = serializers.CharField()
    image_count = serializers.IntegerField()
    caption_count = serializers.IntegerField()


class DatasetListApi(APIView):
    """The datasets (raters, researchers and admins; not crowd participants)."""

    permission_classes = [IsTeamMember]

    @extend_schema(responses=DatasetSerializer(many=True))
    def get(self, request):
        return Response(DatasetSerializer(selectors.dataset_list(), many=True).data)


class ImportKarpathyApi(APIView):
    """Start a Karpathy JSON import as a background job (admins). A file over
    UPLOAD_MAX_KARPATHY_BYTES is refused with 413."""

    permission_classes = [IsAdmin]
    # Files travel in multipart forms only (an urlencoded form cannot carry them).
    parser_classes = [LimitedMultiPartParser]
    upload_kinds = {"file": KARPATHY}

    class ImportKarpathyInputSerializer(serializers.Serializer):
        file = serializers.FileField()
        name = serializers.SlugField()
        images_root = serializers.CharField(required=False, allow_blank=True, default="")
        image_url_prefix = serializers.CharField(required=False, allow_blank=True, default="")
        # Karpathy splits are names such as train, val, test, restval: a name of other
        # characters is refused here rather than by the import job after the upload.
        splits = serializers.ListField(
            child=serializers.SlugField(help_text="A split name of the file, e.g. test."), required=False, default=list
        )
        key_prefix = serializers.CharField(required=False, allow_blank=True, default="")

    @extend_schema(request=ImportKarpathyInputSerializer, responses={202: JobSerializer})
    def post(self, request):
        data = self.ImportKarpathyInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        params = {k: v for k, v in data.validated_data.items() if k != "file"}
        params["path"] = upload_store(data.validated_data["file"], kind=KARPATHY, suffix_hint=".json")
        job = import_job_start(kind=Job.Kind.IMPORT_KARPATHY, params=params, created_by=request.user)
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


class ImportEmbeddingsApi(APIView):
    """Start an embeddings import as a background job (admins). A file over
    UPLOAD_MAX_EMBEDDINGS_BYTES is refused with 413."""

    permission_classes = [IsAdmin]
    # Files travel in multipart forms only (an urlencoded form cannot carry them).
    parser_classes = [LimitedMultiPartParser]
    upload_kinds = {"vectors": EMBEDDINGS, "ids": EMBEDDINGS}

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
            **upload_store_all(
                {
                    "vectors_path": (values["vectors"], EMBEDDINGS, ".npy"),
                    "ids_path": (values["ids"], EMBEDDINGS, ".txt"),
                }
            ),
        }
        job = import_job_start(kind=Job.Kind.IMPORT_EMBEDDINGS, params=params, created_by=request.user)
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


class ImportObjectsApi(APIView):
    """Start an import of object annotations (COCO instances JSON) into a dataset's images
    as a background job (admins). An unknown dataset is refused with 404, a file over
    UPLOAD_MAX_OBJECTS_BYTES with 413."""

    permission_classes = [IsAdmin]
    # Files travel in multipart forms only (an urlencoded form cannot carry them).
    parser_classes = [LimitedMultiPartParser]
    upload_kinds = {"file": OBJECTS}

    class ImportObjectsInputSerializer(serializers.Serializer):
        dataset = serializers.CharField(help_text="The dataset whose images the objects belong to.")
        file = serializers.FileField(help_text="COCO instances JSON: categories, images and annotations.")

    @extend_schema(
        request=ImportObjectsInputSerializer, responses={202: JobSerializer, 404: error_response("No such dataset.")}
    )
    def post(self, request):
        data = self.ImportObjectsInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        # An unknown dataset is named now (404), not by a job that fails later.
        dataset = selectors.dataset_get(name=data.validated_data["dataset"])
        params = {
            "dataset": dataset.name,
            "path": upload_store(data.validated_data["file"], kind=OBJECTS, suffix_hint=".json"),
        }
        job = import_job_start(kind=Job.Kind.IMPORT_OBJECTS, params=params, created_by=request.user)
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)
