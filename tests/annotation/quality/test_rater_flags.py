"""The rater flags (annotation.quality.flags): pure, no database."""

import math

import pytest

from annotation.quality.flags import (
    MIN_FAST_RATINGS,
    MIN_GOLD_ITEMS,
    MIN_GOLD_MET,
    MIN_SHARED_PAIRS,
    FlagThresholds,
    RaterFigures,
    flag_reasons,
)

DEFAULTS = FlagThresholds(loo_below=0.3, gold_error_above=1.0, fast_share_above=0.5, gold_skip_share_above=0.5)

# The injected bad rater of the real-data run and a good one.
BAD = RaterFigures(
    loo_correlation=0.05,
    shared_pairs=200,
    fast_share=1.0,
    ratings=300,
    gold_error=1.81,
    gold_items=12,
    gold_passed=0,
)
GOOD = RaterFigures(
    loo_correlation=0.85, shared_pairs=200, fast_share=0.02, ratings=300, gold_error=0.4, gold_items=12, gold_passed=1
)


def test_the_bad_rater_of_the_real_data_run_is_flagged_on_all_three_measures():
    assert flag_reasons(BAD, DEFAULTS) == [
        "LOO r 0.05 < 0.30",
        "gold error 1.81 > 1.00",
        "100% under the speed floor > 50%",
    ]


def test_a_good_rater_is_not_flagged():
    assert flag_reasons(GOOD, DEFAULTS) == []


def test_gold_skips_are_a_share_of_the_gold_pairs_met():
    dodger = RaterFigures(gold_items=2, gold_passed=6)
    assert dodger.gold_skip_share == pytest.approx(0.75)
    assert flag_reasons(dodger, DEFAULTS) == ["75% of gold pairs skipped > 50%"]
    assert RaterFigures().gold_skip_share is None


@pytest.mark.parametrize(
    ("figures", "reason"),
    [
        (RaterFigures(loo_correlation=-0.9, shared_pairs=MIN_SHARED_PAIRS - 1), "LOO r"),
        (RaterFigures(gold_error=4.0, gold_items=MIN_GOLD_ITEMS - 1), "gold error"),
        (RaterFigures(fast_share=1.0, ratings=MIN_FAST_RATINGS - 1), "speed floor"),
        (RaterFigures(gold_items=0, gold_passed=MIN_GOLD_MET - 1), "gold pairs skipped"),
    ],
)
def test_a_figure_resting_on_too_few_ratings_flags_nobody_and_does_at_the_minimum(figures, reason):
    assert flag_reasons(figures, DEFAULTS) == []
    enough = {
        "LOO r": {"shared_pairs": MIN_SHARED_PAIRS},
        "gold error": {"gold_items": MIN_GOLD_ITEMS},
        "speed floor": {"ratings": MIN_FAST_RATINGS},
        "gold pairs skipped": {"gold_passed": MIN_GOLD_MET},
    }[reason]
    (found,) = flag_reasons(RaterFigures(**{**figures.__dict__, **enough}), DEFAULTS)
    assert reason in found


def test_thresholds_are_strict_and_each_can_be_turned_off():
    at_limits = RaterFigures(
        loo_correlation=0.3, shared_pairs=50, fast_share=0.5, ratings=50, gold_error=1.0, gold_items=10, gold_passed=10
    )
    assert flag_reasons(at_limits, DEFAULTS) == []
    assert flag_reasons(BAD, FlagThresholds()) == []
    only_gold = FlagThresholds(gold_error_above=1.0)
    assert flag_reasons(BAD, only_gold) == ["gold error 1.81 > 1.00"]


def test_missing_or_non_finite_figures_flag_nobody():
    figures = RaterFigures(loo_correlation=None, shared_pairs=50, fast_share=math.nan, ratings=50, gold_items=10)
    assert flag_reasons(figures, DEFAULTS) == []


def test_a_share_just_over_the_limit_does_not_read_as_equal():
    (reason,) = flag_reasons(RaterFigures(fast_share=0.504, ratings=50), DEFAULTS)
    assert reason == "50.4% under the speed floor > 50%"


def test_figures_come_from_a_snapshot_rater_row():
    row = {
        "loo_correlation": 0.1,
        "shared_pairs": 12,
        "fast_share": 0.2,
        "ratings_total_all": 40,
        "gold_error": 2.0,
        "gold_items": 6,
        "gold_passed": 3,
    }
    figures = RaterFigures.from_rater_row(row)
    assert figures == RaterFigures(
        loo_correlation=0.1, shared_pairs=12, fast_share=0.2, ratings=40, gold_error=2.0, gold_items=6, gold_passed=3
    )
    assert RaterFigures.from_rater_row({**row, "quota": 3}).quota == 3


@pytest.mark.parametrize(
    ("quota", "ratings", "flagged"),
    [
        (None, MIN_FAST_RATINGS, True),  # a share from a few ratings, not from ten
        (None, MIN_FAST_RATINGS - 1, False),
        (3, 3, True),  # a quota under the minimum: the whole quota judges
        (3, 2, False),  # not yet done with it
        (1, 1, True),
        (12, MIN_FAST_RATINGS, True),  # a longer quota waits for the usual minimum only
        (12, MIN_FAST_RATINGS - 1, False),
    ],
)
def test_the_speed_floor_share_counts_from_a_few_ratings_or_a_shorter_quota(quota, ratings, flagged):
    figures = RaterFigures(fast_share=1.0, ratings=ratings, quota=quota)
    assert flag_reasons(figures, DEFAULTS) == (["100% under the speed floor > 50%"] if flagged else [])


def test_a_careful_rater_of_a_short_quota_is_not_flagged():
    assert flag_reasons(RaterFigures(fast_share=0.2, ratings=5, quota=5), DEFAULTS) == []
    assert flag_reasons(RaterFigures(fast_share=0.5, ratings=4, quota=4), DEFAULTS) == [], "at the limit: strict"


def test_the_thresholds_describe_themselves_with_their_minimums():
    lines = DEFAULTS.describe()
    assert lines[0] == f"LOO r below 0.30 (from {MIN_SHARED_PAIRS} shared pairs)"
    assert lines[2] == (
        f"share under the speed floor above 50% (from {MIN_FAST_RATINGS} ratings, or a participant's whole quota "
        "when smaller)"
    )
    assert FlagThresholds().describe()[1] == "gold error: off"
