"""Accounts: API tokens."""

from drf_spectacular.utils import extend_schema
from knox.models import AuthToken
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.core.errors import DomainError
from annotation.core.roles import IsAdmin
from annotation.people import selectors as people_selectors
from annotation.people.accounts import InvalidCredentials, token_issue, token_revoke, tokens_revoke_all
from config.openapi import error_response


class NotATokenRequest(DomainError):
    code = "not_token_authenticated"


class RevokedSerializer(serializers.Serializer):
    revoked = serializers.IntegerField(help_text="How many API tokens were deleted.")


class TokenApi(APIView):
    """API tokens: POST username + password for a new token (its key is shown only in
    this answer; it expires after API_TOKEN_TTL_HOURS); DELETE, authenticated with a
    token, revokes that token. The browser uses session login."""

    class TokenInputSerializer(serializers.Serializer):
        username = serializers.CharField()
        password = serializers.CharField(style={"input_type": "password"}, trim_whitespace=False)

    class TokenOutputSerializer(serializers.Serializer):
        token = serializers.CharField(source="key")
        expiry = serializers.DateTimeField(help_text="When the token stops working.")
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

    @extend_schema(
        request=TokenInputSerializer,
        responses={
            200: TokenOutputSerializer,
            429: error_response("Too many wrong passwords for this username from this address (Retry-After)."),
        },
        auth=[],
    )
    def post(self, request):
        data = self.TokenInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            issued = token_issue(**data.validated_data, request=request._request)
        except InvalidCredentials as exc:
            # Reported against the password field, as any other bad input of this form.
            raise ValidationError({"password": [str(exc)]}) from None
        return Response(self.TokenOutputSerializer(issued).data)

    @extend_schema(
        request=None,
        responses={204: None, 400: error_response("Authenticated by a session, not a token: nothing to revoke here.")},
    )
    def delete(self, request):
        if not isinstance(request.auth, AuthToken):
            raise NotATokenRequest(
                "DELETE /api/auth/token/ revokes the token this request is authenticated with, and it used "
                "none (a browser session); DELETE /api/auth/tokens/ revokes all your tokens"
            )
        token_revoke(token=request.auth)
        return Response(status=status.HTTP_204_NO_CONTENT)


class TokenSetApi(APIView):
    """DELETE revokes all your API tokens (with a token or a browser session)."""

    @extend_schema(request=None, responses={200: RevokedSerializer})
    def delete(self, request):
        return Response({"revoked": tokens_revoke_all(user=request.user)})


class UserTokensApi(APIView):
    """DELETE revokes all API tokens of the named user (admins)."""

    permission_classes = [IsAdmin]

    @extend_schema(request=None, responses={200: RevokedSerializer})
    def delete(self, request, username: str):
        return Response({"revoked": tokens_revoke_all(user=people_selectors.user_get(username=username))})
