"""Raters in bulk: a CSV of username, email and kinds becomes accounts in the
rater group, qualified for their kinds, each with a one-time invitation link to set a
password. No password is ever made, printed or stored in clear; only the SHA-256 of an
invitation's token is stored. All or nothing: one bad row refuses the file."""

from __future__ import annotations

import csv
import hashlib
import itertools
import os
import re
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models.functions import Lower
from django.utils import timezone

from annotation.core.errors import DomainError
from annotation.core.inputs import nul_problem
from annotation.core.roles import RATER
from annotation.core.text_lines import bounded_lines
from annotation.models import Invitation, Qualification, TaskKind
from annotation.people.accounts import password_check, username_taken_message

COLUMNS = ("username", "email", "kinds")
MAX_ROWS = 10_000
# Three short fields: a username (150), an e-mail address (254) and a few kinds.
MAX_LINE_BYTES = 4096
# Every set of task kinds a row can name, sorted as rows keep them.
_KINDS = {
    kinds: kinds
    for size in range(1, len(TaskKind.values) + 1)
    for kinds in itertools.combinations(sorted(TaskKind.values), size)
}


class RaterListError(DomainError):
    code = "rater_list_invalid"


class InvitationInvalid(DomainError):
    code = "invitation_invalid"
    http_status = 404


@dataclass(frozen=True, slots=True)
class RaterRow:
    line: int
    username: str
    email: str
    kinds: tuple[str, ...]


@dataclass(frozen=True)
class Invited:
    """A new rater and their invitation token (shown once: only its digest is stored)."""

    username: str
    kinds: tuple[str, ...]
    token: str
    expires_at: datetime


def rater_list_read(source: str | os.PathLike | BinaryIO, *, name: str | None = None) -> list[RaterRow]:
    """The rows of a rater CSV (header ``username,email,kinds``; kinds separated by
    spaces, ``|`` or ``;``), from a path or a binary file (an upload, read where it
    lies). Read line by line: a file of any size holds at most one line of at most
    MAX_LINE_BYTES in memory besides the rows kept, and the row limit refuses it as soon
    as row MAX_ROWS + 1 is read. Raises RaterListError naming the line and column."""
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as handle:
            return _rows_of(handle, name or Path(source).name)
    return _rows_of(source, name or "raters.csv")


def _rows_of(stream: BinaryIO, name: str) -> list[RaterRow]:
    reader = csv.reader(_lines(stream, name))
    parsed, seen = [], {}
    try:
        header = next(reader, None)
        if header is None or [column.strip() for column in header] != list(COLUMNS):
            raise RaterListError(f"{name}: the header must be exactly {','.join(COLUMNS)}")
        for line, values in enumerate(reader, start=2):
            if line - 1 > MAX_ROWS:
                raise RaterListError(f"{name}: at most {MAX_ROWS} raters per file")
            if not any(value.strip() for value in values):
                continue
            parsed.append(_row(name, line, values, seen))
    except csv.Error as exc:
        raise RaterListError(f"{name}: not a readable CSV file ({exc})") from exc
    if not parsed:
        raise RaterListError(f"{name}: no raters below the header")
    return parsed


def _lines(stream: BinaryIO, name: str) -> Iterator[str]:
    """The file's lines as text, each at most MAX_LINE_BYTES (a file without line breaks
    would otherwise be read whole as one line)."""
    return bounded_lines(
        stream,
        name=name,
        max_line_bytes=MAX_LINE_BYTES,
        error=RaterListError,
        line_hint="a rater row is a username, an e-mail address and task kinds",
    )


def _row(name: str, line: int, values: list[str], seen: dict[str, int]) -> RaterRow:
    if len(values) != len(COLUMNS):
        raise RaterListError(f"{name}: line {line} has {len(values)} fields, the header {len(COLUMNS)}")
    for column, value in zip(COLUMNS, values, strict=True):
        if problem := nul_problem(value):
            raise RaterListError(f"{name}: line {line}, column {column}: {problem}")
    username, email, kinds_text = (value.strip() for value in values)
    where = f"{name}: line {line}"
    try:
        UnicodeUsernameValidator()(username)
    except ValidationError:
        raise RaterListError(f"{where}, column username: {username!r} is not a valid username") from None
    if not username or len(username) > 150:
        raise RaterListError(f"{where}, column username: a username has 1 to 150 characters")
    if username.lower() in seen:
        raise RaterListError(f"{where}: username {username!r} repeats line {seen[username.lower()]}")
    seen[username.lower()] = line
    if email:
        try:
            validate_email(email)
        except ValidationError:
            raise RaterListError(f"{where}, column email: {email!r} is not an e-mail address") from None
    kinds = tuple(sorted({kind.upper() for kind in re.split(r"[\s|;]+", kinds_text) if kind}))
    kinds = _KINDS.get(kinds, kinds)  # one tuple per set of kinds: ten thousand rows share a few
    unknown = [kind for kind in kinds if kind not in TaskKind.values]
    if unknown or not kinds:
        raise RaterListError(
            f"{where}, column kinds: {', '.join(unknown) or 'none given'}; use one or more of "
            f"{', '.join(TaskKind.values)}"
        )
    return RaterRow(line=line, username=username, email=email, kinds=kinds)


