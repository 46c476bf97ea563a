"""Gold pairs and quality settings of a dataset (admins)."""

from django.db import transaction
from django.db.models import Count
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.catalog import selectors
from annotation.catalog.upload_limits import LimitedMultiPartParser
from annotation.catalog.uploads import PAIR_LIST
from annotation.core.roles import IsAdmin
from annotation.models import (
    DEFAULT_PROMOTE_MAX_SD,
    GoldPair,
    QualitySettings,
    TaskKind,
)
from annotation.quality.gold.upload import gold_pairs_promote, gold_pairs_upload
from config.openapi import error_response

LIST_LIMIT = 1000


class GoldCreatedSerializer(serializers.Serializer):
    created = serializers.IntegerField(help_text="Gold pairs added.")


class GoldPairSerializer(serializers.ModelSerializer):
    item1 = serializers.SerializerMethodField()
    item2 = serializers.SerializerMethodField()
    split = serializers.CharField(source="split.name")
    ratings = serializers.IntegerField(source="rating_count", read_only=True)

    class Meta:
        model = GoldPair
        fields = ["id", "kind", "split", "item1", "item2", "gold_score", "explanation", "source", "active", "ratings"]

    def _items(self, gold) -> list[str]:
        keys = [item.key for item in (gold.caption_a, gold.caption_b, gold.image_a, gold.image_b) if item is not None]
        return keys[::-1] if gold.swapped else keys

    def get_item1(self, gold) -> str:
        return self._items(gold)[0]

    def get_item2(self, gold) -> str:
        return self._items(gold)[1]


class GoldListApi(APIView):
    """A dataset's gold pairs (``kind`` and ``active`` filter them), or upload more: a
    CSV with a pair list's id columns (caption1,caption2 / image1,image2 / caption,image),
    ``gold_score`` (0-5) and optionally ``explanation``. One bad row refuses the file."""

    permission_classes = [IsAdmin]
    parser_classes = [LimitedMultiPartParser]
    upload_kinds = {"file": PAIR_LIST}

    class GoldUploadSerializer(serializers.Serializer):
        file = serializers.FileField()

    class GoldListParamsSerializer(serializers.Serializer):
        kind = serializers.ChoiceField(choices=TaskKind.values, required=False)
        active = serializers.ChoiceField(choices=["true", "false"], required=False)

    @extend_schema(
        parameters=[GoldListParamsSerializer],
        responses={
            200: GoldPairSerializer(many=True),
            400: error_response("Bad filter."),
            404: error_response("No such dataset."),
        },
    )
    def get(self, request, dataset: str):
        params = self.GoldListParamsSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        rows = GoldPair.objects.filter(dataset=selectors.dataset_get(name=dataset))
        if "kind" in params.validated_data:
            rows = rows.filter(kind=params.validated_data["kind"])
        if "active" in params.validated_data:
            rows = rows.filter(active=params.validated_data["active"] == "true")
        rows = (
            rows.select_related("split", "caption_a", "caption_b", "image_a", "image_b")
            .annotate(rating_count=Count("ratings"))
            .order_by("id")[:LIST_LIMIT]
        )
        return Response(GoldPairSerializer(rows, many=True).data)

    @extend_schema(
        request={"multipart/form-data": GoldUploadSerializer},
        responses={
            201: GoldCreatedSerializer,
            400: error_response("The file is not a gold pair list; the message names the line and column."),
            404: error_response("No such dataset."),
        },
    )
    def post(self, request, dataset: str):
        data = self.GoldUploadSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        found = selectors.dataset_get(name=dataset)
        upload = data.validated_data["file"]
        # Read where the upload handler left it (bounded), as a stream.
        name = upload.name or "gold.csv"
        created = gold_pairs_upload(dataset=found, stream=upload, name=name, created_by=request.user)
        return Response({"created": created}, status=status.HTTP_201_CREATED)


class GoldPromoteApi(APIView):
    """Make gold pairs of complete pairs whose valid ratings agree (sd <= max_sd)."""

    permission_classes = [IsAdmin]

    class GoldPromoteSerializer(serializers.Serializer):
        kind = serializers.ChoiceField(choices=TaskKind.values)
        max_sd = serializers.FloatField(min_value=0, max_value=5, default=DEFAULT_PROMOTE_MAX_SD)
        limit = serializers.IntegerField(min_value=1, max_value=10_000, default=100)

    @extend_schema(
        request=GoldPromoteSerializer,
        responses={
            201: GoldCreatedSerializer,
            404: error_response("No such dataset."),
        },
    )
    def post(self, request, dataset: str):
        data = self.GoldPromoteSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        created = gold_pairs_promote(
            dataset=selectors.dataset_get(name=dataset), created_by=request.user, **data.validated_data
        )
        return Response({"created": created}, status=status.HTTP_201_CREATED)


class QualitySettingsSerializer(serializers.ModelSerializer):
    class Meta:
        model = QualitySettings
        fields = [
            "gold_one_in",
            "auto_pause",
            "pause_window",
            "pause_max_error",
            "flag_loo_below",
            "flag_gold_error_above",
            "flag_fast_share_above",
            "flag_gold_skip_share_above",
            "flag_noise_above",
        ]
        extra_kwargs = {
            "gold_one_in": {"min_value": 0, "max_value": 100_000},
            "pause_window": {"min_value": 1, "max_value": 1000},
            "pause_max_error": {"min_value": 0, "max_value": 5},
            "flag_loo_below": {"min_value": -1, "max_value": 1},
            "flag_gold_error_above": {"min_value": 0, "max_value": 5},
            "flag_fast_share_above": {"min_value": 0, "max_value": 1},
            "flag_gold_skip_share_above": {"min_value": 0, "max_value": 1},
            "flag_noise_above": {"min_value": 0, "max_value": 5},
        }


class QualitySettingsApi(APIView):
    """A dataset's gold rate, automatic pause and rater-flag thresholds (defaults until
    first set; a null threshold turns that flag check off)."""

    permission_classes = [IsAdmin]

    @extend_schema(responses={200: QualitySettingsSerializer, 404: error_response("No such dataset.")})
    def get(self, request, dataset: str):
        found = selectors.dataset_get(name=dataset)
        current = QualitySettings.objects.filter(dataset=found).first() or QualitySettings(dataset=found)
        return Response(QualitySettingsSerializer(current).data)

    @extend_schema(request=QualitySettingsSerializer, responses={200: QualitySettingsSerializer})
    def put(self, request, dataset: str):
        found = selectors.dataset_get(name=dataset)
        data = QualitySettingsSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        with transaction.atomic():
            current, _ = QualitySettings.objects.update_or_create(dataset=found, defaults=data.validated_data)
        return Response(QualitySettingsSerializer(current).data)
