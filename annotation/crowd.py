"""Crowd-platform entry (issue #16): campaign links for Prolific and platforms alike.

Opening ``/join/<token>/?PROLIFIC_PID=..&STUDY_ID=..&SESSION_ID=..`` makes (or resumes)
the participant of that link and external id: one (link, external id) is one account
however often, in however many tabs, the link is opened (a lock on the platform id and
the unique (link, external id) row decide races). Each link makes its own accounts
(``<platform>-<link id>-<external id>``): a platform id is no key to a run of another
link, and the link only ever signs in an account it made: participant group only, no
usable password (``_crowd_user``); a name that belongs to any other account refuses the
join. A platform id takes part in one link per dataset: a second link of the same
dataset refuses it, so one person never rates a dataset through two accounts or earns
two codes for one piece of work. A participant rates up to the link's quota of items,
then is shown the completion code; one whose pairs run out first sees how many they
rated and, if earned, the link's partial code (``completion_outcome``). The rating policy
(``annotation.rating.policy``) refuses a claim or a submit past the quota or the end page
(QuotaReached, counted by ``annotation.rating.quota``), so neither a second tab nor a
script gets more items than the quota."""

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
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from annotation.errors import DomainError
from annotation.models import (
    CampaignLink,
    GoldLease,
    GoldLeaseState,
    GoldPair,
    GoldPurpose,
    GoldRating,
    PairSkip,
    Participant,
    ParticipantOutcome,
    Qualification,
    Rating,
    TaskKind,
)
from annotation.people.roles import PARTICIPANT

# QuotaReached is re-exported: the crowd's callers meet it when a participant is done.
from annotation.rating.quota import QuotaReached as QuotaReached
from annotation.rating.quota import participant_items_done

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


CODE = re.compile(r"[A-Za-z0-9_-]{1,100}")


def campaign_link_check(
    *, kinds: list[str], quota: int, completion_code: str, return_url: str, id_param: str, partial_code: str = ""
) -> None:
    """Raise CampaignLinkError naming the first bad value of a campaign link."""
    if not kinds or any(kind not in TaskKind.values for kind in kinds):
        raise CampaignLinkError(f"kinds must be one or more of {', '.join(TaskKind.values)}, got {kinds!r}")
    if quota is None or quota < 1:
        raise CampaignLinkError(f"quota must be at least 1 item per participant, got {quota}")
    if not CODE.fullmatch(completion_code or ""):
        raise CampaignLinkError("the completion code must be 1-100 letters, digits, '-' or '_'")
    if partial_code and not CODE.fullmatch(partial_code):
        raise CampaignLinkError("the partial code must be empty or 1-100 letters, digits, '-' or '_'")
    if partial_code and partial_code == completion_code:
        raise CampaignLinkError("the partial code must differ from the completion code")
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
    partial_code: str = "",
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
    completion_code, partial_code = completion_code.strip(), partial_code.strip()
    campaign_link_check(
        kinds=kinds,
        quota=quota,
        completion_code=completion_code,
        partial_code=partial_code,
        return_url=return_url,
        id_param=id_param,
    )
    with transaction.atomic():
        return CampaignLink.objects.create(
            dataset=dataset,
            name=name.strip() or f"{dataset.name} link",
            token=new_link_token(),
            kinds=kinds,
            quota=quota,
            completion_code=completion_code,
            partial_code=partial_code,
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
        # Checked on every visit: an account given a password or a role since it joined
        # is no longer the link's to sign in.
        if not _is_participant_account(participant.user, id_param=link.id_param, external_id=external_id):
            raise _name_taken(link)
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
            _lock_platform_id(link, external_id)
            # Under the lock: the same id's other tab may have made this link's run a
            # moment ago; a run on another link of the dataset refuses this one.
            runs = Participant.objects.filter(
                link__dataset_id=link.dataset_id, link__id_param=link.id_param, external_id=external_id
            )
            if (participant := runs.select_related("user", "link__dataset").filter(link=link).first()) is not None:
                return participant
            if runs.exists():
                raise _in_another_study(link)
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
        # Another account took the name in the same moment: the join is refused as a
        # clash found before is.
        raise _name_taken(link) from None
    participant.link = link
    return participant


# First key of the crowd's advisory locks (``annotation.runs`` keys its own by two
# 32-bit numbers; PostgreSQL keeps one-key and two-key locks apart).
_PLATFORM_ID_LOCK = "participant-join"


def _lock_platform_id(link: CampaignLink, external_id: str) -> None:
    """Hold, until the transaction ends, the lock of one platform id in one dataset, so
    two joins of it (two tabs of one link, or two links of the dataset) go one after
    the other. SQLite needs none: its transactions take the write lock at BEGIN
    (IMMEDIATE, config/settings.py), one at a time."""
    if connection.vendor != "postgresql":
        return
    key = f"{_PLATFORM_ID_LOCK}:{link.dataset_id}:{link.id_param}:{external_id}"
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [key])


