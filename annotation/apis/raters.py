"""Raters in bulk through the API (admins): a CSV of username, email and kinds becomes
rater accounts, each with a one-time invitation link (shown in this answer, and in a CSV
file downloadable once from the URL of its ``Link`` header)."""

from django.http import HttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.catalog.upload_limits import LimitedMultiPartParser
from annotation.catalog.uploads import PAIR_LIST
from annotation.core.roles import IsAdmin
from annotation.people.invitation_csv import invitations_csv_take, raters_add_downloadable
from annotation.people.onboarding import rater_list_read
from config.openapi import error_response


class InvitedSerializer(serializers.Serializer):
    username = serializers.CharField()
    kinds = serializers.ListField(child=serializers.CharField())
    invitation_url = serializers.CharField(help_text="Works once, until expires_at; send it to the rater now.")
    expires_at = serializers.DateTimeField()


class RaterBulkAddApi(APIView):
    """Add raters from a CSV with the header ``username,email,kinds`` (kinds such as
    ``STS SIS``): accounts in the rater group, qualified for their kinds, each with an
    invitation link to set a password. One bad row (a repeated or taken username, an
    unknown kind) refuses the whole file, naming its line; nothing is made then. The file
    is read as a stream: more than the row limit is refused at the first row over it."""

    permission_classes = [IsAdmin]
    parser_classes = [LimitedMultiPartParser]
    # A rater list is a small CSV, limited like a pair list.
    upload_kinds = {"file": PAIR_LIST}

    class RaterFileSerializer(serializers.Serializer):
        file = serializers.FileField()

    @extend_schema(
        request={"multipart/form-data": RaterFileSerializer},
        responses={
            201: InvitedSerializer(many=True),
            400: error_response("The file is not a valid rater list; the message names the line and column."),
        },
        parameters=[
            OpenApiParameter(
                "Link",
                OpenApiTypes.STR,
                OpenApiParameter.HEADER,
                response=[201],
                description='<URL>; rel="invitations-csv": POST it (admins) once, within '
                "INVITATION_DOWNLOAD_TTL_MINUTES (default 60), for these links as a CSV file.",
            )
        ],
    )
    def post(self, request):
        data = self.RaterFileSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        upload = data.validated_data["file"]
        # Read where the upload lies, line by line: memory stays flat whatever its size.
        added = raters_add_downloadable(
            rows=rater_list_read(upload, name=upload.name or "raters.csv"), created_by=request.user
        )
        body = [
            {
                "username": rater.username,
                "kinds": list(rater.kinds),
                "invitation_url": request.build_absolute_uri(reverse("invitation", args=[rater.token])),
                "expires_at": rater.expires_at,
            }
            for rater in added.invited
        ]
        response = Response(InvitedSerializer(body, many=True).data, status=status.HTTP_201_CREATED)
        csv_url = request.build_absolute_uri(reverse("rater-invitations-csv", args=[added.download_token]))
        response["Link"] = f'<{csv_url}>; rel="invitations-csv"; type="text/csv"'
        return response


class RaterInvitationsCsvApi(APIView):
    """The invitation links of one bulk add as CSV (username, email, kinds,
    invitation_url, expires_at, status: open, used, expired or replaced), given once: a
    second request answers 410, as does one after INVITATION_DOWNLOAD_TTL_MINUTES. The
    URL is in the bulk add's ``Link`` header. POST, not GET: a link preview or a
    prefetching browser must not use the one download up."""

    permission_classes = [IsAdmin]

    def perform_content_negotiation(self, request, force=False):
        # The file is the answer whatever the Accept header says; errors are JSON.
        return (JSONRenderer(), JSONRenderer.media_type)

    @extend_schema(
        request=None,
        responses={
            (200, "text/csv"): OpenApiTypes.STR,
            404: error_response("No download with this token was ever made."),
            410: error_response("Downloaded already, or expired: the message says when and how to make new links."),
        },
    )
    def post(self, request, token: str):
        text = invitations_csv_take(
            download_token=token,
            url_of=lambda invitation: request.build_absolute_uri(reverse("invitation", args=[invitation])),
        )
        response = HttpResponse(text, content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="invitation-links.csv"'
        response["Cache-Control"] = "no-store"
        return response
