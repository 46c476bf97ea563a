"""Campaign links: the checks of a new link, its creation with a fresh token,
the URL to paste into the platform's study page, and the numbers per link."""

from __future__ import annotations

import re
import secrets
import statistics
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit

from django.db import transaction
from django.utils import timezone

from annotation.core import cxc
from annotation.core.errors import DomainError
from annotation.models import CampaignLink, GoldPurpose, GoldRating, Rating
from annotation.people.crowd.external_ids import IdPatternInvalid, id_pattern_check
from annotation.quality.quiz import quiz_pools
from annotation.serving.pairs_left import pairs_left_for_a_newcomer

CODE = re.compile(r"[A-Za-z0-9_-]{1,100}")


class CampaignLinkError(DomainError):
    code = "campaign_link_invalid"


@dataclass(frozen=True)
class LinkStats:
    started: int
    finished: int
    median_minutes: float | None
    ratings: int


def campaign_link_check(
    *,
    kinds: list[str],
    quota: int,
    completion_code: str,
    return_url: str,
    id_param: str,
    id_pattern: str = "",
    partial_code: str = "",
    leave_url: str = "",
    screenout_code: str = "",
) -> None:
    """Raise CampaignLinkError naming the first bad value of a campaign link."""
    if not kinds or any(kind not in cxc.KINDS for kind in kinds):  # a review is asked for by name only
        raise CampaignLinkError(f"kinds must be one or more of {', '.join(cxc.KINDS)}, got {kinds!r}")
    if quota is None or quota < 1:
        raise CampaignLinkError(f"quota must be at least 1 item per participant, got {quota}")
    if not CODE.fullmatch(completion_code or ""):
        raise CampaignLinkError("the completion code must be 1-100 letters, digits, '-' or '_'")
    if partial_code and not CODE.fullmatch(partial_code):
        raise CampaignLinkError("the partial code must be empty or 1-100 letters, digits, '-' or '_'")
    if partial_code and partial_code == completion_code:
        raise CampaignLinkError("the partial code must differ from the completion code")
    _screenout_code_check(screenout_code, completion_code=completion_code, partial_code=partial_code)
    if return_url and urlsplit(return_url).scheme not in ("http", "https"):
        raise CampaignLinkError(f"the return URL must start with http:// or https://, got {return_url!r}")
    if leave_url and urlsplit(leave_url).scheme not in ("http", "https"):
        raise CampaignLinkError(f"the leave URL must start with http:// or https://, got {leave_url!r}")
    if leave_url and completion_code and completion_code in leave_url:
        raise CampaignLinkError(
            "the leave URL must not carry the completion code: it is for participants who leave without one"
        )
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,49}", id_param or ""):
        raise CampaignLinkError(f"the id parameter must be a query parameter name, got {id_param!r}")
    try:
        id_pattern_check(id_pattern, id_param=id_param)
    except IdPatternInvalid as problem:
        raise _on_field(CampaignLinkError(str(problem)), "id_pattern") from None


def _screenout_code_check(screenout_code: str, *, completion_code: str, partial_code: str) -> None:
    """The screen-out code is optional, shaped like the other codes, and neither of them:
    a participant who failed the quiz must not be paid as one who did the work."""
    if not screenout_code:
        return
    if not CODE.fullmatch(screenout_code):
        problem = "the screen-out code must be empty or 1-100 letters, digits, '-' or '_'"
    elif screenout_code == completion_code:
        problem = "the screen-out code must differ from the completion code"
    elif screenout_code == partial_code:
        problem = "the screen-out code must differ from the partial code"
    else:
        return
    raise _on_field(CampaignLinkError(problem), "screenout_code")


def campaign_link_quiz_check(*, dataset_id: int, kinds: list[str]) -> None:
    """Raise CampaignLinkError when a kind of the link has a quiz too small to run: its
    participants would be turned away without ever being asked."""
    for pool in quiz_pools(dataset_id=dataset_id):
        if pool.kind in kinds and pool.too_small:
            problem = CampaignLinkError(f"participants of this link could never rate {pool.kind}. {pool.describe()}")
            raise _on_field(problem, "kinds")


