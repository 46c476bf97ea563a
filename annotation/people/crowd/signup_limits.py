"""Rate limits on new participant accounts: one client address gets at most
``CROWD_NEW_PARTICIPANTS_PER_ADDRESS`` new accounts, through any campaign links, in
``CROWD_NEW_PARTICIPANTS_ADDRESS_WINDOW_MINUTES``, and one link makes at most
``CROWD_NEW_PARTICIPANTS_PER_LINK`` accounts in ``CROWD_NEW_PARTICIPANTS_LINK_WINDOW_MINUTES``
(sliding windows). A participant coming back is never counted, a refused join neither.

The counter is the database, not a cache: one ParticipantSignup row per account made,
counted under locks in the join's own transaction (the link's row, and on PostgreSQL an
advisory lock per address; SQLite runs one write transaction at a time), so the limits are
exact across every web process of both run modes. The embedded SQLite mode has no Redis,
and the default cache is each process's own memory, which would let each process count
apart. Addresses are kept only as a keyed hash (SECRET_KEY), and rows older than the
longest window are deleted as new ones come in."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection
from django.utils.crypto import salted_hmac

from annotation.models import CampaignLink, ParticipantSignup

# First key of the address locks (join.py keys the platform-id locks by their own).
_ADDRESS_LOCK = "participant-signup-address"


@dataclass(frozen=True)
class SignupRefusal:
    """Why no account is made now, and in how many seconds one may be."""

    message: str
    retry_after_seconds: int


def address_key(address: str | None) -> str:
    """The keyed hash under which a client address is counted ("" without an address: a
    caller that is not a web request, counted against the link only)."""
    if not address:
        return ""
    return salted_hmac("annotation.people.crowd.signup_limits", address, algorithm="sha256").hexdigest()


def signup_lock(link: CampaignLink, key: str) -> CampaignLink:
    """Hold, until the transaction ends, the locks the counts need: the address's (on
    PostgreSQL), then the link's row, which is returned as it is now."""
    if key and connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"{_ADDRESS_LOCK}:{key}"])
    return CampaignLink.objects.select_for_update().get(pk=link.pk)


def signup_refusal(link: CampaignLink, key: str, *, now: datetime) -> SignupRefusal | None:
    """Whether a new account for ``key`` through ``link`` is over a limit now (call under
    ``signup_lock``)."""
    per_address = (settings.CROWD_NEW_PARTICIPANTS_PER_ADDRESS, settings.CROWD_NEW_PARTICIPANTS_ADDRESS_WINDOW_MINUTES)
    if key:
        wait = _wait(ParticipantSignup.objects.filter(address_key=key), *per_address, now=now)
        if wait is not None:
            return SignupRefusal(
                f"Too many new participants joined from your network in the last {_window(per_address[1])}, so "
                f"this study takes no new one from it now. Please try again in {_wait_text(wait)}, or contact "
                "the researcher through the platform.",
                wait,
            )
    per_link = (settings.CROWD_NEW_PARTICIPANTS_PER_LINK, settings.CROWD_NEW_PARTICIPANTS_LINK_WINDOW_MINUTES)
    wait = _wait(ParticipantSignup.objects.filter(link=link), *per_link, now=now)
    if wait is not None:
        return SignupRefusal(
            f"This study takes no more new participants for now: too many joined in the last "
            f"{_window(per_link[1])}. Please try again in {_wait_text(wait)}.",
            wait,
        )
    return None


def signup_record(link: CampaignLink, key: str, *, now: datetime) -> None:
    """Count a new account (in the transaction that made it), and forget those that no
    window counts any longer."""
    longest = max(
        settings.CROWD_NEW_PARTICIPANTS_ADDRESS_WINDOW_MINUTES, settings.CROWD_NEW_PARTICIPANTS_LINK_WINDOW_MINUTES
    )
    ParticipantSignup.objects.filter(created_at__lte=now - timedelta(minutes=longest)).delete()
    ParticipantSignup.objects.create(link=link, address_key=key, created_at=now)


def _wait(signups, limit: int, minutes: int, *, now: datetime) -> int | None:
    """Seconds until ``signups`` in the window fall below ``limit``; None when they are below it."""
    recent = list(
        signups.filter(created_at__gt=now - timedelta(minutes=minutes))
        .order_by("-created_at")
        .values_list("created_at", flat=True)[:limit]
    )
    if len(recent) < limit:
        return None
    # The count falls below the limit when the oldest of the newest ``limit`` leaves the
    # window (a signup exactly a window old is out of it).
    leaves = recent[-1] + timedelta(minutes=minutes)
    return max(1, math.ceil((leaves - now).total_seconds()))


def _window(minutes: int) -> str:
    """A window as in "in the last hour"."""
    if minutes == 60:
        return "hour"
    if minutes % 60 == 0:
        return f"{minutes // 60} hours"
    return "minute" if minutes == 1 else f"{minutes} minutes"


def _wait_text(seconds: int) -> str:
    """A wait as in "try again in about 5 minutes"."""
    minutes = -(-seconds // 60)
    if minutes <= 90:
        return "about a minute" if minutes == 1 else f"about {minutes} minutes"
    return f"about {-(-minutes // 60)} hours"
