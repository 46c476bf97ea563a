"""API token authentication that learns the user's roles in the same query, so the role
permission checks of a request (IsRater, IsAdmin ...) need no query of their own.

Tokens are django-rest-knox's: the table keeps a token's first 15 characters (indexed)
and the SHA-512 digest of the whole token, never the token itself. Every API request
authenticates, so the lookup is one plain SQL statement (a join, one row per group of
the user) read into model instances with ``Model.from_db``: building the equivalent ORM
query costs more CPU than the query itself. Unlike knox's own TokenAuthentication, an
expired token is refused without deleting it here (a write on the rating queue's hot
path); ``token_issue`` tidies the owner's expired rows.

On PostgreSQL a process also remembers what a token's lookup read, by the token's
digest, for the rating cycle's fast path (``remembered_credentials``): a request with a
remembered token sends a check of it (``token_check``) ahead of its first statement, in
the same round trip, instead of a lookup of its own. The check compares the token, its
expiry, the user's whole row and their roles with what was remembered, and any change
(a token deleted or expired, a user deactivated, renamed, given or taken a role, logged
in) stops the statement behind it; the request is then authenticated anew.
"""

from datetime import datetime
from functools import cache
from hmac import compare_digest
from typing import NamedTuple

from django.conf import settings
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
from annotation.core.sql import Statement, default_vendor, execute, hot_cursor

_TOKEN_FIELDS = ["digest", "token_key", "user_id", "created", "expiry"]


@cache
def _names() -> dict[str, str]:
    """The quoted names both token statements join by: the token table (``t``) to its
    user (``u``), the user's group memberships (``ug``) to the groups (``g``)."""
    user_model = get_user_model()
    qn = connection.ops.quote_name
    return {
        "tokens": qn(AuthToken._meta.db_table),
        "users": qn(user_model._meta.db_table),
        "user_pk": f"u.{qn(user_model._meta.pk.column)}",
        "memberships": qn(user_model.groups.through._meta.db_table),
        "member": qn(user_model.groups.field.m2m_column_name()),
        "group_fk": qn(user_model.groups.field.m2m_reverse_name()),
        "groups": qn(Group._meta.db_table),
    }


@cache
def _statement() -> tuple[Statement, list[str]]:
    user_model = get_user_model()
    user_fields = [f.attname for f in user_model._meta.concrete_fields]
    qn = connection.ops.quote_name
    columns = ", ".join(f"u.{qn(f.column)}" for f in user_model._meta.concrete_fields)
    n = _names()
    sql = (
        f"SELECT t.{qn('digest')}, t.{qn('created')}, t.{qn('expiry')}, "
        f"(t.{qn('expiry')} IS NOT NULL AND t.{qn('expiry')} <= %(now)s), {_user_fingerprint()}, "
        f"{columns}, g.{qn('name')} "
        f"FROM {n['tokens']} t "
        f"JOIN {n['users']} u ON {n['user_pk']} = t.{qn('user_id')} "
        f"LEFT JOIN {n['memberships']} ug ON ug.{n['member']} = {n['user_pk']} "
        f"LEFT JOIN {n['groups']} g ON g.{qn('id')} = ug.{n['group_fk']} "
        f"WHERE t.{qn('token_key')} = %(key)s"
    )
    params = (("key", "varchar"), ("now", "timestamptz"))
    return Statement("auth_knox_token_roles_v2", sql, params), user_fields


def _user_fingerprint() -> str:
    """SQL of the user row's fingerprint (alias ``u``): the digest of its text, which
    changes with any of its columns; NULL off PostgreSQL, where nothing is remembered.
    A fingerprint, not a secret: only the row itself is compared with it."""
    return "md5(u::text)" if default_vendor() == "postgresql" else "NULL"


@cache
def _check_statement() -> Statement:
    """The check sent ahead of a remembered token's first statement: it stops the
    statement (``annotation_refuse_ahead``, migration 0036) unless the token is still
    there and unexpired, and its user's row (active when remembered: the fingerprint
    covers ``is_active``) and roles are as remembered."""
    qn = connection.ops.quote_name
    n = _names()
    role_names = ", ".join(f"'{role}'" for role in ROLES)
    roles = (
        f"ARRAY(SELECT g.{qn('name')}::text FROM {n['memberships']} ug "
        f"JOIN {n['groups']} g ON g.{qn('id')} = ug.{n['group_fk']} "
        f"WHERE ug.{n['member']} = {n['user_pk']} AND g.{qn('name')} IN ({role_names}) "
        f"ORDER BY g.{qn('name')} COLLATE {qn('C')})"
    )
    sql = (
        "SELECT annotation_refuse_ahead() WHERE NOT EXISTS (SELECT "
        f"FROM {n['tokens']} t "
        f"JOIN {n['users']} u ON {n['user_pk']} = t.{qn('user_id')} "
        f"WHERE t.{qn('digest')} = %(auth_digest)s "
        f"AND (t.{qn('expiry')} IS NULL OR t.{qn('expiry')} > %(auth_now)s) "
        f"AND {_user_fingerprint()} = %(auth_row)s AND {roles} = %(auth_roles)s::text[])"
    )
    params = (
        ("auth_digest", "varchar"),
        ("auth_now", "timestamptz"),
        ("auth_row", "text"),
        ("auth_roles", "text[]"),
    )
    return Statement("auth_token_check_v1", sql, params)


