"""Crowd-platform entry (issue #16): campaign links for Prolific and platforms alike.

Opening ``/join/<token>/?PROLIFIC_PID=..&STUDY_ID=..&SESSION_ID=..`` makes (or resumes)
the rater of that external id: one external id is one account however often, in however
many tabs, the link is opened (the unique user name and the unique (link, external id)
row decide races). A participant rates up to the link's quota of items, then is shown
the completion code. The rating policy (``annotation.rating.policy``) refuses a claim or a
submit past the quota (QuotaReached, counted by ``annotation.rating.quota``), so neither a
second tab nor a script gets more items than the quota."""

from __future__ import annotations

import re
import secrets
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlencode, urlsplit

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.errors import DomainError
from annotation.models import (
    CampaignLink,
    GoldPair,
    Participant,
    Qualification,
    Rating,
    TaskKind,
)

# QuotaReached is re-exported: the crowd's callers meet it when a participant is done.
from annotation.rating.quota import QuotaReached as QuotaReached
from annotation.rating.quota import participant_items_done
from annotation.roles import PARTICIPANT, RATER

EXTERNAL_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
SIDE_PARAMS = {"study_id": "STUDY_ID", "session_id": "SESSION_ID"}
PROLIFIC_COMPLETE = "https://app.prolific.com/submissions/complete"
# Short names of the platforms' id parameters, for the participants' user names.
PLATFORM_PREFIX = {"PROLIFIC_PID": "prolific", "workerId": "mturk"}


class JoinRefused(DomainError):
    """A campaign link that cannot be followed; the page shows the message."""

    code = "join_refused"

    def __init__(self, message: str, *, http_status: int = 400):
        super().__init__(message)
        self.http_status = http_status


class CampaignLinkError(DomainError):
    code = "campaign_link_invalid"


@dataclass(frozen=True)
class LinkStats:
    started: int
    finished: int
    median_minutes: float | None
    ratings: int


def campaign_link_check(*, kinds: list[str], quota: int, completion_code: str, return_url: str, id_param: str) -> None:
    """Raise CampaignLinkError naming the first bad value of a campaign link."""
    if not kinds or any(kind not in TaskKind.values for kind in kinds):
        raise CampaignLinkError(f"kinds must be one or more of {', '.join(TaskKind.values)}, got {kinds!r}")
    if quota is None or quota < 1:
        raise CampaignLinkError(f"quota must be at least 1 item per participant, got {quota}")
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,100}", completion_code or ""):
        raise CampaignLinkError("the completion code must be 1-100 letters, digits, '-' or '_'")
    if return_url and urlsplit(return_url).scheme not in ("http", "https"):
        raise CampaignLinkError(f"the return URL must start with http:// or https://, got {return_url!r}")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,49}", id_param or ""):
        raise CampaignLinkError(f"the id parameter must be a query parameter name, got {id_param!r}")


def campaign_link_create(
    *,
    dataset,
    name: str,
    kinds: list[str],
    quota: int,
    completion_code: str,
    return_url: str = "",
    id_param: str = "PROLIFIC_PID",
    max_participants: int | None = None,
    expires_at: datetime | None = None,
    created_by=None,
    now: datetime | None = None,
) -> CampaignLink:
    """A new campaign link with a fresh random token. Raises CampaignLinkError naming the
    bad value."""
    kinds = sorted({kind.upper() for kind in kinds})
    completion_code = completion_code.strip()
    campaign_link_check(
        kinds=kinds, quota=quota, completion_code=completion_code, return_url=return_url, id_param=id_param
    )
    with transaction.atomic():
        return CampaignLink.objects.create(
            dataset=dataset,
            name=name.strip() or f"{dataset.name} link",
            token=new_link_token(),
            kinds=kinds,
            quota=quota,
            completion_code=completion_code,
            return_url=return_url,
            id_param=id_param,
            max_participants=max_participants,
            expires_at=expires_at,
            created_by=created_by,
            created_at=now or timezone.now(),
        )


def new_link_token() -> str:
    """A fresh random link token (192 bits: nobody guesses a link)."""
    return secrets.token_urlsafe(24)


def study_url(link: CampaignLink, base_url: str) -> str:
    """The URL to paste into the platform's study page. For Prolific its placeholders
    fill in the participant, study and session ids; elsewhere the platform appends its
    id parameter itself."""
    path = f"{base_url.rstrip('/')}/join/{link.token}/"
    if link.id_param == "PROLIFIC_PID":
        return path + "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
    return path


def participant_join(*, token: str, params: Mapping[str, str], now: datetime | None = None) -> Participant:
    """The participant of ``token``'s link with the external id in ``params`` (the query
    string), made on their first visit. Raises JoinRefused saying what is wrong with the
    link or the id; nothing is made then."""
    now = now or timezone.now()
    link = CampaignLink.objects.select_related("dataset").filter(token=token).first()
    if link is None:
        raise JoinRefused(
            "This study link is not known. Check that you copied the whole link from the study page.", http_status=404
        )
    external_id = (params.get(link.id_param) or "").strip()
    if not external_id:
        raise JoinRefused(
            f"This link needs your participant id ({link.id_param}). Open it from the study page of the platform."
        )
    if not EXTERNAL_ID.fullmatch(external_id):
        raise JoinRefused(
            f"The participant id in this link ({link.id_param}) is not valid. Open it from the study page."
        )
    known = Participant.objects.select_related("user", "link__dataset").filter(link=link, external_id=external_id)
    if (participant := known.first()) is not None:
        return participant
    if not link.active or (link.expires_at is not None and link.expires_at <= now):
        raise JoinRefused(
            "This study is closed: it takes no new participants. Please return it on the platform.", http_status=410
        )
    return _participant_new(link, external_id, params, now)


