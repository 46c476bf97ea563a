"""The claim's cost does not grow with the queue: on PostgreSQL it reads the head of the
partial index slot_claim_idx, never scans the slots table, and touches about the same
number of pages with 10,000 open slots as with 200,000; a rater's slots are read by
rater, also under statistics that say no slot has one. (Pages, not timings: the count
is deterministic.)"""

from __future__ import annotations

import json

import pytest
from django.db import connection

from annotation import serving as queue
from annotation.models import DEFAULT_GOLD_ONE_IN, PairSkip, RatingSlot
from annotation.serving import rating_submit, slot_claim, statements
from annotation.serving.submit_statements import SUBMITTED_SETTING
from tests.factories import SamplingBatchFactory, SplitFactory, UserFactory
from tests.support.query_plans import generic_plan, nodes
from tests.support.queue_support import bulk_sis_pairs, submit_kwargs

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


# Both claim statements: the one with the gold half and the one without (a dataset
# without active gold pairs, as these are).
CLAIM_STATEMENTS = (statements.claim, statements.claim_held_gold, statements.claim_ordinary)


def claim_values(*, rater, dataset: str) -> dict:
    """A claim's parameters, of any kind, as the rating policy claims: gold's turn is drawn in
    the statement too (``drawn_at`` NULL)."""
    from django.utils import timezone

    now = timezone.now()
    return {
        "dataset": dataset,
        "rater": rater.pk,
        "kind": None,
        "now": now,
        "expires": now + queue.lease_ttl(),
        "gold": True,
        "drawn_at": None,
        "one_in": DEFAULT_GOLD_ONE_IN,  # the rate claim_held_gold's caller drew with: the dataset's
    }


def explain_claim(*, rater, dataset: str, statement=statements.claim) -> dict:
    """EXPLAIN (ANALYZE, BUFFERS) of one real claim; returns the JSON plan."""
    with connection.cursor() as cursor:
        cursor.execute(
            "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + statement().sql, claim_values(rater=rater, dataset=dataset)
        )
        (plan,) = cursor.fetchone()
    return (json.loads(plan) if isinstance(plan, str) else plan)[0]


def pages(plan: dict) -> int:
    top = plan["Plan"]
    return top["Shared Hit Blocks"] + top["Shared Read Blocks"]


def head_scan_pages(plan: dict) -> int:
    """Pages touched by the scan of the open queue's head (``slot_claim_idx``, with the
    probes of the rows it steps over)."""
    (scan,) = [n for n in nodes(plan["Plan"]) if n.get("Index Name") == "slot_claim_idx"]
    return scan["Shared Hit Blocks"] + scan["Shared Read Blocks"]


def fresh_claims(*, rater, dataset: str) -> list[dict]:
    """The plans of a fresh claim by ``rater`` (their lease, if any, given back first), by
    each claim statement."""
    plans = []
    for statement in CLAIM_STATEMENTS:
        RatingSlot.objects.filter(rater=rater, state="leased").update(state="open", rater=None, lease_expires_at=None)
        plans.append(explain_claim(rater=rater, dataset=dataset, statement=statement))
    return plans


def vacuum(*models) -> None:
    """VACUUM the models' tables (outside a transaction: the test's rows are committed).
    Rows that other tests' rolled-back transactions left behind stay in the indexes until
    a vacuum (autovacuum may be off, as in CI), and scans that step over them touch more
    pages: the counts would depend on what ran before."""
    with connection.cursor() as cursor:
        for model in models:
            cursor.execute(f"VACUUM {model._meta.db_table}")


