"""Exclusions of a rater's ratings in a dataset (admins): list, create, read, undo."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.catalog import selectors
from annotation.core.roles import IsAdmin
from annotation.models import RatingExclusion
from annotation.people import selectors as people_selectors
from annotation.quality.exclusion import selectors as exclusion_selectors
from annotation.quality.exclusion.services import MAX_REASON, rating_exclusion_create, rating_exclusion_undo
from config.openapi import error_response


class RatingExclusionSerializer(serializers.ModelSerializer):
    dataset = serializers.CharField(source="dataset.name")
    rater = serializers.CharField(source="rater.username")
    created_by = serializers.CharField(source="created_by.username")
    undone_by = serializers.CharField(source="undone_by.username", allow_null=True, default=None)

    class Meta:
        model = RatingExclusion
        fields = [
            "id",
            "dataset",
            "rater",
            "window_start",
            "window_end",
            "reason",
            "state",
            "created_by",
            "created_at",
            "applied_at",
            "ratings_excluded",
            "slots_reopened",
            "undone_by",
            "undone_at",
            "undo_reason",
            "ratings_restored",
            "ratings_superseded",
            "pause",
        ]
        extra_kwargs = {
            "pause": {
                "help_text": "What the exclusion did to the rater in the dataset: paused (they claim and submit "
                "nothing more there until an admin lifts the pause), already_paused, or kept_active "
                "(created with keep_active)."
            }
        }


class ExclusionListApi(APIView):
    """A dataset's exclusions (newest first), or exclude a rater's ratings: all given so
    far, or those created in [window_start, window_end). The exclusion is applied in the
    background (202); each affected pair gets a new slot per excluded rating, so it again
    collects N valid ratings from N distinct raters. The rater is paused in the dataset
    at once unless ``keep_active`` is true; ``pause`` in the answer says which happened.
    A second exclusion of the same rater and window (not undone) is refused (409)."""

    permission_classes = [IsAdmin]

    class ExclusionCreateSerializer(serializers.Serializer):
        rater = serializers.CharField(max_length=150, help_text="Username of the rater to exclude.")
        reason = serializers.CharField(max_length=MAX_REASON)
        window_start = serializers.DateTimeField(required=False, allow_null=True, default=None)
        window_end = serializers.DateTimeField(required=False, allow_null=True, default=None)
        keep_active = serializers.BooleanField(
            required=False,
            default=False,
            help_text="Leave the rater unpaused (they go on rating in the dataset). Default: pause them.",
        )

    @extend_schema(responses={200: RatingExclusionSerializer(many=True), 404: error_response("No such dataset.")})
    def get(self, request, dataset: str):
        rows = exclusion_selectors.exclusion_list(dataset=selectors.dataset_get(name=dataset))
        return Response(RatingExclusionSerializer(rows, many=True).data)

    @extend_schema(
        request=ExclusionCreateSerializer,
        responses={
            202: RatingExclusionSerializer,
            400: error_response("Bad window or reason, no valid rating of the rater in scope, or an admin to pause."),
            404: error_response("No such dataset or user."),
            409: error_response("The same ratings are excluded already (the message names that exclusion)."),
        },
    )
    def post(self, request, dataset: str):
        data = self.ExclusionCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        exclusion = rating_exclusion_create(
            dataset=selectors.dataset_get(name=dataset),
            rater=people_selectors.user_get(username=values["rater"]),
            reason=values["reason"],
            window_start=values["window_start"],
            window_end=values["window_end"],
            keep_active=values["keep_active"],
            created_by=request.user,
        )
        return Response(RatingExclusionSerializer(exclusion).data, status=status.HTTP_202_ACCEPTED)


class ExclusionDetailApi(APIView):
    permission_classes = [IsAdmin]

    @extend_schema(responses={200: RatingExclusionSerializer, 404: error_response("No such dataset or exclusion.")})
    def get(self, request, dataset: str, exclusion_id: int):
        row = exclusion_selectors.exclusion_get(dataset=selectors.dataset_get(name=dataset), exclusion_id=exclusion_id)
        return Response(RatingExclusionSerializer(row).data)


class ExclusionUndoApi(APIView):
    """Undo an applied exclusion in the background (202): its ratings are restored where
    the pair still has an unrated top-up slot (which closes); where the top-up is rated
    or being rated, the restored rating is marked superseded and the pair keeps N."""

    permission_classes = [IsAdmin]

    class ExclusionUndoSerializer(serializers.Serializer):
        reason = serializers.CharField(max_length=MAX_REASON, required=False, allow_blank=True, default="")

    @extend_schema(
        request=ExclusionUndoSerializer,
        responses={
            202: RatingExclusionSerializer,
            404: error_response("No such dataset or exclusion."),
            409: error_response("The exclusion is still applying, or already undone."),
        },
    )
    def post(self, request, dataset: str, exclusion_id: int):
        data = self.ExclusionUndoSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        row = exclusion_selectors.exclusion_get(dataset=selectors.dataset_get(name=dataset), exclusion_id=exclusion_id)
        exclusion = rating_exclusion_undo(
            exclusion_id=row.id, undone_by=request.user, reason=data.validated_data["reason"]
        )
        return Response(RatingExclusionSerializer(exclusion).data, status=status.HTTP_202_ACCEPTED)
