"""The queue's figures the metrics endpoint reads at a scrape: pairs still needing
ratings (the queue's counters), leases held and, past their expiry, expired."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.serving.watch import queue_watch
from tests.factories import SplitFactory
from tests.support.queue_support import TTL, claim, queue_pairs, rater, submit

pytestmark = pytest.mark.django_db


def test_pairs_open_and_leases_held_then_expired_per_dataset_and_kind():
    split = SplitFactory()
    dataset = split.dataset
    queue_pairs(split=split, n_pairs=3, ratings_per_pair=1)
    alice, bob, carol = rater(), rater(), rater()
    claim(alice, dataset)
    claim(bob, dataset)
    done = claim(carol, dataset)
    submit(carol, dataset, done.slot_id, "carol")  # one pair complete: two still open
    key = (dataset.id, "SIS")

    now = timezone.now()
    watch = queue_watch(now)
    assert (watch.pairs_open, watch.leases_held, watch.leases_expired) == ({key: 2}, {key: 2}, {key: 0})
    later = queue_watch(now + timedelta(seconds=TTL + 1))
    assert (later.leases_held, later.leases_expired) == ({key: 2}, {key: 2})
