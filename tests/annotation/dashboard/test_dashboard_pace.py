"""The campaign's recent pace and finish estimate: pure numpy, no database."""

import numpy as np
import pytest

from annotation.dashboard import pace

NOW = 1_772_452_800.0  # 2026-03-02 12:00 UTC
MINUTE = 60.0


def test_the_first_minutes_of_a_campaign_are_its_pace():
    # 14,400 ratings in the first 6 minutes; 14,400 more to go. The 24-hour rate read this
    # as 600 an hour, finishing tomorrow; at the real pace it ends in 6 more minutes.
    times = np.linspace(NOW - 6 * MINUTE, NOW, 14_400)
    found = pace.pace_and_finish(times, now_s=NOW, remaining=14_400)
    assert (found.state, found.window, found.ratings) == (pace.ESTIMATE, pace.SINCE_FIRST_RATING, 14_400)
    assert found.window_s == pytest.approx(6 * MINUTE)
    assert found.per_hour == pytest.approx(144_000)
    assert found.finish_s == pytest.approx(NOW + 6 * MINUTE)


def test_a_steady_campaign_is_paced_over_the_last_hour():
    # A day at 100 an hour, then 300 in the last hour: the last hour counts, not the day.
    day = np.linspace(NOW - 24 * 3600, NOW - 3600, 2_300, endpoint=False)
    last_hour = np.linspace(NOW - 3600 + 1, NOW, 300)
    later = np.array([NOW + 5])  # after the snapshot's moment: left out
    found = pace.pace_and_finish(np.concatenate([day, last_hour, later]), now_s=NOW, remaining=600)
    assert (found.state, found.window, found.window_s, found.ratings) == (pace.ESTIMATE, pace.LAST_HOUR, 3600, 300)
    assert found.per_hour == pytest.approx(300)
    assert found.finish_s == pytest.approx(NOW + 2 * 3600)


def test_the_window_is_the_last_hour_from_the_first_ratings_hour_on():
    at_hour = pace.pace_and_finish(np.array([NOW - 3600, NOW - 10]), now_s=NOW, remaining=1)
    # The rating an hour ago is outside (now - 1 h, now].
    assert (at_hour.window, at_hour.ratings) == (pace.LAST_HOUR, 1)
    under = pace.pace_and_finish(np.array([NOW - 3599, NOW - 10]), now_s=NOW, remaining=1)
    assert (under.window, under.ratings, under.window_s) == (pace.SINCE_FIRST_RATING, 2, 3599)


def test_no_ratings_yet_gives_no_pace_and_no_estimate():
    found = pace.pace_and_finish(np.empty(0), now_s=NOW, remaining=900)
    assert found == pace.Pace(state=pace.NO_RATINGS, window=None, window_s=0.0, ratings=0, per_hour=None, finish_s=None)
    future_only = pace.pace_and_finish(np.array([NOW + 1]), now_s=NOW, remaining=900)
    assert future_only.state == pace.NO_RATINGS


def test_a_first_rating_under_a_minute_old_gives_no_pace_yet():
    found = pace.pace_and_finish(np.array([NOW - 30, NOW]), now_s=NOW, remaining=10)
    assert (found.state, found.window, found.ratings, found.per_hour, found.finish_s) == (
        pace.TOO_EARLY,
        pace.SINCE_FIRST_RATING,
        2,
        None,
        None,
    )
    at_a_minute = pace.pace_and_finish(np.array([NOW - 60, NOW]), now_s=NOW, remaining=10)
    assert at_a_minute.state == pace.ESTIMATE and at_a_minute.per_hour == pytest.approx(120)


def test_a_quiet_last_hour_is_pace_zero_without_a_finish():
    found = pace.pace_and_finish(np.array([NOW - 3 * 3600, NOW - 2 * 3600]), now_s=NOW, remaining=10)
    assert (found.state, found.window, found.ratings, found.per_hour, found.finish_s) == (
        pace.IDLE,
        pace.LAST_HOUR,
        0,
        0.0,
        None,
    )


def test_a_finished_campaign_is_done_at_its_last_rating():
    times = np.array([NOW - 2 * 3600, NOW - 1800, NOW - 600])
    found = pace.pace_and_finish(times, now_s=NOW, remaining=0)
    assert (found.state, found.finish_s, found.ratings) == (pace.DONE, NOW - 600, 2)
    assert found.per_hour == pytest.approx(2)
    nothing_to_do = pace.pace_and_finish(np.empty(0), now_s=NOW, remaining=0)
    assert (nothing_to_do.state, nothing_to_do.finish_s) == (pace.DONE, None)
