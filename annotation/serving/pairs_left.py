"""How many pairs are left for a rater: open slots of the kinds they may rate, plus the gold
items still owed to them (the mechanism's own reads; the crowd's completion and the
progress read them)."""

from __future__ import annotations

from django.db.models import Count, F, QuerySet, Sum

from annotation.models import (
    GoldLease,
    GoldLeaseState,
    GoldPair,
    PairSkip,
    QualitySettings,
    QueueCounter,
    RatingSlot,
    SlotState,
)
from annotation.serving.gold import gold_unmet


def rater_pairs_left(*, rater, kinds: list[str], dataset_id: int | None = None) -> dict[tuple[int, str], int]:
    """(dataset id, kind) -> pairs left for the rater, for ``kinds`` (and one dataset if
    given); pairs with nothing left are absent.

    Gold pairs count as any other, so the figure moves alike whichever pair a rater
    rates or skips: the ordinary pairs that still need ratings and that the rater has
    neither rated nor skipped (a held one counts), plus their held gold lease, plus,
    while ordinary pairs are left (gold follows the ordinary pace) and the dataset serves
    gold, the gold pairs the queue may still serve them (``gold_unmet``). Claiming
    either moves a pair into "held" and leaves the figure; rating or skipping either
    takes one off. Five grouped reads whatever the queue size."""

    left = _ordinary_left(rater=rater, kinds=kinds, dataset_id=dataset_id)
    unmet = _count_by(gold_unmet(rater=rater, dataset_id=dataset_id, kinds=kinds), ("dataset_id", "kind"), Count("id"))
    gold_off = _datasets_without_gold({dataset for dataset, _ in unmet})
    for key, n in unmet.items():
        if left.get(key, 0) > 0 and key[0] not in gold_off:
            left[key] += n
    for key, n in _held_gold(rater=rater, kinds=kinds, dataset_id=dataset_id).items():
        left[key] = left.get(key, 0) + n
    return {key: n for key, n in left.items() if n > 0}


def rater_kinds_with_pairs_left(*, rater, kinds: list[str], dataset_id: int) -> set[str]:
    """The kinds of ``kinds`` with a pair left for the rater in the dataset
    (``rater_pairs_left`` above zero), in four grouped reads: gold pairs left count only
    while ordinary pairs are left, so they never decide it."""
    left = _ordinary_left(rater=rater, kinds=kinds, dataset_id=dataset_id)
    for key, n in _held_gold(rater=rater, kinds=kinds, dataset_id=dataset_id).items():
        left[key] = left.get(key, 0) + n
    return {kind for (_, kind), n in left.items() if n > 0}


def pairs_left_for_a_newcomer(*, dataset_id: int, kinds: list[str]) -> dict[str, int]:
    """kind -> the pairs a rater who has rated nothing in the dataset could rate there
    now (``rater_pairs_left`` of such a rater): the ordinary pairs that still need
    ratings, plus, while some are left and the dataset serves gold, its active gold pairs
    outside the quiz. Kinds with nothing left map to 0. Two reads."""
    open_pairs = dict(
        QueueCounter.objects.filter(dataset_id=dataset_id, kind__in=kinds).values_list("kind", "pairs_open")
    )
    gold = {}
    if not _datasets_without_gold({dataset_id}):
        gold = _count_by(
            GoldPair.objects.filter(dataset_id=dataset_id, kind__in=kinds, active=True, in_quiz=False),
            ("dataset_id", "kind"),
            Count("id"),
        )
    left = {}
    for kind in kinds:
        ordinary = open_pairs.get(kind, 0)
        left[kind] = ordinary + (gold.get((dataset_id, kind), 0) if ordinary > 0 else 0)
    return left


def _ordinary_left(*, rater, kinds: list[str], dataset_id: int | None) -> dict[tuple[int, str], int]:
    """(dataset id, kind) -> ordinary pairs that still need ratings and that the rater has
    neither rated nor skipped (a held one counts); may be zero or less."""
    counters = QueueCounter.objects.filter(kind__in=kinds)
    rated = RatingSlot.objects.filter(rater=rater, kind__in=kinds, pair_complete=False, state=SlotState.DONE)
    skipped = PairSkip.objects.filter(
        rater=rater,
        pair__kind__in=kinds,
        pair__ratings_done__lt=F("pair__ratings_required"),
        pair__retired_at__isnull=True,
    )
    if dataset_id is not None:
        counters = counters.filter(dataset_id=dataset_id)
        rated = rated.filter(dataset_id=dataset_id)
        skipped = skipped.filter(pair__dataset_id=dataset_id)
    left = _count_by(counters, ("dataset_id", "kind"), Sum("pairs_open"))
    not_for_rater = (
        _count_by(rated, ("dataset_id", "kind"), Count("id")),
        _count_by(skipped, ("pair__dataset_id", "pair__kind"), Count("id")),
    )
    for counts in not_for_rater:
        for key, n in counts.items():
            left[key] = left.get(key, 0) - n
    return left


def _held_gold(*, rater, kinds: list[str], dataset_id: int | None) -> dict[tuple[int, str], int]:
    """(dataset id, kind) -> the rater's held leases of active gold pairs."""
    held = GoldLease.objects.filter(rater=rater, kind__in=kinds, state=GoldLeaseState.LEASED, gold_pair__active=True)
    if dataset_id is not None:
        held = held.filter(dataset_id=dataset_id)
    return _count_by(held, ("dataset_id", "kind"), Count("id"))


def _datasets_without_gold(dataset_ids: set[int]) -> set[int]:
    """Of ``dataset_ids``, those whose queue serves no gold (gold_one_in 0)."""
    if not dataset_ids:
        return set()
    return set(
        QualitySettings.objects.filter(dataset_id__in=dataset_ids, gold_one_in=0).values_list("dataset_id", flat=True)
    )


def _count_by(queryset: QuerySet, fields: tuple[str, str], total) -> dict[tuple, int]:
    rows = queryset.order_by().values(*fields).annotate(n=total).values_list(*fields, "n")
    return {(first, second): n for first, second, n in rows}
