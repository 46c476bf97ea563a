"""Helpers of the exclusion tests: the invariant of every pair, and running an exclusion
or its undo the way the API does (the task queued on commit runs it)."""

from __future__ import annotations

from collections import Counter

from annotation.models import Pair, QueueCounter, Rating, RatingSlot, RatingStatus, SlotState
from annotation.quality.exclusion.services import rating_exclusion_create, rating_exclusion_undo
from tests.support.queue_support import claim, submit


def pair_problems(dataset_id: int) -> list[str]:
    """Every way a pair of the dataset breaks the invariant: for a pair in the queue,
    valid ratings + open slots + leased slots == ratings_required; for any pair,
    ratings_done == its valid ratings, from distinct raters; the open-pairs counters
    match. Empty when all is well."""
    problems = []
    valid = Counter(
        Rating.objects.filter(pair__dataset_id=dataset_id, status=RatingStatus.VALID).values_list("pair_id", flat=True)
    )
    distinct = {
        pair_id: len(set(raters))
        for pair_id, raters in _group(
            Rating.objects.filter(pair__dataset_id=dataset_id, status=RatingStatus.VALID).values_list(
                "pair_id", "rater_id"
            )
        ).items()
    }
    unfilled = Counter(
        RatingSlot.objects.filter(dataset_id=dataset_id, state__in=[SlotState.OPEN, SlotState.LEASED]).values_list(
            "pair_id", flat=True
        )
    )
    open_per_kind: Counter = Counter()
    for pair in Pair.objects.filter(dataset_id=dataset_id).values(
        "id", "kind", "ratings_done", "ratings_required", "retired_at"
    ):
        pid = pair["id"]
        if pair["ratings_done"] != valid[pid]:
            problems.append(f"pair {pid}: ratings_done {pair['ratings_done']} but {valid[pid]} valid ratings")
        if distinct.get(pid, 0) != valid[pid]:
            problems.append(f"pair {pid}: {valid[pid]} valid ratings from {distinct.get(pid, 0)} raters")
        if pair["retired_at"] is None:
            if valid[pid] + unfilled[pid] != pair["ratings_required"]:
                problems.append(
                    f"pair {pid}: {valid[pid]} valid + {unfilled[pid]} unfilled slots != {pair['ratings_required']}"
                )
            if pair["ratings_done"] < pair["ratings_required"]:
                open_per_kind[pair["kind"]] += 1
    for counter in QueueCounter.objects.filter(dataset_id=dataset_id):
        if counter.pairs_open != open_per_kind[counter.kind]:
            problems.append(
                f"counter {counter.kind}: {counter.pairs_open} open, pairs say {open_per_kind[counter.kind]}"
            )
    return problems


def _group(rows) -> dict:
    grouped: dict = {}
    for key, value in rows:
        grouped.setdefault(key, []).append(value)
    return grouped


def exclude(capture, **kwargs):
    """Create an exclusion and run the task its commit queues; returns it refreshed."""
    with capture(execute=True):
        exclusion = rating_exclusion_create(**kwargs)
    exclusion.refresh_from_db()
    return exclusion


def undo(capture, exclusion, by, reason="mistake"):
    with capture(execute=True):
        rating_exclusion_undo(exclusion_id=exclusion.id, undone_by=by, reason=reason)
    exclusion.refresh_from_db()
    return exclusion


def rate_all(user, dataset, prefix) -> int:
    """Claim and rate until the queue has nothing more for ``user``; the number rated."""
    done = 0
    while (assignment := claim(user, dataset)) is not None:
        submit(user, dataset, assignment.slot_id, f"{prefix}-{done}")
        done += 1
    return done
