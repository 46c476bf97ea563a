"""A small campaign whose dashboard numbers are worked out by hand, shared by the pure
snapshot test and the PostgreSQL one.

Three raters A, B, C rate three STS pairs (three ratings required each):

    pair   A   B   C   mean  SD (ddof=1)
    P1     1   2   3   2     1
    P2     2   2   5   3     sqrt(3) = 1.7320508
    P3     4   3   5   4     1

Beside them: P4 rated once by A (incomplete), P5 with a lease held now, P6 retired,
P7 flagged; none rated further. Day 1 = 2026-03-01 (UTC); P1 is rated on day 1 at
10:00, 10:10, 10:20; P2 on day 2 at 09:00, 09:10, 09:20; P3 at 10:00, 10:10, 10:20;
P4 at 11:30. The snapshot is taken on day 2 at 12:00.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

import numpy as np

from annotation.dashboard.snapshot import CampaignInputs
from annotation.dashboard.tables import PairTable, RatingTable
from tests.support import dashboard_data as hand

SCORES = {"P1": (1.0, 2.0, 3.0), "P2": (2.0, 2.0, 5.0), "P3": (4.0, 3.0, 5.0)}
# Time on item (ms) of A, B, C per pair: A is fast (floor STS 3 s), C slow.
TIMES_MS = {"P1": (1_000, 5_000, 10_000), "P2": (2_000, 5_000, 20_000), "P3": (4_000, 2_999, 30_000)}
P4_SCORE, P4_TIME_MS = 4.5, 2_500
DAY1 = datetime(2026, 3, 1, tzinfo=UTC)
NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
RATED_AT = {
    "P1": [datetime(2026, 3, 1, 10, m, tzinfo=UTC) for m in (0, 10, 20)],
    "P2": [datetime(2026, 3, 2, 9, m, tzinfo=UTC) for m in (0, 10, 20)],
    "P3": [datetime(2026, 3, 2, 10, m, tzinfo=UTC) for m in (0, 10, 20)],
    "P4": [datetime(2026, 3, 2, 11, 30, tzinfo=UTC)],
}

# Leave-one-out: the mean of the other two ratings of each pair.
#   P1: A 2.5, B 2.0, C 1.5   P2: A 3.5, B 3.5, C 2.0   P3: A 4.0, B 4.5, C 3.5
# A: x = 1, 2, 4 against y = 2.5, 3.5, 4: Sxy = 13/6, Sxx = 14/3, Syy = 7/6, r = 13/14;
#    bias = mean(-1.5, -1.5, 0) = -1.
# B: x = 2, 2, 3 against y = 2, 3.5, 4.5: Sxy = 7/6, Sxx = 2/3, Syy = 19/6,
#    r = 7 / (2 sqrt 19); bias = mean(0, -1.5, -1.5) = -1.
# C: x = 3, 5, 5 against y = 1.5, 2, 3.5: Sxy = 5/3, Sxx = 8/3, Syy = 13/6,
#    r = 5 / (2 sqrt 13); bias = mean(1.5, 3, 1.5) = 2.
LOO = {"A": 13 / 14, "B": 7 / (2 * math.sqrt(19)), "C": 5 / (2 * math.sqrt(13))}
BIAS = {"A": -1.0, "B": -1.0, "C": 2.0}
# Interval alpha: n = 9 values, grand mean 3, SS = 5 + 6 + 5 = 16; within-pair SS 2, 6, 2
# so sum m_u SS_u / (m_u - 1) = 3 + 9 + 3 = 15; alpha = 1 - 8 * 15 / (9 * 16) = 1/6.
ALPHA = 1 / 6
# Medians of A: 1, 2, 2.5 (P4), 4 s -> 2.25 s; B: 2.999, 5, 5 -> 5 s; C: 10, 20, 30 -> 20 s.
MEDIAN_SECONDS = {"A": 2.25, "B": 5.0, "C": 20.0}
# Under the STS floor of 3 s: A 1, 2, 2.5 of 4 ratings; B 2.999 of 3; C none.
FAST_SHARE = {"A": 0.75, "B": 1 / 3, "C": 0.0}
# Ratings in (day 1 12:00, day 2 12:00]: six of P2 and P3 plus P4's = 7. The pace: the first
# rating is a day old, so the last hour (11:00, 12:00] counts: P4's rating, 1 an hour;
# remaining: 6 pairs in the queue x 3 - (9 + 1) = 8 ratings -> 8 hours at that pace.
RATINGS_LAST_24H = 7
PACE_PER_HOUR = 1.0
REMAINING = 8
FINISH_HOURS = 8.0
PROGRESS_STS = {
    "pairs_queued": 6,  # P1-P5, P7 (P6 retired)
    "pairs_complete": 3,
    "pairs_in_progress": 2,  # P4 rated once, P5 leased
    "pairs_flagged": 1,
    "ratings_done": 10,
    "ratings_required": 18,
}
# Pair means 2, 3, 4 fall in 0.25-wide bins 8, 12, 16; SDs 1, 1.73, 1 in bins 4, 6, 4.
MEAN_BINS = {8: 1, 12: 1, 16: 1}
SD_BINS = {4: 2, 6: 1}
# STS positives reach 3: P2 and P3 of the three.
POSITIVES = 2


RATERS = {"A": 11, "B": 12, "C": 13}


METHODS = ["c2c_cocaption", "c2c_isim"]


def hand_inputs() -> CampaignInputs:
    ids = np.arange(1, 8)
    done = np.array([3, 3, 3, 1, 0, 0, 0])
    pairs = PairTable(
        id=ids,
        kind=np.zeros(7, dtype=np.int64),  # STS
        batch=np.full(7, 5, dtype=np.int64),
        method=np.zeros(7, dtype=np.int64),
        done=done,
        required=np.full(7, 3, dtype=np.int64),
        retired=ids == 6,
        methods=METHODS,
    )
    pair, rater, score, time_ms, at = [], [], [], [], []
    for number, name in enumerate(("P1", "P2", "P3"), start=1):
        for who, value, spent, when in zip(
            "ABC", hand.SCORES[name], hand.TIMES_MS[name], hand.RATED_AT[name], strict=True
        ):
            pair.append(number)
            rater.append(RATERS[who])
            score.append(value)
            time_ms.append(spent)
            at.append(when.timestamp())
    pair.append(4)
    rater.append(RATERS["A"])
    score.append(hand.P4_SCORE)
    time_ms.append(hand.P4_TIME_MS)
    at.append(hand.RATED_AT["P4"][0].timestamp())
    ratings = RatingTable(
        pair=np.array(pair), rater=np.array(rater), score=np.array(score), time_ms=np.array(time_ms), at=np.array(at)
    )
    return CampaignInputs(
        pairs=pairs,
        ratings=ratings,
        held_pairs=np.array([5]),
        flagged_pairs=np.array([7, 7]),
        leases_held=1,
        batch_names={5: "#5 val (sampled)"},
        usernames={11: "a", 12: "b", 13: "c", 14: "d"},
        skips={14: 2},
        flags={14: 1},
        last_passed={14: hand.DAY1.timestamp() + 3600},
        speed_floors={"STS": 3.0, "SIS": 1.5, "SITS": 1.5},
        now_s=hand.NOW.timestamp(),
    )
