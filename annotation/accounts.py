"""Rater and account services: API tokens and what a rater may be served."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import authenticate
from django.db import transaction
from rest_framework.authtoken.models import Token

from annotation.errors import DomainError
from annotation.models import Qualification, TaskKind
from annotation.queue.claim import qualified_kinds
from annotation.queue.shapes import QueueInputError
from annotation.roles import RATER, has_role, user_roles


class InvalidCredentials(DomainError):
    """A username and password that do not sign anyone in (unknown user, wrong password
    or a disabled account; which of them is deliberately not said)."""

    code = "invalid_credentials"


@dataclass(frozen=True)
class IssuedToken:
    """An API token and who it signs in: ``roles`` as ``annotation.roles.user_roles``."""

    key: str
    username: str
    roles: list[str]


def token_issue(*, username: str, password: str, request=None) -> IssuedToken:
    """The user's API token, created on first use; the same token on every later call
    until it is revoked. ``request`` (the Django request, if any) goes to the
    authentication backends. Raises InvalidCredentials when the credentials do not
    authenticate an active user."""
    user = authenticate(request, username=username, password=password)
    if user is None:
        raise InvalidCredentials("wrong username or password, or the account is disabled")
    with transaction.atomic():
        token, _ = Token.objects.get_or_create(user=user)
    return IssuedToken(key=token.key, username=user.get_username(), roles=user_roles(user))


def token_revoke(*, user) -> None:
    """Delete the user's API token; requests with it are refused from now on. Revoking
    when there is no token is harmless."""
    with transaction.atomic():
        Token.objects.filter(user=user).delete()


def qualifications_set(*, rater, kinds: list[str]) -> list[str]:
    """Make ``kinds`` exactly the task kinds the rater may be served; returns them
    sorted. The user must be in the rater group. Leases the rater holds on a withdrawn
    kind stay until they end."""
    unknown = [k for k in kinds if k not in TaskKind.values]
    if unknown:
        raise QueueInputError(f"unknown task kind(s) {', '.join(map(repr, unknown))}; use {', '.join(TaskKind.values)}")
    if not has_role(rater, RATER):
        raise QueueInputError(f"{rater.get_username()} is not in the rater group; add them to it first")
    with transaction.atomic():
        Qualification.objects.filter(rater=rater).exclude(kind__in=kinds).delete()
        Qualification.objects.bulk_create(
            [Qualification(rater=rater, kind=k) for k in sorted(set(kinds))], ignore_conflicts=True
        )
    return qualified_kinds(rater)