@pytest.mark.django_db(transaction=True)
def test_claim_reads_the_index_head_whatever_the_queue_size(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    split = SplitFactory()
    dataset = split.dataset
    raters = [UserFactory(roles=["rater"], qualified_for=["SIS", "STS"]) for _ in range(4)]
    bulk_sis_pairs(batch=SamplingBatchFactory(split=split, dataset=dataset), n_pairs=2_000)
    # A little history at the head of the queue: the measured rater has rated pairs
    # there and others hold leases, so the claim must pass over entries.
    for n in range(3):
        for user in raters[:3]:
            held = slot_claim(rater=user, dataset=dataset.name)
            rating_submit(rater=user, dataset=dataset.name, slot_id=held.slot_id, **submit_kwargs(f"{user.pk}-{n}"))
    slot_claim(rater=raters[1], dataset=dataset.name)
    slot_claim(rater=raters[2], dataset=dataset.name)

    vacuum(RatingSlot, PairSkip)
    smalls = fresh_claims(rater=raters[0], dataset=dataset.name)
    bulk_sis_pairs(batch=SamplingBatchFactory(split=split, dataset=dataset), n_pairs=40_000, images_per_side=300)
    vacuum(RatingSlot, PairSkip)
    larges = fresh_claims(rater=raters[0], dataset=dataset.name)
    assert RatingSlot.objects.filter(dataset=dataset, state="open").count() > 200_000
    for small, large in zip(smalls, larges, strict=True):
        plans_stay_at_the_head(small, large)


def plans_stay_at_the_head(small: dict, large: dict) -> None:
    for plan in (small, large):
        scans = [(n["Node Type"], n.get("Relation Name"), n.get("Index Name")) for n in nodes(plan["Plan"])]
        assert ("Index Scan", "annotation_ratingslot", "slot_claim_idx") in scans, scans
        assert not [s for s in scans if s[0] == "Seq Scan" and s[1] == "annotation_ratingslot"], scans
    # 20 times the open slots; the pages the head's scan touches stay about the same (a
    # scan over the queue would touch 20 times as many). On vacuumed tables the head's
    # scan read 14 and 19 pages at 10,000 slots against 21 at 210,000 (the larger
    # indexes are a level deeper for each descent). The whole statement's pages are
    # compared more loosely: the UPDATE writes a level deeper into every btree of the
    # larger table (56-61 pages against 65-67 here; once 173 against 96 in CI, before
    # the tables were vacuumed first).
    assert head_scan_pages(large) <= 2 * head_scan_pages(small), (head_scan_pages(small), head_scan_pages(large))
    assert pages(large) <= 3 * pages(small), (pages(small), pages(large))


def slot_reads(plan: dict) -> list[tuple]:
    """(node type, index, pages touched) of every node of ``plan`` reading the slots table."""
    return [
        (node["Node Type"], node.get("Index Name"), node["Shared Hit Blocks"] + node["Shared Read Blocks"])
        for node in nodes(plan["Plan"])
        if node.get("Relation Name") == RatingSlot._meta.db_table
    ]


def explain_generic_claim(*, rater, dataset: str, statement) -> dict:
    """EXPLAIN (ANALYZE, BUFFERS) of one claim through the prepared statement with its
    generic plan, the plan a connection settles on after its first five claims."""
    return generic_plan(statement, claim_values(rater=rater, dataset=dataset))


@pytest.mark.parametrize(
    "statement",
    [*CLAIM_STATEMENTS, statements.claim_ordinary_after_submit],
    ids=["claim", "claim_held_gold", "claim_ordinary", "claim_ordinary_after_submit"],
)
def test_claim_work_does_not_grow_with_the_raters_history(statement):
    """A rater far ahead of the others has rated many pairs still open for others, all at
    the head of the queue: the claim passes their slots with one index probe each. (It
    once joined every candidate against all of the rater's slots: 21 ms per claim after
    400 ratings.) The claim after a submit runs as the submit left it: with the row it
    stored in the transaction's setting."""
    split = SplitFactory()
    dataset = split.dataset
    ahead = UserFactory(roles=["rater"], qualified_for=["SIS"])
    bulk_sis_pairs(batch=SamplingBatchFactory(split=split, dataset=dataset), n_pairs=600)
    for n in range(300):
        held = slot_claim(rater=ahead, dataset=dataset.name)
        rating_submit(rater=ahead, dataset=dataset.name, slot_id=held.slot_id, **submit_kwargs(f"ahead-{n}"))
    if statement is statements.claim_ordinary_after_submit:
        with connection.cursor() as cursor:  # local to the test's transaction
            cursor.execute("SELECT set_config(%s, '1 1 f SIS', true)", [SUBMITTED_SETTING])
    plan = explain_generic_claim(rater=ahead, dataset=dataset.name, statement=statement())
    compared = sum(node.get("Rows Removed by Join Filter", 0) for node in nodes(plan["Plan"]))
    probes = [
        node
        for node in nodes(plan["Plan"])
        if node.get("Index Name") == "slot_one_per_rater_per_pair" and "pair_id" in node.get("Index Cond", "")
    ]
    assert compared < 1_000, compared
    assert probes and max(node["Actual Loops"] for node in probes) >= 300  # one probe per passed slot


def statistics_say_no_slot_has_a_rater() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT null_frac FROM pg_stats WHERE tablename = %s AND attname = 'rater_id'",
            [RatingSlot._meta.db_table],
        )
        return cursor.fetchone() == (1.0,)


