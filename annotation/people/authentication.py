"""API token authentication that learns the user's roles in the same query, so the role
permission checks of a request (IsRater, IsAdmin ...) need no query of their own.

Tokens are django-rest-knox's: the table keeps a token's first 15 characters (indexed)
and the SHA-512 digest of the whole token, never the token itself. Every API request
authenticates, so the lookup is one plain SQL statement (a join, one row per group of
the user) read into model instances with ``Model.from_db``: building the equivalent ORM
query costs more CPU than the query itself. Unlike knox's own TokenAuthentication, an
expired token is refused without deleting it here (a write on the rating queue's hot
path); ``token_issue`` tidies the owner's expired rows. Every request looks its token up
(a process remembers none), so a token deleted or expired, an account deactivated or a
role given or taken counts from the next request on.
"""

from functools import cache
from hmac import compare_digest

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.plumbing import build_bearer_security_scheme_object
from knox.auth import TokenAuthentication
from knox.crypto import hash_token
from knox.models import AuthToken
from knox.settings import CONSTANTS
from rest_framework import HTTP_HEADER_ENCODING
from rest_framework.exceptions import AuthenticationFailed

from annotation.core.roles import ROLES, remember_roles
from annotation.core.sql import Statement, execute, hot_cursor

_TOKEN_FIELDS = ["digest", "token_key", "user_id", "created", "expiry"]


@cache
def _statement() -> tuple[Statement, list[str]]:
    """The lookup: the token row by its key (``t``) joined to its user (``u``) and the
    user's groups (``g``, through ``ug``), one row per group; and the user's field names
    in the order of its columns there."""
    user_model = get_user_model()
    user_fields = [f.attname for f in user_model._meta.concrete_fields]
    qn = connection.ops.quote_name
    columns = ", ".join(f"u.{qn(f.column)}" for f in user_model._meta.concrete_fields)
    user_pk = f"u.{qn(user_model._meta.pk.column)}"
    memberships = qn(user_model.groups.through._meta.db_table)
    member = qn(user_model.groups.field.m2m_column_name())
    group_fk = qn(user_model.groups.field.m2m_reverse_name())
    sql = (
        f"SELECT t.{qn('digest')}, t.{qn('created')}, t.{qn('expiry')}, "
        f"(t.{qn('expiry')} IS NOT NULL AND t.{qn('expiry')} <= %(now)s), {columns}, g.{qn('name')} "
        f"FROM {qn(AuthToken._meta.db_table)} t "
        f"JOIN {qn(user_model._meta.db_table)} u ON {user_pk} = t.{qn('user_id')} "
        f"LEFT JOIN {memberships} ug ON ug.{member} = {user_pk} "
        f"LEFT JOIN {qn(Group._meta.db_table)} g ON g.{qn('id')} = ug.{group_fk} "
        f"WHERE t.{qn('token_key')} = %(key)s"
    )
    params = (("key", "varchar"), ("now", "timestamptz"))
    return Statement("auth_knox_token_roles_v3", sql, params), user_fields


class RoleTokenAuthentication(TokenAuthentication):
    """``Authorization: Token <key>`` with a django-rest-knox token, in one query."""

    def authenticate(self, request):
        """knox's, with the header read from ``request.META``: DRF's
        ``get_authorization_header`` builds ``request.headers`` (a copy of every header the
        request sent) to read this one, on every rated item."""
        header = request.META.get("HTTP_AUTHORIZATION", b"")
        if isinstance(header, str):
            header = header.encode(HTTP_HEADER_ENCODING)
        parts = header.split()
        if not parts or parts[0].lower() != self.authenticate_header(request).encode().lower():
            return None  # no header, or one for another scheme
        if len(parts) == 1:
            raise AuthenticationFailed(_("Invalid token header. No credentials provided."))
        if len(parts) > 2:
            raise AuthenticationFailed(_("Invalid token header. Token string should not contain spaces."))
        return self.authenticate_credentials(parts[1])

    def authenticate_credentials(self, token):
        if isinstance(token, bytes):
            try:
                token = token.decode("ascii")
            except UnicodeDecodeError:
                raise AuthenticationFailed(_("Invalid token.")) from None
        statement, user_fields = _statement()
        prefix = token[: CONSTANTS.TOKEN_KEY_LENGTH]
        now = connection.ops.adapt_datetimefield_value(timezone.now())
        with hot_cursor() as cursor:
            execute(cursor, statement, {"key": prefix, "now": now})
            rows = cursor.fetchall()
        digest = hash_token(token)
        # Tokens sharing the prefix (improbable) each have their own rows; the digest,
        # compared in constant time, picks the one that was presented.
        rows = [row for row in rows if compare_digest(row[0], digest)]
        if not rows:
            raise AuthenticationFailed(_("Invalid token."))
        token_digest, created, expiry, expired, *user_values = rows[0][:-1]
        if expired:
            raise AuthenticationFailed("Token expired; POST /api/auth/token/ for a new one.")
        user = get_user_model().from_db(connection.alias, user_fields, user_values)
        if not user.is_active:
            raise AuthenticationFailed(_("User inactive or deleted."))
        auth = AuthToken.from_db(connection.alias, _TOKEN_FIELDS, [token_digest, prefix, user.pk, created, expiry])
        auth.user = user
        remember_roles(user, [row[-1] for row in rows if row[-1] in ROLES])
        return user, auth


class RoleTokenScheme(OpenApiAuthenticationExtension):
    """The OpenAPI security scheme: the same ``tokenAuth`` the schema had with DRF's
    tokens, so clients generated from it keep their configuration."""

    target_class = RoleTokenAuthentication
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        return build_bearer_security_scheme_object(header_name="Authorization", token_prefix="Token")
