"""Rater pauses in a dataset (admins): list, pause a rater, lift a pause."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.catalog import selectors
from annotation.core.errors import NotFound
from annotation.core.roles import IsAdmin
from annotation.models import RaterPause
from annotation.people import selectors as people_selectors
from annotation.quality.pauses import MAX_PAUSE_TEXT, rater_pause, rater_pause_lift
from config.openapi import error_response


class RaterPauseSerializer(serializers.ModelSerializer):
    dataset = serializers.CharField(source="dataset.name")
    rater = serializers.CharField(source="rater.username")
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    lifted_by = serializers.CharField(source="lifted_by.username", allow_null=True, default=None)

    class Meta:
        model = RaterPause
        fields = [
            "id",
            "dataset",
            "rater",
            "reason",
            "automatic",
            "created_by",
            "created_at",
            "lifted_at",
            "lifted_by",
            "lift_note",
        ]


class PauseListApi(APIView):
    """A dataset's pauses, active ones first then newest; or pause a rater: they claim
    nothing in the dataset (their rating page says an admin will review) until lifted."""

    permission_classes = [IsAdmin]

    class PauseCreateSerializer(serializers.Serializer):
        rater = serializers.CharField(max_length=150, help_text="Username of the rater to pause.")
        reason = serializers.CharField(max_length=MAX_PAUSE_TEXT)

    @extend_schema(responses={200: RaterPauseSerializer(many=True), 404: error_response("No such dataset.")})
    def get(self, request, dataset: str):
        rows = (
            RaterPause.objects.filter(dataset=selectors.dataset_get(name=dataset))
            .select_related("dataset", "rater", "created_by", "lifted_by")
            .order_by("-lifted_at", "-created_at", "-id")
        )
        return Response(RaterPauseSerializer(rows, many=True).data)

    @extend_schema(
        request=PauseCreateSerializer,
        responses={
            201: RaterPauseSerializer,
            400: error_response("No reason, or the user is an admin (admins, staff and superusers are never paused)."),
            404: error_response("No such dataset or user."),
            409: error_response("The rater is paused already."),
        },
    )
    def post(self, request, dataset: str):
        data = self.PauseCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        pause = rater_pause(
            rater=people_selectors.user_get(username=data.validated_data["rater"]),
            dataset=selectors.dataset_get(name=dataset),
            reason=data.validated_data["reason"],
            created_by=request.user,
        )
        return Response(RaterPauseSerializer(pause).data, status=status.HTTP_201_CREATED)


class PauseLiftApi(APIView):
    """Lift a pause: the rater may claim pairs again."""

    permission_classes = [IsAdmin]

    class PauseLiftSerializer(serializers.Serializer):
        note = serializers.CharField(max_length=MAX_PAUSE_TEXT, required=False, allow_blank=True, default="")

    @extend_schema(
        request=PauseLiftSerializer,
        responses={
            200: RaterPauseSerializer,
            404: error_response("No such dataset or pause."),
            409: error_response("The pause was lifted already."),
        },
    )
    def post(self, request, dataset: str, pause_id: int):
        data = self.PauseLiftSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        found = selectors.dataset_get(name=dataset)
        if not RaterPause.objects.filter(pk=pause_id, dataset=found).exists():
            raise NotFound(f"no pause #{pause_id} in {found.name}")
        pause = rater_pause_lift(pause_id=pause_id, lifted_by=request.user, note=data.validated_data["note"])
        return Response(RaterPauseSerializer(pause).data)