def _crowd_user(link: CampaignLink, external_id: str):
    """A new account of the link for an external id, without a password:
    ``<platform>-<link id>-<external id>``. Each link makes its own, so knowing a
    platform id and any link never opens another link's run. A name that is taken in
    any case (a rater's, an admin's, one made by hand) raises JoinRefused: a link must
    never sign a visitor in as someone else."""
    prefix = PLATFORM_PREFIX.get(link.id_param, link.id_param.lower())
    users = get_user_model()
    username = f"{prefix}-{link.pk}-{external_id}"
    # Any case: ``Prolific-7-Alice`` is no more a way in than ``prolific-7-alice``.
    if users.objects.filter(username__iexact=username).exists():
        raise _name_taken(link)
    user = users(username=username)
    user.set_unusable_password()
    with transaction.atomic():
        user.save()
    group, _ = Group.objects.get_or_create(name=PARTICIPANT)
    user.groups.add(group)
    return user


def _is_participant_account(user, *, id_param: str, external_id: str) -> bool:
    """Whether ``user`` is nothing but the participant account a campaign link of the
    same platform made for ``external_id``: participant group only, no usable password,
    no staff or superuser flag, and a participant row with that id."""
    if user.is_staff or user.is_superuser or user.has_usable_password():
        return False
    groups = set(user.groups.values_list("name", flat=True))
    if groups != {PARTICIPANT}:
        return False
    return Participant.objects.filter(user=user, link__id_param=id_param, external_id=external_id).exists()


def _name_taken(link: CampaignLink) -> JoinRefused:
    return JoinRefused(
        f"This participant id ({link.id_param}) cannot be used for this study: it is taken by another account. "
        "Nobody was signed in. Please contact the researcher of the study.",
        http_status=409,
    )


def _in_another_study(link: CampaignLink) -> JoinRefused:
    return JoinRefused(
        f"With this participant id ({link.id_param}) you already take part in a study on this data set, "
        "so this link cannot be used. Nobody was signed in. Please go on through the study you joined first.",
        http_status=409,
    )


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
    NO_WORK = "no_work"  # nothing left for them before the quota: the partial code, if earned
    SCREENED_OUT = "screened_out"  # every kind's quiz failed: no code, return the study
    FINISHED = "finished"  # the end page was shown: ``Participant.outcome`` says which


def participant_next(participant: Participant) -> tuple[str, str | None]:
    """(Step, kind): a quiz of the link's kinds the participant still has to take comes
    first, then the first kind they may rate with pairs left for them; else why they
    are through."""
    from annotation.quality.quiz import quiz_offered
    from annotation.selectors import rater_kinds_with_pairs_left

    link = participant.link
    if participant.finished_at is not None:
        return Step.FINISHED, None
    qualified = set(
        Qualification.objects.filter(rater_id=participant.user_id)
        .in_dataset(link.dataset_id)
        .values_list("kind", flat=True)
    )
    # The quiz gates its kind's ratings and screens the participant: taken before any
    # quiz-free kind of the link, and before the quota counts, so nobody rates their
    # quota around it (the rating policy refuses such claims: QuizFirst).
    for kind in link.kinds:
        if kind not in qualified and quiz_offered(rater=participant.user, dataset_id=link.dataset_id, kind=kind):
            return Step.RATE, kind
    if participant_items_done(participant) >= link.quota:
        return Step.DONE, None
    left = rater_kinds_with_pairs_left(rater=participant.user, kinds=list(link.kinds), dataset_id=link.dataset_id)
    for kind in link.kinds:
        if kind in qualified and kind in left:
            return Step.RATE, kind
    if qualified.intersection(link.kinds):
        return Step.NO_WORK, None
    return Step.SCREENED_OUT, None