def token_digest(token: str) -> str:
    """The SHA-256 (hex) stored for a token shown once."""
    return hashlib.sha256(token.encode()).hexdigest()


def _random_token(user) -> str:
    return secrets.token_urlsafe(32)


def raters_add(
    *, rows: list[RaterRow], created_by=None, now: datetime | None = None, token_of: Callable | None = None
) -> list[Invited]:
    """Create the raters of ``rows`` with their qualifications and invitations, all or
    none. ``token_of(user)`` gives each new user's invitation token (default: a random
    one; annotation.people.invitation_csv derives them from its download token). Raises
    RaterListError when a username is taken (naming its line)."""
    now = now or timezone.now()
    users = get_user_model()
    taken = (
        users.objects.annotate(folded=Lower("username"))
        .filter(folded__in=[row.username.lower() for row in rows])
        .order_by("username")
        .values_list("username", flat=True)
        .first()
    )
    if taken is not None:
        clash = next(row for row in rows if row.username.lower() == taken.lower())
        raise RaterListError(f"line {clash.line}: {username_taken_message(clash.username, taken)}")
    expires = now + timedelta(hours=settings.INVITATION_TTL_HOURS)
    invited = []
    try:
        with transaction.atomic():
            _create_raters(
                rows, invited, created_by=created_by, now=now, expires=expires, token_of=token_of or _random_token
            )
    except IntegrityError:
        # Someone made one of these names (in any case) while this file was being read.
        raise RaterListError(
            "a user with one of these names (in any case) was created meanwhile; nothing was added, send the file again"
        ) from None
    return invited


def _create_raters(
    rows: list[RaterRow], invited: list[Invited], *, created_by, now: datetime, expires: datetime, token_of: Callable
):
    users = get_user_model()
    group, _ = Group.objects.get_or_create(name=RATER)
    for row in rows:
        user = users(username=row.username, email=row.email)
        user.set_unusable_password()
        user.save()
        user.groups.add(group)
        # An admin's list: the kinds hold in every dataset.
        Qualification.objects.bulk_create([Qualification(rater=user, kind=kind) for kind in row.kinds])
        token = token_of(user)
        Invitation.objects.create(
            user=user, token_digest=token_digest(token), created_by=created_by, created_at=now, expires_at=expires
        )
        invited.append(Invited(username=row.username, kinds=row.kinds, token=token, expires_at=expires))


def invitation_renew(*, user, created_by=None, now: datetime | None = None) -> Invited:
    """A new invitation link for a user who has no password yet (their earlier links stop
    working). Raises RaterListError for a user who set one: they log in, or an admin
    resets it."""
    if user.has_usable_password():
        raise RaterListError(f"{user.get_username()} has set a password already; no invitation is needed")
    now = now or timezone.now()
    expires = now + timedelta(hours=settings.INVITATION_TTL_HOURS)
    token = secrets.token_urlsafe(32)
    with transaction.atomic():
        Invitation.objects.filter(user=user, used_at__isnull=True).delete()
        Invitation.objects.create(
            user=user, token_digest=token_digest(token), created_by=created_by, created_at=now, expires_at=expires
        )
    kinds = tuple(Qualification.objects.granted_kinds(rater=user, dataset_id=None))
    return Invited(username=user.get_username(), kinds=kinds, token=token, expires_at=expires)


def invitation_get(*, token: str, now: datetime | None = None) -> Invitation:
    """The open invitation of ``token``; InvitationInvalid for an unknown, used or
    expired one (saying which, never whose)."""
    invitation = Invitation.objects.select_related("user").filter(token_digest=token_digest(token)).first()
    if invitation is None:
        raise InvitationInvalid("this invitation link is not known; ask the admin who sent it for a new one")
    if invitation.used_at is not None:
        raise InvitationInvalid("this invitation link was used already; log in with the password you set")
    if invitation.expires_at <= (now or timezone.now()):
        raise InvitationInvalid("this invitation link has expired; ask the admin who sent it for a new one")
    return invitation


def invitation_accept(*, token: str, password: str, now: datetime | None = None):
    """Set the invited rater's password (Django's validators apply) and close the
    invitation; returns the user. Raises InvitationInvalid or WeakPassword."""
    now = now or timezone.now()
    with transaction.atomic():
        invitation = invitation_get(token=token, now=now)
        # Two tabs sending the form at once: the second finds the invitation used.
        still_open = (
            Invitation.objects.select_for_update()
            .filter(pk=invitation.pk, used_at__isnull=True)
            .values_list("pk", flat=True)
            .first()
        )
        if still_open is None:
            raise InvitationInvalid("this invitation link was used already; log in with the password you set")
        user = invitation.user
        password_check(password=password, user=user)
        user.set_password(password)
        user.save(update_fields=["password"])
        Invitation.objects.filter(pk=invitation.pk).update(used_at=now)
    return user
