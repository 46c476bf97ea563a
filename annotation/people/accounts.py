"""Rater and account services: API tokens, passwords and what a rater may be served."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth import authenticate, get_user_model
from django.contrib.auth.password_validation import validate_password
from django.contrib.auth.signals import user_logged_in
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models.functions import Lower
from django.utils import timezone
from knox.models import AuthToken

from annotation.core.errors import DomainError
from annotation.core.roles import RATER, has_role, user_roles
from annotation.models import Qualification, TaskKind
from annotation.people.lockout import is_locked_out, lockout_remaining, whole_minutes
from annotation.serving.shapes import QueueInputError


class InvalidCredentials(DomainError):
    """A username and password that do not sign anyone in (unknown user, wrong password
    or a disabled account; which of them is deliberately not said)."""

    code = "invalid_credentials"


class AccountLocked(DomainError):
    """Too many wrong passwords for this username from this address: every attempt is
    refused, the right password too, until the cool-off ends or an admin lifts it."""

    code = "locked_out"
    http_status = 429

    def __init__(self, message: str, *, retry_after_seconds: int):
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds
        self.headers = {"Retry-After": str(retry_after_seconds)}


class WeakPassword(DomainError):
    """A password Django's validators (AUTH_PASSWORD_VALIDATORS) refuse."""

    code = "weak_password"


@dataclass(frozen=True)
class IssuedToken:
    """A new API token (the only time its key is known: the database keeps its digest)
    and who it signs in: ``roles`` as ``annotation.core.roles.user_roles``."""

    key: str
    username: str
    roles: list[str]
    expiry: datetime


def token_issue(*, username: str, password: str, request) -> IssuedToken:
    """A new API token for the user, valid for API_TOKEN_TTL_HOURS; earlier tokens stay
    valid until they expire or are revoked. ``request`` is the Django request: the
    lockout check (django-axes) counts attempts per username and address. Raises
    AccountLocked while locked out (the right password included), InvalidCredentials
    when the credentials do not authenticate an active user."""
    user = authenticate(request, username=username, password=password)
    if is_locked_out(request):
        remaining = lockout_remaining(request, username)
        raise AccountLocked(
            f"too many failed sign-ins for {username!r} from this address; try again in "
            f"{whole_minutes(remaining)} minute(s) or ask an admin to lift the lockout",
            retry_after_seconds=max(1, math.ceil(remaining.total_seconds())),
        )
    if user is None:
        raise InvalidCredentials("wrong username or password, or the account is disabled")
    with transaction.atomic():
        # Expired tokens refuse sign-in anyway; their rows go when their owner comes back.
        AuthToken.objects.filter(user=user, expiry__lt=timezone.now()).delete()
        token, key = AuthToken.objects.create(user=user)
        # A sign-in like the login page's: axes clears the failed attempts of this
        # username and address (AXES_RESET_ON_SUCCESS), Django records last_login.
        user_logged_in.send(sender=user.__class__, request=request, user=user)
    return IssuedToken(key=key, username=user.get_username(), roles=user_roles(user), expiry=token.expiry)


def token_revoke(*, token: AuthToken) -> None:
    """Delete one API token; requests with it are refused from now on."""
    with transaction.atomic():
        AuthToken.objects.filter(pk=token.pk).delete()


def tokens_revoke_all(*, user) -> int:
    """Delete all the user's API tokens (a leaked token, a rater who leaves); returns how
    many there were. Sessions in the browser are not affected."""
    with transaction.atomic():
        deleted, _ = AuthToken.objects.filter(user=user).delete()
    return deleted


def tokens_prune_expired(*, now=None) -> int:
    """Delete every expired API token (they already authenticate no one); returns how
    many. Issuing a token tidies only its owner's, so accounts nobody signs in with any
    more would keep theirs forever without this beat task."""
    with transaction.atomic():
        deleted, _ = AuthToken.objects.filter(expiry__lt=now or timezone.now()).delete()
    return deleted


def username_taken_message(wanted: str, existing: str) -> str:
    """How a creation path refuses ``wanted`` when ``existing`` holds the name (the user
    table's unique index on lower(username) refuses it in any case)."""
    if wanted == existing:
        return f"a user named {wanted!r} exists already"
    return (
        f"a user named {wanted!r} cannot be made: {existing!r} exists already and usernames may not differ only by case"
    )


def username_holder(username: str) -> str | None:
    """The existing username equal to ``username`` but for case, or None when it is free."""
    return (
        get_user_model()
        .objects.annotate(folded=Lower("username"))
        .filter(folded=username.lower())
        .values_list("username", flat=True)
        .first()
    )


def password_check(*, password: str, user=None) -> None:
    """Raise WeakPassword naming every reason when AUTH_PASSWORD_VALIDATORS refuse
    ``password`` (for ``user``, whose name and e-mail it must not resemble)."""
    try:
        validate_password(password, user=user)
    except ValidationError as exc:
        raise WeakPassword("password refused: " + " ".join(exc.messages)) from None


def qualifications_set(*, rater, kinds: list[str], dataset=None) -> list[str]:
    """Make ``kinds`` exactly the task kinds granted to the rater in ``dataset`` (a
    Dataset), or without one, in every dataset; returns them sorted. Grants of the other
    scope stay as they are. The user must be in the rater group. Leases the rater holds
    on a withdrawn kind stay until they end."""
    unknown = [k for k in kinds if k not in TaskKind.values]
    if unknown:
        raise QueueInputError(f"unknown task kind(s) {', '.join(map(repr, unknown))}; use {', '.join(TaskKind.values)}")
    if not has_role(rater, RATER):
        raise QueueInputError(f"{rater.get_username()} is not in the rater group; add them to it first")
    scope = Qualification.objects.filter(rater=rater)
    scope = scope.filter(dataset=dataset) if dataset is not None else scope.filter(dataset__isnull=True)
    with transaction.atomic():
        scope.exclude(kind__in=kinds).delete()
        Qualification.objects.bulk_create(
            [Qualification(rater=rater, dataset=dataset, kind=k) for k in sorted(set(kinds))], ignore_conflicts=True
        )
    return sorted(scope.values_list("kind", flat=True))
