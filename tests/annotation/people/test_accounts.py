"""Rater and account services."""

from __future__ import annotations

import pytest

from annotation.people.accounts import qualifications_set
from annotation.serving import QueueInputError
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_qualifications_set(clock):
    user = UserFactory(roles=["rater"], qualified_for=["STS"])
    assert qualifications_set(rater=user, kinds=["SIS", "SITS"]) == ["SIS", "SITS"]
    assert qualifications_set(rater=user, kinds=[]) == []
    with pytest.raises(QueueInputError, match="unknown task kind"):
        qualifications_set(rater=user, kinds=["XX"])
    with pytest.raises(QueueInputError, match="not in the rater group"):
        qualifications_set(rater=UserFactory(), kinds=["STS"])
