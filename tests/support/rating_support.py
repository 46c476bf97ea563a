"""Rating pairs in tests the way raters do: through the rating service, so a pair's
count, its slots' copies (``pair_done``, ``pair_complete``) and the open-pairs counter
are exactly what ``annotation.serving.rating_submit`` leaves."""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import Case, Value, When
from django.utils import timezone

from annotation.models import Pair, RatingSlot, SlotState
from annotation.serving import SubmitResult, lease_ttl, rating_submit


def rate_pair(
    pair: Pair, scores: Sequence[float], *, raters: Sequence | None = None, times_ms: Sequence[int] | None = None
) -> list[SubmitResult]:
    """Rate ``pair`` once per score, filling its open slots in index order.

    Each slot is first leased to its rater as a claim leaves it (leased, rater, lease
    times; one UPDATE for all of them), then the rating goes through ``rating_submit``.
    ``raters``: one distinct user per score (default: a new user each); ``times_ms``:
    time on item per score (default 10 s, 11 s ...). Raises ValueError when the lengths
    differ or the pair has fewer open slots than scores. ``pair.ratings_done`` is
    refreshed from the database.
    """
    if raters is None:
        from tests.factories import UserFactory  # the factories use this module

        raters = [UserFactory(password=None) for _ in scores]
    times_ms = times_ms if times_ms is not None else [10_000 + 1_000 * i for i in range(len(scores))]
    if not len(scores) == len(raters) == len(times_ms):
        raise ValueError(f"{len(scores)} scores need as many raters and times, got {len(raters)} and {len(times_ms)}")
    slot_ids = list(
        RatingSlot.objects.filter(pair=pair, state=SlotState.OPEN).order_by("index").values_list("id", flat=True)
    )[: len(scores)]
    if len(slot_ids) < len(scores):
        raise ValueError(f"pair #{pair.pk} has {len(slot_ids)} open slots, too few for {len(scores)} ratings")
    now = timezone.now()
    RatingSlot.objects.filter(pk__in=slot_ids, state=SlotState.OPEN).update(
        state=SlotState.LEASED,
        rater_id=Case(
            *(When(pk=slot_id, then=Value(rater.pk)) for slot_id, rater in zip(slot_ids, raters, strict=True))
        ),
        leased_at=now,
        lease_expires_at=now + lease_ttl(),
    )
    dataset = pair.dataset.name
    results = [
        rating_submit(
            rater=rater,
            dataset=dataset,
            slot_id=slot_id,
            score=float(score),
            time_on_item_ms=int(time_ms),
            time_to_first_move_ms=None,
            adjustments=0,
            idempotency_key=f"pair{pair.pk}-slot{slot_id}",
        )
        for slot_id, rater, score, time_ms in zip(slot_ids, raters, scores, times_ms, strict=True)
    ]
    pair.refresh_from_db(fields=["ratings_done"])
    return results


def db_id(kind: str, value: str) -> int:
    """The database id of an opaque id the rating API answered (``kind``: slot, pair,
    rating, flag or question; annotation.apis.fields.rater_ids)."""
    from annotation.apis.fields import rater_ids

    return rater_ids().decode(kind, int(value))


def api_id(kind: str, value: int) -> str:
    """The opaque id the rating API gives for the database id ``value``."""
    from annotation.apis.fields import rater_ids

    return str(rater_ids().encode(kind, value))
