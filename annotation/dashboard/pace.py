"""The campaign's recent pace and the finish time it implies. Pure numpy, no Django.

The pace is the ratings of the last hour, or of the time since the first rating when the
campaign is younger than that: a campaign's first minutes are its real pace (14,400
ratings in 6 minutes are 144,000 an hour, not the 600 an hour a 24-hour window reads),
and a campaign that slowed down shows it within the hour. Times are seconds since the
Unix epoch, UTC.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

HOUR_S = 3_600.0
# Below this much time since the first rating there is no pace yet: a rating a second ago
# says nothing about the hours to come.
SHORTEST_WINDOW_S = 60.0

# What a Pace rests on (``Pace.state``).
ESTIMATE = "estimate"  # a pace above zero and work left: ``finish_s`` is set
DONE = "done"  # no work left: ``finish_s`` is the latest rating's time (None without ratings)
NO_RATINGS = "no_ratings"  # nothing rated yet: no pace
TOO_EARLY = "too_early"  # the first rating is under SHORTEST_WINDOW_S old: no pace yet
IDLE = "idle"  # no ratings in the last hour: pace 0, no finish time

LAST_HOUR = "last_hour"
SINCE_FIRST_RATING = "since_first_rating"


@dataclass(frozen=True)
class Pace:
    """``window``: LAST_HOUR or SINCE_FIRST_RATING (None without ratings); ``window_s``
    its length in seconds; ``ratings`` in it; ``per_hour`` the pace (None when there is
    none: NO_RATINGS, TOO_EARLY); ``finish_s`` per ``state``."""

    state: str
    window: str | None
    window_s: float
    ratings: int
    per_hour: float | None
    finish_s: float | None


def pace_and_finish(epoch_s: np.ndarray, *, now_s: float, remaining: int) -> Pace:
    """The pace of the events ``epoch_s: float (m,)`` up to ``now_s`` (later ones are left
    out) and when ``remaining`` more events end at it."""
    epoch_s = np.asarray(epoch_s, dtype=np.float64)
    epoch_s = epoch_s[epoch_s <= now_s]
    if epoch_s.size == 0:
        state = DONE if remaining == 0 else NO_RATINGS
        return Pace(state=state, window=None, window_s=0.0, ratings=0, per_hour=None, finish_s=None)
    since_first = now_s - float(epoch_s.min())
    if since_first >= HOUR_S:
        window, window_s = LAST_HOUR, HOUR_S
        ratings = int(np.count_nonzero(epoch_s > now_s - HOUR_S))
    else:
        window, window_s, ratings = SINCE_FIRST_RATING, since_first, int(epoch_s.size)
    per_hour = ratings / window_s * HOUR_S if window_s >= SHORTEST_WINDOW_S else None
    if remaining == 0:
        state, finish = DONE, float(epoch_s.max())
    elif per_hour is None:
        state, finish = TOO_EARLY, None
    elif per_hour == 0:
        state, finish = IDLE, None
    else:
        state, finish = ESTIMATE, now_s + remaining / per_hour * HOUR_S
    return Pace(state=state, window=window, window_s=window_s, ratings=ratings, per_hour=per_hour, finish_s=finish)