@pytest.mark.django_db(transaction=True)
def test_a_raters_slots_are_read_by_rater_under_statistics_of_an_unrated_queue(settings):
    """Statistics taken when a batch was queued say no slot has a rater, and PostgreSQL
    plans with them until it analyzes the table again (a tenth of its rows changed: a
    million-slot queue's first 20,000 ratings). Lookups of one rater's slots (the claim's
    held lease, the progress's counts) must still range over that rater's entries: an
    index that leads with the pair was read whole for them, every rated slot's entry."""
    from django.utils import timezone

    from annotation.rating.progress_sql import progress_by_id_statement, progress_statement

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    split = SplitFactory()
    dataset = split.dataset
    bulk_sis_pairs(batch=SamplingBatchFactory(split=split, dataset=dataset), n_pairs=4_000)
    raters = [UserFactory(roles=["rater"], qualified_for=["SIS"]) for _ in range(21)]
    assert statistics_say_no_slot_has_a_rater()  # bulk_sis_pairs analyzed the queued batch
    with connection.cursor() as cursor:
        # 20,000 slots rated by 20 raters (each pair's five slots by five of them).
        cursor.execute(
            f"""UPDATE {RatingSlot._meta.db_table} s
            SET state = 'done', rater_id = (%s::bigint[])[1 + (s.pair_id * 5 + s.index) %% 20]
            WHERE s.dataset_id = %s""",
            [[user.pk for user in raters[:20]], dataset.pk],
        )
    vacuum(RatingSlot, PairSkip)  # VACUUM without ANALYZE: the statistics stay the queued batch's
    assert statistics_say_no_slot_has_a_rater()  # and no autovacuum analyzed the table meanwhile
    newcomer = raters[20]
    now = timezone.now()
    day_start = now.replace(hour=0, minute=0, second=0, microsecond=0)
    plans = {
        "claim": explain_generic_claim(rater=newcomer, dataset=dataset.name, statement=statements.claim()),
        "progress": generic_plan(
            progress_statement(),
            {"dataset": dataset.name, "rater": newcomer.pk, "day_start": day_start, "first_quarter": day_start},
        ),
        "progress_by_id": generic_plan(
            progress_by_id_statement(),
            {
                "dataset": dataset.name,
                "rater": newcomer.pk,
                "day_start": day_start,
                "first_quarter": day_start,
                "dataset_id": dataset.pk,
            },
        ),
    }
    for name, plan in plans.items():
        # Every read of the slots but the queue head's scan (test above) and the claimed
        # slot's update: the rater's slots, leases, and the pairs the head's scan passes.
        reads = [
            (node.get("Index Name") or node["Node Type"], node["Shared Hit Blocks"] + node["Shared Read Blocks"])
            for node in nodes(plan["Plan"])
            if node.get("Relation Name") == RatingSlot._meta.db_table
            and node["Node Type"] != "ModifyTable"
            and node.get("Index Name") not in ("slot_claim_idx", f"{RatingSlot._meta.db_table}_pkey")
        ]
        assert reads, name
        assert all(pages <= 6 for _, pages in reads), (name, reads)


