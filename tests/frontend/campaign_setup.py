"""A rated campaign for the campaign page tests: the pairs of a dataset rated by a few
raters through the rating service (tests/support/rating_support.py), spread over the last days,
then a real snapshot refresh."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from annotation.dashboard.services import campaign_snapshot_refresh
from annotation.models import CampaignSnapshot, Dataset, Pair, Rating
from tests.support.rating_support import rate_pair

# How far back the ratings of the i-th pair go (days), so the per-day chart has bars.
DAYS_BACK = (4, 3, 3, 2, 1, 1, 0)


def score_of(pair_index: int, rater_index: int) -> float:
    """A deterministic, rater-dependent score in 0-5: the pair sets the level, each
    rater leans a little; the last rater disagrees more (the one to find on the page)."""
    level = (pair_index * 1.7) % 5
    lean = (-0.4, -0.1, 0.1, 0.3, 1.5)[rater_index % 5] * (1 if level < 2.5 else -1)
    return round(min(5.0, max(0.0, level + lean)), 2)


def rate_campaign(dataset: Dataset, raters: list, *, partial_every: int = 5) -> CampaignSnapshot:
    """Rate every pair of ``dataset`` fully (one rating per rater, ``len(raters)`` must be
    its ratings per pair), except every ``partial_every``-th pair, which gets two
    ratings; backdate the ratings over the last days; return a fresh snapshot."""
    now = timezone.now()
    pairs = list(Pair.objects.filter(dataset=dataset).order_by("id"))
    for i, pair in enumerate(pairs):
        count = 2 if i % partial_every == partial_every - 1 else len(raters)
        who = [raters[(i + j) % len(raters)] for j in range(count)]
        scores = [score_of(i, raters.index(r)) for r in who]
        # The first rater is quick: some of their ratings fall under every speed floor.
        times = [1_000 if raters.index(r) == 0 else 8_000 + 1_500 * raters.index(r) for r in who]
        rate_pair(pair, scores, raters=who, times_ms=times)
        back = timedelta(days=DAYS_BACK[i % len(DAYS_BACK)], minutes=7 * i)
        Rating.objects.filter(pair=pair).update(created_at=now - back)
    return campaign_snapshot_refresh(dataset)
