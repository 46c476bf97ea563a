"""Raters in bulk through the API (admins): a CSV of username, email and kinds becomes
rater accounts, each with a one-time invitation link (shown in this answer only)."""

from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.people.onboarding import rater_list_read, raters_add
from annotation.people.roles import IsAdmin
from annotation.upload_limits import LimitedMultiPartParser
from annotation.uploads import PAIR_LIST
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
    )
    def post(self, request):
        data = self.RaterFileSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        upload = data.validated_data["file"]
        # Read where the upload lies, line by line: memory stays flat whatever its size.
        invited = raters_add(rows=rater_list_read(upload, name=upload.name or "raters.csv"), created_by=request.user)
        body = [
            {
                "username": rater.username,
                "kinds": list(rater.kinds),
                "invitation_url": request.build_absolute_uri(reverse("invitation", args=[rater.token])),
                "expires_at": rater.expires_at,
            }
            for rater in invited
        ]
        return Response(InvitedSerializer(body, many=True).data, status=status.HTTP_201_CREATED)