@pytest.mark.django_db(transaction=True)
def test_the_gold_claim_asks_for_work_at_the_queue_head_not_over_the_rated_slots(settings, tmp_path):
    """Gold is served only while the ordinary claim could serve the rater a slot now: the
    gold claim asks whether an open slot they never touched exists. Asked without the
    claim's order, under statistics of the queue as it was queued (all open) it was
    planned as a scan of the slots table, which passed every rated slot stored before the
    first open one (1,767 rows 30,000 slots into a run, growing with the ratings). It
    reads the head of ``slot_claim_idx`` instead."""
    from django.utils import timezone

    from annotation.models import GoldLease, QualitySettings
    from annotation.serving.gold_sql import gold_claim
    from tests.support.crowd_support import gold_upload

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    split = SplitFactory()
    dataset = split.dataset
    bulk_sis_pairs(batch=SamplingBatchFactory(split=split, dataset=dataset), n_pairs=4_000)
    gold_upload(split, "SIS", 4, tmp_path)
    QualitySettings.objects.create(dataset=dataset, gold_one_in=20)
    raters = [UserFactory(roles=["rater"], qualified_for=["SIS"]) for _ in range(6)]
    with connection.cursor() as cursor:
        # The first 2,000 pairs rated by five raters each: their slots lie first in the table.
        cursor.execute(
            f"""UPDATE {RatingSlot._meta.db_table} s
            SET state = 'done', rater_id = (%s::bigint[])[1 + s.index], pair_done = 5, pair_complete = true
            WHERE s.dataset_id = %s AND s.pair_id < (SELECT min(pair_id) + 2000 FROM {RatingSlot._meta.db_table})""",
            [[user.pk for user in raters[:5]], dataset.pk],
        )
    # VACUUM without ANALYZE: the statistics stay those of the queued batch, all open, as
    # PostgreSQL keeps them until a tenth of the table changed.
    vacuum(RatingSlot, PairSkip)
    assert statistics_say_no_slot_has_a_rater()
    newcomer = raters[5]
    now = timezone.now()
    plan = generic_plan(
        gold_claim(),
        {
            "dataset": dataset.name,
            "rater": newcomer.pk,
            "kind": None,
            "now": now,
            "expires": now + queue.lease_ttl(),
            "slot_table": connection.ops.quote_name(RatingSlot._meta.db_table),
            "slot_pk": RatingSlot._meta.pk.column,
            "drawn": True,
        },
    )
    assert GoldLease.objects.filter(rater=newcomer).count() == 1  # gold served: work was found
    reads = slot_reads(plan)
    assert not [read for read in reads if read[0] == "Seq Scan"], reads
    assert any(read[1] == "slot_claim_idx" for read in reads), reads
    # The head's descent and a leaf (7 pages here); the rated slots span about 100.
    assert all(pages <= 12 for *_, pages in reads), reads


@pytest.mark.django_db(transaction=True)
def test_the_progress_counts_a_veterans_unfinished_pairs_without_reading_their_history(settings):
    """The progress counts the rater's rated slots of unfinished pairs with every rated
    item. Under statistics taken early in a run (a few slots rated, none complete), it
    counted them through the rater's entries in slot_one_per_rater_per_pair and read the
    table row of every slot they ever rated (213 rated: 131 pages), the cost growing with
    each rating. It counts from slot_rater_active_idx alone, which holds only those slots."""
    from django.utils import timezone

    from annotation.rating.progress_sql import progress_by_id_statement, progress_statement

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    split = SplitFactory()
    dataset = split.dataset
    bulk_sis_pairs(batch=SamplingBatchFactory(split=split, dataset=dataset), n_pairs=4_000)
    raters = [UserFactory(roles=["rater"], qualified_for=["SIS"]) for _ in range(20)]
    rate = f"""UPDATE {RatingSlot._meta.db_table} s
        SET state = 'done', rater_id = (%s::bigint[])[1 + (s.pair_id * 5 + s.index) %% 20],
            pair_done = %s, pair_complete = %s
        WHERE s.dataset_id = %s AND s.pair_id %% 100 {{}} 0"""
    ids = [user.pk for user in raters]
    with connection.cursor() as cursor:
        # Early in the run, analyzed: one pair in a hundred rated, none complete yet.
        cursor.execute(rate.format("="), [ids, 4, False, dataset.pk])
        cursor.execute(f"ANALYZE {RatingSlot._meta.db_table}")
        # Then every other pair rated by five of the 20 raters and complete.
        cursor.execute(rate.format("<>"), [ids, 5, True, dataset.pk])
    vacuum(RatingSlot, PairSkip)  # the statistics stay the early ones
    veteran = raters[0]
    assert RatingSlot.objects.filter(rater=veteran).count() == 1_000
    day_start = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)
    values = {"dataset": dataset.name, "rater": veteran.pk, "day_start": day_start, "first_quarter": day_start}
    for statement, params in (
        (progress_statement(), values),
        (progress_by_id_statement(), {**values, "dataset_id": dataset.pk}),
    ):
        reads = slot_reads(generic_plan(statement, params))
        assert any(read[1] == "slot_rater_active_idx" for read in reads), (statement.name, reads)
        assert all(pages <= 6 for *_, pages in reads), (statement.name, reads)
