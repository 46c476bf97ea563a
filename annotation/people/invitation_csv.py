"""The invitation links of a bulk add as a CSV file, downloadable once.

The links are shown once and only digests are stored, so the file cannot be kept on the
server. Instead the bulk add draws a download token and derives every new rater's
invitation token from it (HMAC-SHA256 of the user id, as long as a random token); only the
download token's digest is stored. Whoever holds the download link can make the file
again, once, within ``INVITATION_DOWNLOAD_TTL_MINUTES``; later tries are told it is gone
(410). Cells are escaped for spreadsheets (annotation.core.spreadsheet_csv)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import io
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotation.core import spreadsheet_csv
from annotation.core.errors import DomainError, NotFound
from annotation.models import Invitation, InvitationDownload, Qualification
from annotation.people.onboarding import Invited, RaterRow, raters_add, token_digest

COLUMNS = ("username", "email", "kinds", "invitation_url", "expires_at", "status")
RENEW_HINT = (
    "make new links with the user list's action 'Make new invitation links for the selected users without a password'"
)


class InvitationDownloadGone(DomainError):
    code = "invitation_download_gone"
    http_status = 410


class InvitationDownloadUnknown(NotFound):
    code = "invitation_download_unknown"


@dataclass(frozen=True)
class RatersAdded:
    """New raters with their invitations, and the one-time download of their links."""

    invited: list[Invited]
    download_token: str
    download_expires_at: datetime


def derived_token(download_token: str, user_id: int) -> str:
    """The invitation token of ``user_id`` in the bulk add of ``download_token``: 256
    bits, URL-safe, as unguessable as the download token itself."""
    mac = hmac.new(download_token.encode(), f"invitation:{user_id}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()


def raters_add_downloadable(*, rows: list[RaterRow], created_by=None, now: datetime | None = None) -> RatersAdded:
    """``raters_add`` whose invitation links can be downloaded once as CSV with the
    returned token. All or nothing, the download row included."""
    now = now or timezone.now()
    download_token = secrets.token_urlsafe(32)
    user_ids: list[int] = []

    def token_of(user) -> str:
        user_ids.append(user.pk)
        return derived_token(download_token, user.pk)

    with transaction.atomic():
        invited = raters_add(rows=rows, created_by=created_by, now=now, token_of=token_of)
        download = InvitationDownload.objects.create(
            token_digest=token_digest(download_token),
            created_by=created_by,
            created_at=now,
            expires_at=now + timedelta(minutes=settings.INVITATION_DOWNLOAD_TTL_MINUTES),
        )
        download.users.add(*user_ids)
    return RatersAdded(invited=invited, download_token=download_token, download_expires_at=download.expires_at)


def invitations_csv_take(*, download_token: str, url_of: Callable[[str], str], now: datetime | None = None) -> str:
    """The CSV of the bulk add's invitation links (``url_of(token)`` makes a link's
    URL), once: the download is marked taken in the same transaction. Raises
    InvitationDownloadUnknown for a token never issued, InvitationDownloadGone for one
    taken or expired (saying when)."""
    now = now or timezone.now()
    with transaction.atomic():
        download = (
            InvitationDownload.objects.select_for_update().filter(token_digest=token_digest(download_token)).first()
        )
        if download is None:
            raise InvitationDownloadUnknown("this download link of invitation links is not known")
        if download.downloaded_at is not None:
            raise InvitationDownloadGone(
                f"these invitation links were downloaded already, at {_utc(download.downloaded_at)}: the file is "
                f"given once, so that nobody else can fetch the links; if it was lost, {RENEW_HINT}"
            )
        if download.expires_at <= now:
            raise InvitationDownloadGone(
                f"this download of invitation links expired at {_utc(download.expires_at)}; {RENEW_HINT}"
            )
        InvitationDownload.objects.filter(pk=download.pk).update(downloaded_at=now)
        users = list(download.users.order_by("username"))
    return _csv(users, download_token, url_of, now)


def _utc(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _csv(users: list, download_token: str, url_of: Callable[[str], str], now: datetime) -> str:
    tokens = {user.pk: derived_token(download_token, user.pk) for user in users}
    invitations = {
        row.token_digest: row
        for row in Invitation.objects.filter(token_digest__in=[token_digest(t) for t in tokens.values()])
    }
    kinds: dict[int, list[str]] = {}
    grants = Qualification.objects.filter(rater__in=users, dataset__isnull=True).order_by("kind")
    for rater_id, kind in grants.values_list("rater", "kind"):
        kinds.setdefault(rater_id, []).append(kind)
    out = io.StringIO()
    writer = spreadsheet_csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for user in users:
        invitation = invitations.get(token_digest(tokens[user.pk]))
        status, url, expires = _state(invitation, now), "", ""
        if invitation is not None:
            expires = invitation.expires_at.isoformat()
            url = url_of(tokens[user.pk]) if status == "open" else ""
        writer.writerow([user.get_username(), user.email, " ".join(kinds.get(user.pk, [])), url, expires, status])
    return out.getvalue()


def _state(invitation: Invitation | None, now: datetime) -> str:
    """open; used (the rater set a password); expired; replaced (a newer link was made,
    or the invitation was deleted)."""
    if invitation is None:
        return "replaced"
    if invitation.used_at is not None:
        return "used"
    return "expired" if invitation.expires_at <= now else "open"