def participant_skips(participant: Participant) -> int:
    """Pairs (ordinary and gold) the participant skipped or flagged in the link's
    dataset since joining it."""
    ordinary = PairSkip.objects.filter(
        rater_id=participant.user_id,
        pair__dataset_id=participant.link.dataset_id,
        created_at__gte=participant.started_at,
    ).count()
    gold = GoldLease.objects.filter(
        rater_id=participant.user_id,
        dataset_id=participant.link.dataset_id,
        state=GoldLeaseState.SKIPPED,
        leased_at__gte=participant.started_at,
    ).count()
    return ordinary + gold


def completion_outcome(*, step: str, items_done: int, skips_done: int, partial_code: str) -> str:
    """How a run that reached ``step`` ends (a ParticipantOutcome value).

    The full code needs the quota rated (``Step.DONE``). A run whose pairs ran out first
    earns the link's partial code only with real work in it: at least one rating and no
    more skips than ratings, so skipping pairs until the queue is empty (each skip takes
    a pair out of the participant's queue for good) earns nothing. Everything else,
    and any run of a link without a partial code, is asked to return the study."""
    if step == Step.DONE:
        return ParticipantOutcome.COMPLETED
    if step == Step.NO_WORK and partial_code and items_done >= 1 and skips_done <= items_done:
        return ParticipantOutcome.PARTIAL
    return ParticipantOutcome.RETURNED


def participant_finish(participant: Participant, *, step: str, now: datetime | None = None) -> Participant:
    """End the run (once) as ``step`` decides: record the items rated, the skips and
    the outcome (``completion_outcome``). A finished run keeps what was recorded first:
    its end page shows the same code, or none, every time; the claim serves it nothing."""
    if participant.finished_at is None:
        if step not in (Step.DONE, Step.NO_WORK, Step.SCREENED_OUT):
            raise ValueError(f"a run cannot end at step {step!r}")
        done, skips = participant_items_done(participant), participant_skips(participant)
        outcome = completion_outcome(
            step=step, items_done=done, skips_done=skips, partial_code=participant.link.partial_code
        )
        Participant.objects.filter(pk=participant.pk, finished_at__isnull=True).update(
            finished_at=now or timezone.now(), items_done=done, skips_done=skips, outcome=outcome
        )
        participant.refresh_from_db()
    return participant


def participant_code(participant: Participant) -> str:
    """The code the participant's finished run was given: the completion code, the
    partial code, or '' (returned)."""
    link = participant.link
    return {
        ParticipantOutcome.COMPLETED: link.completion_code,
        ParticipantOutcome.PARTIAL: link.partial_code,
    }.get(participant.outcome, "")


def completion_url(link: CampaignLink, outcome: str = ParticipantOutcome.COMPLETED) -> str:
    """Where the end page sends the participant back to the platform; '' for nowhere.
    A completed run goes to the link's return URL, or Prolific's with the code. A
    partial run goes to Prolific's URL with the partial code only when the link has no
    return URL of its own (that one may carry the full code); a returned run goes
    nowhere (it is returned on the platform)."""
    if outcome == ParticipantOutcome.COMPLETED:
        if link.return_url:
            return link.return_url
        return f"{PROLIFIC_COMPLETE}?{urlencode({'cc': link.completion_code})}"
    if outcome == ParticipantOutcome.PARTIAL and not link.return_url and link.id_param == "PROLIFIC_PID":
        return f"{PROLIFIC_COMPLETE}?{urlencode({'cc': link.partial_code})}"
    return ""


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
