"""Gold rows take ids from the sequences of the rows they stand in for (annotation.serving.gold_ids)."""

import pytest

from annotation.models import Rating, RatingSlot
from annotation.serving.gold_ids import ids_reserve
from tests.factories import PairFactory


@pytest.mark.django_db
def test_reserved_ids_are_never_given_to_later_rows():
    first = PairFactory()
    reserved = ids_reserve(type(first), 3)
    later = PairFactory()
    assert len(set(reserved)) == 3 and reserved == sorted(reserved)
    assert min(reserved) > first.pk
    assert later.pk > max(reserved)


@pytest.mark.django_db
def test_reserving_from_a_table_never_written_starts_above_zero():
    assert Rating.objects.count() == 0
    (first,) = ids_reserve(Rating, 1)
    assert first >= 1
    assert ids_reserve(Rating, 2) == [first + 1, first + 2]


@pytest.mark.django_db
def test_no_ids_for_a_count_of_zero():
    assert ids_reserve(RatingSlot, 0) == []
