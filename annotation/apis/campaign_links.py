"""Campaign links of a dataset (admins): list them with their study URLs, make one."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import selectors
from annotation.models import CampaignLink, TaskKind
from annotation.people.crowd.links import campaign_link_create, study_url
from annotation.people.roles import IsAdmin
from config.openapi import error_response

# The largest count a PositiveIntegerField column holds on every database.
MAX_COUNT = 2_147_483_647


class CampaignLinkSerializer(serializers.ModelSerializer):
    dataset = serializers.CharField(source="dataset.name")
    study_url = serializers.SerializerMethodField(help_text="The URL to paste into the platform's study page.")

    class Meta:
        model = CampaignLink
        fields = [
            "id",
            "dataset",
            "name",
            "kinds",
            "quota",
            "completion_code",
            "partial_code",
            "return_url",
            "id_param",
            "max_participants",
            "expires_at",
            "active",
            "created_at",
            "study_url",
        ]

    def get_study_url(self, link: CampaignLink) -> str:
        return study_url(link, self.context["base_url"])


class CampaignLinkListApi(APIView):
    """A dataset's campaign links, newest first; or make one (its token is drawn here)."""

    permission_classes = [IsAdmin]

    class CampaignLinkCreateSerializer(serializers.Serializer):
        name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
        kinds = serializers.ListField(child=serializers.ChoiceField(choices=TaskKind.choices), min_length=1)
        quota = serializers.IntegerField(min_value=1, max_value=MAX_COUNT)
        completion_code = serializers.CharField(max_length=100)
        partial_code = serializers.CharField(
            max_length=100,
            required=False,
            allow_blank=True,
            default="",
            help_text="Shown when the pairs run out before the quota; empty: no partial code.",
        )
        return_url = serializers.URLField(max_length=1000, required=False, allow_blank=True, default="")
        id_param = serializers.CharField(max_length=50, required=False, default="PROLIFIC_PID")
        max_participants = serializers.IntegerField(
            min_value=1, max_value=MAX_COUNT, required=False, allow_null=True, default=None
        )
        expires_at = serializers.DateTimeField(required=False, allow_null=True, default=None)

    def _context(self, request) -> dict:
        return {"base_url": request.build_absolute_uri("/")}

    @extend_schema(responses={200: CampaignLinkSerializer(many=True), 404: error_response("No such dataset.")})
    def get(self, request, dataset: str):
        rows = (
            CampaignLink.objects.filter(dataset=selectors.dataset_get(name=dataset))
            .select_related("dataset")
            .order_by("-created_at", "-id")
        )
        return Response(CampaignLinkSerializer(rows, many=True, context=self._context(request)).data)

    @extend_schema(
        request=CampaignLinkCreateSerializer,
        responses={
            201: CampaignLinkSerializer,
            400: error_response("A value of the link is not valid (the message names it)."),
            404: error_response("No such dataset."),
        },
    )
    def post(self, request, dataset: str):
        data = self.CampaignLinkCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        link = campaign_link_create(
            dataset=selectors.dataset_get(name=dataset), created_by=request.user, **data.validated_data
        )
        return Response(
            CampaignLinkSerializer(link, context=self._context(request)).data, status=status.HTTP_201_CREATED
        )
