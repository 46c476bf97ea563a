"""Campaign links of a dataset: admins list them with their study URLs and numbers, make
one and close one; researchers list them with their numbers, the study URL and the codes
null. A link's token (in its study URL) and its codes are secrets a participant could be
paid with: only admins see them."""

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.catalog import selectors
from annotation.core import cxc
from annotation.core.errors import NotFound
from annotation.core.roles import ADMIN, IsAdmin, IsResearcher, has_role
from annotation.models import CampaignLink
from annotation.people.crowd.links import campaign_link_close, campaign_link_create, link_stats, study_url
from config.openapi import error_response

# The largest count a PositiveIntegerField column holds on every database.
MAX_COUNT = 2_147_483_647


class LinkStatsSerializer(serializers.Serializer):
    started = serializers.IntegerField(help_text="Participants who joined.")
    finished = serializers.IntegerField(help_text="Participants who reached the end page.")
    median_minutes = serializers.FloatField(allow_null=True, help_text="From joining to the end page.")
    ratings = serializers.IntegerField(help_text="Items rated by the participants in the link's dataset.")


SECRET = "Admins only; null for researchers."


class CampaignLinkSerializer(serializers.ModelSerializer):
    """A link with its numbers. The token (in the study URL) and the codes are secrets a
    participant could be paid with: only an admin's answer carries them."""

    dataset = serializers.CharField(source="dataset.name")
    completion_code = serializers.SerializerMethodField(help_text=SECRET)
    partial_code = serializers.SerializerMethodField(help_text=f"Empty: no partial code. {SECRET}")
    screenout_code = serializers.SerializerMethodField(help_text=f"Empty: no screen-out code. {SECRET}")
    study_url = serializers.SerializerMethodField(help_text=f"The URL to paste into the platform's study. {SECRET}")
    stats = serializers.SerializerMethodField()

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
            "screenout_code",
            "return_url",
            "id_param",
            "id_pattern",
            "max_participants",
            "expires_at",
            "active",
            "created_at",
            "study_url",
            "stats",
        ]

    def _secret(self, value: str) -> str | None:
        return value if self.context["admin"] else None

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_completion_code(self, link: CampaignLink) -> str | None:
        return self._secret(link.completion_code)

    @extend_schema_field(serializers.CharField(allow_null=True, allow_blank=True))
    def get_partial_code(self, link: CampaignLink) -> str | None:
        return self._secret(link.partial_code)

    @extend_schema_field(serializers.CharField(allow_null=True, allow_blank=True))
    def get_screenout_code(self, link: CampaignLink) -> str | None:
        return self._secret(link.screenout_code)

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_study_url(self, link: CampaignLink) -> str | None:
        return self._secret(study_url(link, self.context["base_url"]))

    @extend_schema_field(LinkStatsSerializer)
    def get_stats(self, link: CampaignLink) -> dict:
        return LinkStatsSerializer(link_stats(link)).data


def _context(request) -> dict:
    return {"base_url": request.build_absolute_uri("/"), "admin": has_role(request.user, ADMIN)}


class CampaignLinkListApi(APIView):
    """A dataset's campaign links with their numbers, newest first (for researchers the
    study URL and the codes are null); or make one (admins; its token is drawn here)."""

    def get_permissions(self):
        return [IsResearcher()] if self.request.method == "GET" else [IsAdmin()]

    class CampaignLinkCreateSerializer(serializers.Serializer):
        name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
        kinds = serializers.ListField(child=serializers.ChoiceField(choices=cxc.KINDS), min_length=1)
        quota = serializers.IntegerField(min_value=1, max_value=MAX_COUNT)
        completion_code = serializers.CharField(max_length=100)
        partial_code = serializers.CharField(
            max_length=100,
            required=False,
            allow_blank=True,
            default="",
            help_text="Shown when the pairs run out before the quota; empty: no partial code.",
        )
        screenout_code = serializers.CharField(
            max_length=100,
            required=False,
            allow_blank=True,
            default="",
            help_text="Shown to a participant who failed the qualification quiz; empty: no screen-out code.",
        )
        return_url = serializers.URLField(max_length=1000, required=False, allow_blank=True, default="")
        id_param = serializers.CharField(max_length=50, required=False, default="PROLIFIC_PID")
        # Its length and syntax are the service's to check, with their own messages.
        id_pattern = serializers.CharField(
            required=False,
            allow_blank=True,
            default="",
            help_text=CampaignLink._meta.get_field("id_pattern").help_text,
        )
        max_participants = serializers.IntegerField(
            min_value=1, max_value=MAX_COUNT, required=False, allow_null=True, default=None
        )
        expires_at = serializers.DateTimeField(required=False, allow_null=True, default=None)

    @extend_schema(responses={200: CampaignLinkSerializer(many=True), 404: error_response("No such dataset.")})
    def get(self, request, dataset: str):
        rows = (
            CampaignLink.objects.filter(dataset=selectors.dataset_get(name=dataset))
            .select_related("dataset")
            .order_by("-created_at", "-id")
        )
        return Response(CampaignLinkSerializer(rows, many=True, context=_context(request)).data)

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
        return Response(CampaignLinkSerializer(link, context=_context(request)).data, status=status.HTTP_201_CREATED)


class CampaignLinkCloseApi(APIView):
    """Close a link (admins): its join page says the study is closed and makes nobody new;
    participants who joined may still finish. Closing a closed link changes nothing."""

    permission_classes = [IsAdmin]

    @extend_schema(
        request=None,
        responses={200: CampaignLinkSerializer, 404: error_response("No such dataset, or no such link in it.")},
    )
    def post(self, request, dataset: str, link_id: int):
        link = (
            CampaignLink.objects.filter(dataset=selectors.dataset_get(name=dataset), pk=link_id)
            .select_related("dataset")
            .first()
        )
        if link is None:
            raise NotFound(f"dataset {dataset!r} has no campaign link #{link_id}")
        link = campaign_link_close(link=link)
        return Response(CampaignLinkSerializer(link, context=_context(request)).data)
