"""API token authentication that learns the user's roles in the same query, so the role
permission checks of a request (IsRater, IsAdmin ...) need no query of their own.

Every API request authenticates, so this is one plain SQL statement (a join, one row
per group of the user) read into model instances with ``Model.from_db``: building the
equivalent ORM query costs more CPU than the query itself.
"""

from functools import cache

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection
from django.utils.translation import gettext_lazy as _
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import AuthenticationFailed

from annotation.roles import ROLES, remember_roles
from annotation.sql import Statement, execute


@cache
def _statement() -> tuple[Statement, list[str]]:
    user_model = get_user_model()
    user_fields = [f.attname for f in user_model._meta.concrete_fields]
    qn = connection.ops.quote_name
    columns = ", ".join(f"u.{qn(f.column)}" for f in user_model._meta.concrete_fields)
    groups_through = user_model.groups.through._meta
    user_fk = user_model.groups.field.m2m_column_name()
    group_fk = user_model.groups.field.m2m_reverse_name()
    sql = (
        f"SELECT t.{qn('key')}, t.{qn('created')}, {columns}, g.{qn('name')} "
        f"FROM {qn(Token._meta.db_table)} t "
        f"JOIN {qn(user_model._meta.db_table)} u ON u.{qn(user_model._meta.pk.column)} = t.{qn('user_id')} "
        f"LEFT JOIN {qn(groups_through.db_table)} ug ON ug.{qn(user_fk)} = u.{qn(user_model._meta.pk.column)} "
        f"LEFT JOIN {qn(Group._meta.db_table)} g ON g.{qn('id')} = ug.{qn(group_fk)} "
        f"WHERE t.{qn('key')} = %(key)s"
    )
    return Statement("auth_token_roles_v1", sql, (("key", "varchar"),)), user_fields


class RoleTokenAuthentication(TokenAuthentication):
    """``Authorization: Token <key>``, as DRF's TokenAuthentication, in one query."""

    def authenticate_credentials(self, key):
        statement, user_fields = _statement()
        with connection.cursor() as cursor:
            execute(cursor, statement, {"key": key})
            rows = cursor.fetchall()
        if not rows:
            raise AuthenticationFailed(_("Invalid token."))
        token_key, created, *user_values = rows[0][:-1]
        user = get_user_model().from_db(connection.alias, user_fields, user_values)
        if not user.is_active:
            raise AuthenticationFailed(_("User inactive or deleted."))
        token = Token.from_db(connection.alias, ["key", "user_id", "created"], [token_key, user.pk, created])
        token.user = user
        remember_roles(user, [row[-1] for row in rows if row[-1] in ROLES])
        return user, token