def _participant_new(link: CampaignLink, external_id: str, params: Mapping[str, str], now) -> Participant:
    side = {field: (params.get(name) or "")[:64] for field, name in SIDE_PARAMS.items()}
    try:
        with transaction.atomic():
            if link.max_participants is not None:
                # The link's row is the lock that keeps the cap exact under a rush; links
                # without a cap need no lock (the unique constraints settle races).
                locked = CampaignLink.objects.select_for_update().get(pk=link.pk)
                if locked.participants.count() >= locked.max_participants:
                    raise JoinRefused(
                        "This study is full: every place is taken. Please return it on the platform.", http_status=410
                    )
            user = _crowd_user(link, external_id)
            participant = Participant.objects.create(
                link=link, user=user, external_id=external_id, started_at=now, **side
            )
            _grant_kinds_without_quiz(user, link)
    except IntegrityError:
        # The same id's other tab made it a moment ago.
        return Participant.objects.select_related("user", "link__dataset").get(link=link, external_id=external_id)
    participant.link = link
    return participant


def _crowd_user(link: CampaignLink, external_id: str):
    """The one account of an external id on the link's platform, without a password."""
    prefix = PLATFORM_PREFIX.get(link.id_param, link.id_param.lower())
    users = get_user_model()
    username = f"{prefix}-{external_id}"
    user = users.objects.filter(username=username).first()
    if user is not None:
        return user
    user = users(username=username)
    user.set_unusable_password()
    with transaction.atomic():
        user.save()
    groups = {group.name: group for group in Group.objects.filter(name__in=(RATER, PARTICIPANT))}
    for role in (RATER, PARTICIPANT):
        if role not in groups:
            groups[role], _ = Group.objects.get_or_create(name=role)
    user.groups.add(*groups.values())
    return user


def _grant_kinds_without_quiz(user, link: CampaignLink) -> None:
    """Kinds the dataset has no quiz for are the link's to give, in its dataset only; the
    others need the quiz."""
    with_quiz = set(
        GoldPair.objects.filter(dataset_id=link.dataset_id, kind__in=link.kinds, in_quiz=True, active=True)
        .values_list("kind", flat=True)
        .distinct()
    )
    free = [kind for kind in link.kinds if kind not in with_quiz]
    Qualification.objects.bulk_create(
        [Qualification(rater=user, dataset_id=link.dataset_id, kind=kind) for kind in free], ignore_conflicts=True
    )


def participation_in(*, user, dataset_id: int) -> Participant | None:
    """The user's latest run through a campaign link of the dataset, if any."""
    return (
        Participant.objects.select_related("link__dataset")
        .filter(user=user, link__dataset_id=dataset_id)
        .order_by("-started_at")
        .first()
    )


class Step:
    """Where a participant goes next (``participant_next``)."""

    RATE = "rate"  # rate (or take the quiz of) ``kind``
    DONE = "done"  # the quota is rated: the completion code
    NO_WORK = "no_work"  # nothing left for them before the quota: the code all the same
    SCREENED_OUT = "screened_out"  # every kind's quiz failed: no code, return the study


def participant_next(participant: Participant) -> tuple[str, str | None]:
    """(Step, kind): the first of the link's kinds the participant may rate with pairs
    left for them, or whose quiz they may still take; else why they are through."""
    from annotation.quiz import quiz_offered
    from annotation.selectors import rater_pairs_left

    link = participant.link
    if participant.finished_at is not None or participant_items_done(participant) >= link.quota:
        return Step.DONE, None
    qualified = set(
        Qualification.objects.filter(rater_id=participant.user_id)
        .in_dataset(link.dataset_id)
        .values_list("kind", flat=True)
    )
    left = rater_pairs_left(rater=participant.user, kinds=list(link.kinds), dataset_id=link.dataset_id)
    for kind in link.kinds:
        if kind in qualified and left.get((link.dataset_id, kind), 0) > 0:
            return Step.RATE, kind
        if kind not in qualified and quiz_offered(rater=participant.user, dataset_id=link.dataset_id, kind=kind):
            return Step.RATE, kind
    if qualified.intersection(link.kinds):
        return Step.NO_WORK, None
    return Step.SCREENED_OUT, None


def participant_finish(participant: Participant, *, now: datetime | None = None) -> Participant:
    """Record that the participant was shown the completion code (once)."""
    if participant.finished_at is None:
        done = participant_items_done(participant)
        Participant.objects.filter(pk=participant.pk, finished_at__isnull=True).update(
            finished_at=now or timezone.now(), items_done=done
        )
        participant.refresh_from_db()
    return participant


def completion_url(link: CampaignLink) -> str:
    """Where the completion page sends the participant back to the platform."""
    if link.return_url:
        return link.return_url
    return f"{PROLIFIC_COMPLETE}?{urlencode({'cc': link.completion_code})}"


def link_stats(link: CampaignLink) -> LinkStats:
    """Participants started and finished, the median minutes from joining to the code,
    and the ratings they gave in the link's dataset."""
    rows = list(link.participants.values_list("user_id", "started_at", "finished_at"))
    minutes = [(end - start).total_seconds() / 60 for _, start, end in rows if end is not None]
    ratings = Rating.objects.filter(
        rater_id__in=[user_id for user_id, _, _ in rows], pair__dataset_id=link.dataset_id
    ).count()
    return LinkStats(
        started=len(rows),
        finished=len(minutes),
        median_minutes=statistics.median(minutes) if minutes else None,
        ratings=ratings,
    )
