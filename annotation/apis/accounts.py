"""Accounts: API tokens."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.accounts import InvalidCredentials, token_issue, token_revoke


class TokenApi(APIView):
    """API tokens: POST username + password for your token (created on first use);
    DELETE (authenticated with the token) revokes it. The browser uses session login."""

    class TokenInputSerializer(serializers.Serializer):
        username = serializers.CharField()
        password = serializers.CharField(style={"input_type": "password"}, trim_whitespace=False)

    class TokenOutputSerializer(serializers.Serializer):
        token = serializers.CharField(source="key")
        username = serializers.CharField()
        roles = serializers.ListField(
            child=serializers.CharField(), help_text="Your roles; staff and superusers are admins."
        )

    def get_permissions(self):
        return [AllowAny()] if self.request.method == "POST" else [IsAuthenticated()]

    def get_authenticators(self):
        # Obtaining a token needs no session, so no CSRF token either.
        if self.request is not None and self.request.method == "POST":
            return []
        return super().get_authenticators()

    @extend_schema(request=TokenInputSerializer, responses={200: TokenOutputSerializer}, auth=[])
    def post(self, request):
        data = self.TokenInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            issued = token_issue(**data.validated_data, request=request._request)
        except InvalidCredentials as exc:
            # Reported against the password field, as any other bad input of this form.
            raise ValidationError({"password": [str(exc)]}) from None
        return Response(self.TokenOutputSerializer(issued).data)

    @extend_schema(request=None, responses={204: None})
    def delete(self, request):
        token_revoke(user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
