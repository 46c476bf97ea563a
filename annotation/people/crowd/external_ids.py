"""Participant ids: an id a campaign link is opened with must look like an id
of the link's platform (Prolific's ``PROLIFIC_PID``: 24 hexadecimal characters; MTurk's
``workerId``: 12-14 capital letters and digits starting with A) or match the link's own
pattern, so a made-up string makes no account. The format proves nothing about a person
(anyone can write 24 hexadecimal characters): the rate limits on new accounts
(``signup_limits``) and what remains possible are in the admin guide's security section."""

from __future__ import annotations

import re
from dataclasses import dataclass

from annotation.core.errors import DomainError

# Every id also goes into its account's user name (``<platform>-<link id>-<id>``): whatever
# a platform or a link's pattern allows, it stays within these characters.
EXTERNAL_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
MAX_ID_PATTERN = 200


@dataclass(frozen=True)
class PlatformIds:
    """What a platform's participant ids look like, by the query parameter carrying them."""

    platform: str
    pattern: re.Pattern
    # As in "is not <a Prolific id (24 hexadecimal characters)>".
    description: str


PLATFORM_IDS = {
    "PROLIFIC_PID": PlatformIds(
        "Prolific", re.compile(r"[0-9a-fA-F]{24}"), "a Prolific id (24 hexadecimal characters: 0-9, a-f)"
    ),
    "workerId": PlatformIds(
        "MTurk",
        re.compile(r"A[A-Z0-9]{11,13}"),
        "an MTurk worker id (12-14 capital letters and digits, starting with A)",
    ),
}


class IdPatternInvalid(DomainError):
    code = "id_pattern_invalid"
    field = "id_pattern"


def id_pattern_check(pattern: str, *, id_param: str) -> None:
    """Raise IdPatternInvalid naming the problem of a link's id pattern: not a regular
    expression, longer than MAX_ID_PATTERN, matching an empty id; or empty for an id
    parameter whose platform format is not known (the link must say what its ids look like)."""
    if not pattern:
        if id_param not in PLATFORM_IDS:
            known = ", ".join(f"{name} ({ids.platform})" for name, ids in PLATFORM_IDS.items())
            raise IdPatternInvalid(
                f"the id parameter {id_param!r} is no platform's whose id format is known ({known}): "
                "give the link an id pattern, a regular expression every participant id must match"
            )
        return
    if len(pattern) > MAX_ID_PATTERN:
        raise IdPatternInvalid(f"the id pattern must be at most {MAX_ID_PATTERN} characters, got {len(pattern)}")
    try:
        compiled = re.compile(pattern)
    except re.error as problem:
        raise IdPatternInvalid(f"the id pattern is not a regular expression: {problem}") from None
    if compiled.fullmatch(""):
        raise IdPatternInvalid("the id pattern must not match an empty id")


def external_id_problem(external_id: str, *, id_param: str, id_pattern: str) -> str | None:
    """Why ``external_id`` is no participant id of a link with ``id_param`` and
    ``id_pattern`` (a sentence for the participant), or None when it is one."""
    if id_pattern:
        expected, fits = "the form this study expects", re.fullmatch(id_pattern, external_id)
    else:
        platform = PLATFORM_IDS[id_param]
        expected, fits = platform.description, platform.pattern.fullmatch(external_id)
    if fits and EXTERNAL_ID.fullmatch(external_id):
        return None
    return f"The participant id in this link ({id_param}) is not {expected}."
