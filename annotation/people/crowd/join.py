"""Joining through a campaign link: the participant of a link and platform
id, made on the first visit (``participant_join``) under the rules of the crowd package
(one account per link and id, one link per id and dataset, no other account ever signed
in). ``join_target`` answers whom a link would sign in without making anything, so the
page can ask a visitor signed in as someone else before it signs them out. The
id must look like one of the link's platform or match its pattern (``external_ids``), and
new accounts are rate-limited per client address and per link (``signup_limits``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from annotation.core.errors import DomainError
from annotation.core.roles import PARTICIPANT
from annotation.models import CampaignLink, GoldPair, Participant, Qualification
from annotation.people.crowd.external_ids import external_id_problem
from annotation.people.crowd.signup_limits import address_key, signup_lock, signup_record, signup_refusal

SIDE_PARAMS = {"study_id": "STUDY_ID", "session_id": "SESSION_ID"}
# Short names of the platforms' id parameters, for the participants' user names.
PLATFORM_PREFIX = {"PROLIFIC_PID": "prolific", "workerId": "mturk"}


class JoinRefused(DomainError):
    """A campaign link that cannot be followed; the page shows the message."""

    code = "join_refused"

    def __init__(self, message: str, *, http_status: int = 400, retry_after_seconds: int | None = None):
        super().__init__(message)
        self.http_status = http_status
        if retry_after_seconds is not None:
            # HTTP header names are case-insensitive: another spelling is the same answer.
            self.headers = {"Retry-After": str(retry_after_seconds)}  # pragma: no mutate


@dataclass(frozen=True)
class JoinTarget:
    """Whom a campaign link and its query string name: the link, the platform id, and the
    participant of that id on that link when they joined before (None: a first visit)."""

    link: CampaignLink
    external_id: str
    participant: Participant | None


def join_target(*, token: str, params: Mapping[str, str], now: datetime | None = None) -> JoinTarget:
    """Whom following ``token``'s link with ``params`` (the query string) would sign in,
    checked as ``participant_join`` checks it, making nothing. Raises JoinRefused saying
    what is wrong with the link or the id."""
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
    problem = external_id_problem(external_id, id_param=link.id_param, id_pattern=link.id_pattern)
    if problem is not None:
        raise JoinRefused(f"{problem} Open the study from its page on the platform: the link there carries your id.")
    known = Participant.objects.select_related("user", "link__dataset").filter(link=link, external_id=external_id)
    if (participant := known.first()) is not None:
        # Checked on every visit: an account given a password or a role since it joined
        # is no longer the link's to sign in.
        if not _is_participant_account(participant.user):
            raise _name_taken(link)
        return JoinTarget(link=link, external_id=external_id, participant=participant)
    if not link.active or (link.expires_at is not None and link.expires_at <= now):
        raise JoinRefused(
            "This study is closed: it takes no new participants. Please return it on the platform.", http_status=410
        )
    return JoinTarget(link=link, external_id=external_id, participant=None)


def participant_join(
    *,
    token: str,
    params: Mapping[str, str],
    client_address: str | None = None,
    now: datetime | None = None,
) -> Participant:
    """The participant of ``token``'s link with the external id in ``params`` (the query
    string), made on their first visit. ``client_address`` is the web client's, counted
    by the limit of new accounts per address (None: no web request, counted against the
    link only). Raises JoinRefused saying what is wrong with the link or the id, or
    that too many new accounts were made (429, with Retry-After); nothing is made then."""
    now = now or timezone.now()
    target = join_target(token=token, params=params, now=now)
    if target.participant is not None:
        return target.participant
    return _participant_new(target.link, target.external_id, params, address_key(client_address), now)


def _participant_new(link: CampaignLink, external_id: str, params: Mapping[str, str], key: str, now) -> Participant:
    side = {field: (params.get(name) or "")[:64] for field, name in SIDE_PARAMS.items()}
    try:
        with transaction.atomic():
            _lock_platform_id(link, external_id)
            # Under the lock: the same id's other tab may have made this link's run a
            # moment ago; a run on another link of the dataset refuses this one.
            runs = Participant.objects.filter(
                link__dataset_id=link.dataset_id, link__id_param=link.id_param, external_id=external_id
            )
            # Only a race reaches this line (participant_join looked for the run a moment
            # ago), so a mutant of it only a concurrent test tells apart.
            made = runs.select_related("user", "link__dataset").filter(link=link).first()  # pragma: no mutate
            if made is not None:  # pragma: no mutate
                return made
            if runs.exists():
                raise _in_another_study(link)
            # The locks keep the cap and the rate limits exact under a rush.
            locked = signup_lock(link, key)
            if locked.max_participants is not None and locked.participants.count() >= locked.max_participants:
                raise JoinRefused(
                    "This study is full: every place is taken. Please return it on the platform.", http_status=410
                )
            refusal = signup_refusal(locked, key, now=now)
            if refusal is not None:
                raise JoinRefused(refusal.message, http_status=429, retry_after_seconds=refusal.retry_after_seconds)
            user = _crowd_user(link, external_id)
            participant = Participant.objects.create(
                link=link, user=user, external_id=external_id, started_at=now, **side
            )
            _grant_kinds_without_quiz(user, link)
            signup_record(link, key, now=now)
    except IntegrityError:
        # Another account took the name in the same moment: the join is refused as a
        # clash found before is (a race only: no mutant of the line).
        raise _name_taken(link) from None  # pragma: no mutate
    participant.link = link
    return participant


# First key of the crowd's advisory locks (``annotation.runs.lifecycle`` keys its own by two
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


def _is_participant_account(user) -> bool:
    """Whether ``user`` (the account of a link's participant row) is still nothing but a
    participant account: participant group only, no usable password, no staff or
    superuser flag."""
    if user.is_staff or user.is_superuser or user.has_usable_password():
        return False
    return set(user.groups.values_list("name", flat=True)) == {PARTICIPANT}


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
        GoldPair.objects.filter(dataset_id=link.dataset_id, in_quiz=True, active=True)
        .values_list("kind", flat=True)
        .distinct()
    )
    free = [kind for kind in link.kinds if kind not in with_quiz]
    # The account was made in this transaction: it has no grant yet to conflict with.
    Qualification.objects.bulk_create(
        [Qualification(rater=user, dataset_id=link.dataset_id, kind=kind) for kind in free]
    )