class QuotaOverPairs(CampaignLinkError):
    """The quota asks more items than a participant can rate of the link's kinds now."""

    code = "campaign_link_quota_over_pairs"


def campaign_link_quota_check(*, dataset, kinds: list[str], quota: int) -> None:
    """Raise QuotaOverPairs (on the quota) when ``quota`` exceeds the items a newcomer
    could rate of ``kinds`` in ``dataset`` now: every participant would run out of pairs
    first and end with the partial code, or none. The figure only falls as the campaign
    goes on (pairs get their ratings), so the admin decides knowing the numbers."""
    left = pairs_left_for_a_newcomer(dataset_id=dataset.pk, kinds=kinds)
    most = sum(left.values())
    if quota is None or quota <= most:
        return
    per_kind = ", ".join(f"{kind}: {left[kind]}" for kind in kinds)
    problem = QuotaOverPairs(
        f"a participant can rate at most {most} items of this link's kinds in {dataset.name} now ({per_kind}, "
        f"gold items included), fewer than the quota of {quota}: every participant would run out of pairs and "
        "end with the partial code, or none."
    )
    raise _on_field(problem, "quota")


def _on_field(error: CampaignLinkError, field: str) -> CampaignLinkError:
    """``error``, shown by a form on ``field``."""
    error.field = field
    return error


def campaign_link_create(
    *,
    dataset,
    name: str,
    kinds: list[str],
    quota: int,
    completion_code: str,
    partial_code: str = "",
    screenout_code: str = "",
    return_url: str = "",
    leave_url: str = "",
    consent_text: str = "",
    id_param: str = "PROLIFIC_PID",
    id_pattern: str = "",
    max_participants: int | None = None,
    expires_at: datetime | None = None,
    created_by=None,
    now: datetime | None = None,
) -> CampaignLink:
    """A new campaign link with a fresh random token. Raises CampaignLinkError naming the
    bad value."""
    kinds = sorted({kind.upper() for kind in kinds})
    completion_code, partial_code, id_pattern = completion_code.strip(), partial_code.strip(), id_pattern.strip()
    screenout_code = screenout_code.strip()
    campaign_link_check(
        kinds=kinds,
        quota=quota,
        completion_code=completion_code,
        partial_code=partial_code,
        screenout_code=screenout_code,
        return_url=return_url,
        leave_url=leave_url,
        id_param=id_param,
        id_pattern=id_pattern,
    )
    campaign_link_quiz_check(dataset_id=dataset.pk, kinds=kinds)
    with transaction.atomic():
        return CampaignLink.objects.create(
            dataset=dataset,
            name=name.strip() or f"{dataset.name} link",
            token=new_link_token(),
            kinds=kinds,
            quota=quota,
            completion_code=completion_code,
            partial_code=partial_code,
            screenout_code=screenout_code,
            return_url=return_url,
            leave_url=leave_url,
            consent_text=consent_text.strip(),
            id_param=id_param,
            id_pattern=id_pattern,
            max_participants=max_participants,
            expires_at=expires_at,
            created_by=created_by,
            created_at=now or timezone.now(),
        )


def campaign_link_close(*, link: CampaignLink) -> CampaignLink:
    """Stop the link taking new participants (its join page then says the study is
    closed); those who joined may still come back and finish. Closing a closed link
    changes nothing."""
    CampaignLink.objects.filter(pk=link.pk).update(active=False)
    link.active = False
    return link


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


def link_stats(link: CampaignLink) -> LinkStats:
    """Participants started and finished, the median minutes from joining to the end
    page, and the items (ratings and queue gold ratings) they gave in the link's dataset."""
    rows = list(link.participants.values_list("user_id", "started_at", "finished_at"))
    minutes = [(end - start).total_seconds() / 60 for _, start, end in rows if end is not None]
    users = [user_id for user_id, _, _ in rows]
    ratings = Rating.objects.filter(rater_id__in=users, pair__dataset_id=link.dataset_id).count()
    ratings += GoldRating.objects.filter(
        rater_id__in=users, dataset_id=link.dataset_id, purpose=GoldPurpose.QUEUE
    ).count()
    return LinkStats(
        started=len(rows),
        finished=len(minutes),
        median_minutes=statistics.median(minutes) if minutes else None,
        ratings=ratings,
    )
