"""The progress a claim read before its lease, made the progress after it
(``progress_sql.progress_after_claim``): only the oldest held lease can change. The
walk in test_progress_sql.py holds it to the progress read after real claims; these
are the orders the walk cannot reach (a lease without a time, clocks apart)."""

from datetime import UTC, datetime, timedelta

from annotation.rating.progress_sql import progress_after_claim

AT = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
UNTIL = AT + timedelta(minutes=10)
COUNTS = (7, 3, ["SIS"], [40])


def after(held_id, held_until, held_at, *, slot_id=50, resumed=False, leased_at=AT, gold_source=False):
    row = (*COUNTS, held_id, held_until, held_at, gold_source)
    return progress_after_claim(
        row, slot_id=slot_id, lease_expires_at=UNTIL, resumed=resumed, leased_at=None if resumed else leased_at
    )


def test_a_new_lease_with_nothing_held_is_the_oldest():
    assert after(None, None, None) == (*COUNTS, 50, UNTIL)


def test_a_lease_held_before_stays_the_oldest():
    earlier = AT - timedelta(minutes=3)
    assert after(40, earlier + timedelta(minutes=10), earlier) == (*COUNTS, 40, earlier + timedelta(minutes=10))


def test_a_lease_without_a_time_stays_the_oldest():
    assert after(60, UNTIL - timedelta(minutes=1), None) == (*COUNTS, 60, UNTIL - timedelta(minutes=1))


def test_a_lease_held_with_a_later_time_yields_to_the_new_one_and_a_tie_goes_by_id():
    assert after(40, UNTIL, AT + timedelta(seconds=1)) == (*COUNTS, 50, UNTIL)
    assert after(40, UNTIL - timedelta(minutes=1), AT) == (*COUNTS, 40, UNTIL - timedelta(minutes=1))
    assert after(60, UNTIL - timedelta(minutes=1), AT) == (*COUNTS, 50, UNTIL)


def test_a_resumed_lease_keeps_its_place_with_its_new_expiry():
    earlier = AT - timedelta(minutes=3)
    assert after(50, AT, earlier, resumed=True) == (*COUNTS, 50, UNTIL)
    assert after(40, AT, earlier, resumed=True) == (*COUNTS, 40, AT)


def test_a_read_that_found_no_dataset_asks_for_the_progress_again():
    assert progress_after_claim((None,) * 8, slot_id=1, lease_expires_at=UNTIL, resumed=False, leased_at=AT) is None


def test_a_claimed_slot_of_a_gold_pairs_source_asks_for_the_progress_again():
    """The rater met that gold pair with the lease, which the read did not see."""
    assert after(None, None, None, gold_source=True) is None
    assert after(50, AT, AT - timedelta(minutes=3), resumed=True, gold_source=True) is None
