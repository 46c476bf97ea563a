"""Rater and account services: what a rater may be served."""

from __future__ import annotations

from django.db import transaction

from annotation.models import Qualification, TaskKind
from annotation.queue.claim import qualified_kinds
from annotation.queue.shapes import QueueInputError
from annotation.roles import RATER, has_role


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