class Remembered(NamedTuple):
    """What a token's lookup read: its token row's times, the user's row (and its
    fingerprint) and their role names, sorted by code point (as the check's ``COLLATE
    "C"`` sorts them)."""

    created: datetime
    expiry: datetime | None
    user_values: list
    fingerprint: str
    roles: tuple[str, ...]


# The tokens this process authenticated, by digest: at most so many, emptied when full
# (each is looked up again on its next request). Single dict operations only: the
# server's threads share it.
REMEMBERED_MAX = 4096
_remembered: dict[str, Remembered] = {}


def _remember(digest: str, entry: Remembered) -> None:
    if len(_remembered) >= REMEMBERED_MAX:
        _remembered.clear()
    _remembered[digest] = entry


def forget_token(digest: str) -> None:
    _remembered.pop(digest, None)


class RoleTokenAuthentication(TokenAuthentication):
    """``Authorization: Token <key>`` with a django-rest-knox token, in one query."""

    def authenticate(self, request):
        """knox's, with the header read from ``request.META``: DRF's
        ``get_authorization_header`` builds ``request.headers`` (a copy of every header the
        request sent) to read this one, on every rated item."""
        parts = self._header_parts(request)
        if not parts:
            return None  # no header, or one for another scheme
        if len(parts) == 1:
            raise AuthenticationFailed(_("Invalid token header. No credentials provided."))
        if len(parts) > 2:
            raise AuthenticationFailed(_("Invalid token header. Token string should not contain spaces."))
        return self.authenticate_credentials(parts[1])

    def _header_parts(self, request) -> list[bytes]:
        """The Authorization header's words (bytes, split as DRF splits them) when it
        names this scheme, else []."""
        header = request.META.get("HTTP_AUTHORIZATION", b"")
        if isinstance(header, str):
            header = header.encode(HTTP_HEADER_ENCODING)
        parts = header.split()
        if not parts or parts[0].lower() != self.authenticate_header(request).encode().lower():
            return []
        return parts

    def authenticate_credentials(self, token):
        if isinstance(token, bytes):
            try:
                token = token.decode("ascii")
            except UnicodeDecodeError:
                raise AuthenticationFailed(_("Invalid token.")) from None
        statement = _statement()[0]
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
        token_digest, created, expiry, expired, fingerprint, *user_values = rows[0][:-1]
        if expired:
            raise AuthenticationFailed("Token expired; POST /api/auth/token/ for a new one.")
        roles = tuple(sorted(row[-1] for row in rows if row[-1] in ROLES))
        entry = Remembered(created, expiry, user_values, fingerprint, roles)
        user, auth = _credentials(token_digest, prefix, entry)
        if not user.is_active:
            raise AuthenticationFailed(_("User inactive or deleted."))
        if fingerprint is not None:
            _remember(token_digest, entry)
        return user, auth

    def remembered_credentials(self, request):
        """(user, token, check) for the request's token when this process remembers it
        (PostgreSQL only), where ``check`` is what ``annotation.core.sql.sent_ahead`` must send
        ahead of the request's first statement (``token_check``); None when the token
        must be looked up (``authenticate``): none, another scheme, a malformed header, a
        token not remembered, or the "remembered_token" shortcut off (RATING_SHORTCUTS_OFF)."""
        if "remembered_token" in settings.RATING_SHORTCUTS_OFF:
            return None
        parts = self._header_parts(request)
        if len(parts) != 2 or not parts[1].isascii():
            return None  # authenticate answers it
        token = parts[1].decode("ascii")
        digest = hash_token(token)
        # Found by the presented token's digest: what the lookup's time could tell is
        # about a digest, which gives no way back to a token.
        entry = _remembered.get(digest)
        if entry is None:
            return None
        user, auth = _credentials(digest, token[: CONSTANTS.TOKEN_KEY_LENGTH], entry)
        return user, auth, token_check(digest, entry)


def _credentials(digest: str, prefix: str, entry: Remembered):
    """The user (their roles remembered on it) and token of a lookup's row."""
    user = get_user_model().from_db(connection.alias, _statement()[1], entry.user_values)
    auth = AuthToken.from_db(connection.alias, _TOKEN_FIELDS, [digest, prefix, user.pk, entry.created, entry.expiry])
    auth.user = user
    remember_roles(user, entry.roles)
    return user, auth


def token_check(digest: str, entry: Remembered) -> tuple[Statement, dict]:
    """The check of a remembered token, as ``annotation.core.sql.sent_ahead`` takes it."""
    values = {
        "auth_digest": digest,
        "auth_now": connection.ops.adapt_datetimefield_value(timezone.now()),
        "auth_row": entry.fingerprint,
        "auth_roles": list(entry.roles),
    }
    return _check_statement(), values


class RoleTokenScheme(OpenApiAuthenticationExtension):
    """The OpenAPI security scheme: the same ``tokenAuth`` the schema had with DRF's
    tokens, so clients generated from it keep their configuration."""

    target_class = RoleTokenAuthentication
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        return build_bearer_security_scheme_object(header_name="Authorization", token_prefix="Token")
