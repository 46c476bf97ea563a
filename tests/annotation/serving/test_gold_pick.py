"""The gold claim's pick (annotation/serving/gold_sql.py): a pair at a random rank
first, the shuffle when the rater met it. Every gold pair the rater has not met must come
as often as any other, the met ones never, and a pool whose first try missed must still
serve one."""

from collections import Counter

import pytest
from django.db import connection, transaction
from django.utils import timezone

from annotation.models import GoldCounter, GoldLease, GoldLeaseState, GoldPair, RatingSlot
from annotation.serving import gold as serving
from annotation.serving import gold_sql as serving_sql
from annotation.serving import lease_ttl
from tests.factories import SplitFactory, UserFactory
from tests.support.crowd_support import gold_upload
from tests.support.queue_support import queue_pairs

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

DRAWS = 900


def picks(rater, dataset: str) -> Counter:
    """The gold pair of each of DRAWS gold claims (its turn drawn), each rolled back."""
    served = Counter()
    for _ in range(DRAWS):
        with transaction.atomic():
            now = timezone.now()
            assignment = serving.gold_claim(
                rater=rater, dataset=dataset, kinds=None, kind=None, now=now, expires=now + lease_ttl(), drawn=True
            )
            served[None if assignment is None else assignment.pair_id] += 1
            transaction.set_rollback(True)
    return served


@pytest.mark.parametrize("counted", [True, False], ids=["counted", "counter lost"])
def test_every_gold_pair_the_rater_has_not_met_comes_as_often_and_the_met_never(settings, tmp_path, counted):
    """Also without the counter's row (which the triggers keep, but an admin's hand may
    lose): then every pick is the shuffle's, none by a first try at rank 0."""
    settings.SQL_PATHS = "postgres"
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=3, ratings_per_pair=5)
    for upload in ("first", "second"):  # scores up to 4.8: five pairs an upload
        (tmp_path / upload).mkdir()
        gold_upload(split, "SIS", 5, tmp_path / upload)
    rater = UserFactory(roles=["rater"], qualified_for=["SIS"])
    pool = list(GoldPair.objects.filter(dataset=split.dataset).order_by("id").values_list("id", flat=True))
    # Met: one in the middle, and with the counter the first two (where a first try from
    # rank 0 would land, and be tested); without it, a first try at rank 0 would serve the
    # first pair (the pool's first in the scan: stored in id order) far too often.
    met = [pool[0], pool[1], pool[5]] if counted else [pool[5]]
    for gold_pair_id in met:
        GoldLease.objects.create(
            gold_pair_id=gold_pair_id,
            rater=rater,
            dataset=split.dataset,
            kind="SIS",
            state=GoldLeaseState.DONE,
            leased_at=timezone.now(),
        )
    if not counted:
        GoldCounter.objects.filter(dataset=split.dataset).delete()
    served = picks(rater, split.dataset.name)
    assert set(served) == set(pool) - set(met)  # never a met pair, never nothing
    expected = DRAWS / len(served)  # 128.6 each, sd 10.6 (counted); 100, sd 9.4 (lost)
    assert all(abs(count - expected) < 4 * expected**0.5 for count in served.values()), served


def test_a_rater_who_met_no_gold_pair_is_served_by_the_first_try_without_the_shuffle(settings, tmp_path):
    """The shuffle reads and sorts the whole pool; the first try at a random rank is what
    spares it, so it must serve whenever the pair at that rank is new to the rater."""
    from tests.support.query_plans import generic_plan, nodes

    settings.SQL_PATHS = "postgres"
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=3, ratings_per_pair=5)
    gold_upload(split, "SIS", 5, tmp_path)
    rater = UserFactory(roles=["rater"], qualified_for=["SIS"])
    now = timezone.now()
    values = {
        "dataset": split.dataset.name,
        "rater": rater.pk,
        "kind": None,
        "now": now,
        "expires": now + lease_ttl(),
        "slot_table": connection.ops.quote_name(RatingSlot._meta.db_table),
        "slot_pk": RatingSlot._meta.pk.column,
        "drawn": True,
    }
    for _ in range(5):  # each at a new random rank, rolled back (EXPLAIN ANALYZE leases it)
        with transaction.atomic():
            plan = generic_plan(serving_sql.gold_claim(), values)
            transaction.set_rollback(True)
        (shuffle,) = [node for node in nodes(plan["Plan"]) if "random()" in " ".join(node.get("Sort Key", []))]
        assert shuffle["Actual Loops"] == 0
        assert plan["Plan"]["Actual Rows"] == 1  # a gold pair served
