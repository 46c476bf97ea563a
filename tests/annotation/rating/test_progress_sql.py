"""The rater's progress in one PostgreSQL statement (annotation/rating/progress_sql.py) against
the ORM path it replaces on PostgreSQL (the embedded mode's, SQL_PATHS=portable): a
seeded walk of raters claiming, rating and skipping ordinary and gold pairs, over
midnight in three time zones, with grants global and per dataset, quiz attempts and
answers, retired pairs and a dataset serving no gold; after every step both paths give
every rater the same figures in both datasets."""

from __future__ import annotations

import dataclasses
import itertools
import random
from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest
from django.test import override_settings
from django.utils import timezone

from annotation.core.errors import DomainError, NotFound
from annotation.models import (
    GoldLease,
    GoldPair,
    GoldPurpose,
    GoldRating,
    Pair,
    PairSkip,
    QualitySettings,
    QuizAttempt,
    TaskKind,
)
from annotation.quality.gold.upload import gold_pairs_promote
from annotation.rating.policy import rating_submit, slot_claim, slot_skip
from annotation.rating.progress import rater_progress, rater_progress_ask
from tests.factories import UserFactory
from tests.support.crowd_support import crowd_dataset
from tests.support.queue_support import submit_kwargs
from tests.support.rating_support import rate_pair

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

ZONES = (None, ZoneInfo("Europe/Berlin"), ZoneInfo("Pacific/Kiritimati"))


def typed(value):
    """``value`` with the type of every figure in it, so that 5 and Decimal(5) differ."""
    if isinstance(value, dict):
        return {key: typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [typed(item) for item in value]
    return (type(value).__name__, value)


def both_paths(user, dataset: str, tz) -> tuple[dict, dict]:
    one_statement = typed(dataclasses.asdict(rater_progress(rater=user, dataset=dataset, tz=tz)))
    with override_settings(SQL_PATHS="portable"):
        orm = typed(dataclasses.asdict(rater_progress(rater=user, dataset=dataset, tz=tz)))
    return one_statement, orm


def raters(gold_dataset, quiet_dataset) -> list:
    """Raters of both kinds everywhere, of SIS in one dataset only, of STS globally and SIS
    in one dataset, and one without a grant."""
    both = [UserFactory(roles=["rater"], qualified_for=["SIS", "STS"]) for _ in range(3)]
    local = UserFactory(roles=["rater"], qualified_for=["SIS"], qualified_in=gold_dataset)
    mixed = UserFactory(roles=["rater"], qualified_for=["STS"])
    mixed.qualifications.create(dataset=quiet_dataset, kind=TaskKind.SIS)
    return [*both, local, mixed, UserFactory(roles=["rater"])]


def met_in_quiz(user, dataset, clock) -> None:
    """``user`` was asked two STS gold pairs in a quiz attempt (the second one ends up in
    the quiz, ``rules_in_play``) and answered another."""
    asked, answered, in_quiz = GoldPair.objects.filter(dataset=dataset, kind=TaskKind.STS).order_by("id")[:3]
    QuizAttempt.objects.create(
        rater=user, dataset=dataset, kind=TaskKind.STS, number=1, order=[asked.pk, in_quiz.pk], started_at=clock.now
    )
    GoldRating.objects.create(
        gold_pair=answered,
        rater=user,
        dataset=dataset,
        purpose=GoldPurpose.QUIZ,
        score=2.0,
        gold_score=answered.gold_score,
        time_on_item_ms=5000,
        idempotency_key="quiz-answer",
        created_at=clock.now,
    )


def rules_in_play(users, dataset, clock) -> None:
    """What the walk may not reach by chance: gold made from a pair one rater rated and
    one another skipped; a skip of a pair now retired; a done slot of a complete pair;
    a gold pair in the quiz; an inactive gold pair, one of them leased."""
    rated_source, skipped_source, retired, complete = Pair.objects.filter(dataset=dataset, kind=TaskKind.SIS).order_by(
        "id"
    )[:4]
    rate_pair(rated_source, [2.0, 2.1, 2.2], raters=users[2:5])
    PairSkip.objects.create(pair=skipped_source, rater=users[3], created_at=clock.now)
    rate_pair(skipped_source, [3.0, 3.1, 3.2], raters=[users[0], users[1], users[4]])
    rate_pair(complete, [1.0, 1.1, 1.2], raters=users[1:4])
    assert gold_pairs_promote(dataset=dataset, kind=TaskKind.SIS, max_sd=0.5) == 3
    PairSkip.objects.create(pair=retired, rater=users[1], created_at=clock.now)
    Pair.objects.filter(pk=retired.pk).update(retired_at=clock.now)
    uploaded = GoldPair.objects.filter(dataset=dataset, kind=TaskKind.STS, source_pair=None).order_by("id")
    GoldPair.objects.filter(pk=uploaded[2].pk).update(in_quiz=True)
    GoldPair.objects.filter(pk=uploaded[3].pk).update(active=False)
    GoldLease.objects.create(
        gold_pair=uploaded[3],
        rater=users[2],
        dataset=dataset,
        kind=TaskKind.STS,
        state="leased",
        leased_at=clock.now,
        lease_expires_at=clock.now + timedelta(minutes=10),
    )


def claim_reading_progress(user, dataset, kind: str, tz, read_by_claims: list):
    """A claim that reads the rater's progress as the rating page's does
    (``rater_progress_ask``); the progress it read, when it read one, must be the one read
    after it (``read_by_claims`` counts those, by whether the lease was resumed)."""
    ask = rater_progress_ask(rater=user, dataset=dataset.name, tz=tz)
    assignment = slot_claim(rater=user, dataset=dataset.name, kind=kind, read=ask.claim_read)
    if assignment is not None and assignment.read_row is not None:
        read = rater_progress(rater=user, dataset=dataset.name, ask=ask, claimed=assignment)
        assert read == rater_progress(rater=user, dataset=dataset.name, tz=tz)
        read_by_claims.append(assignment.resumed)
    return assignment


def step(rng: random.Random, user, dataset, held: dict, clock, read_by_claims: list) -> None:
    """One thing a rater does: claim, rate or skip what they hold, or time passes. A claim
    reads the rater's progress as the rating page's does (``rater_progress_ask``); the
    progress it read, when it read one, must be the one read after it
    (``read_by_claims`` counts those)."""
    action = rng.choice(["claim", "claim", "rate", "rate", "skip", "wait"])
    key = (user.pk, dataset.pk)
    try:
        if action == "claim":
            assignment = claim_reading_progress(
                user, dataset, rng.choice(["SIS", "STS"]), rng.choice(ZONES), read_by_claims
            )
            if assignment is not None:
                held[key] = assignment.slot_id
        elif action in ("rate", "skip") and key in held:
            slot_id = held.pop(key)
            if action == "rate":
                kwargs = submit_kwargs(f"k{rng.random()}", rng.uniform(0, 5))
                rating_submit(rater=user, dataset=dataset.name, slot_id=slot_id, **kwargs)
            else:
                slot_skip(rater=user, dataset=dataset.name, slot_id=slot_id)
        elif action == "wait":
            clock.now += timedelta(minutes=rng.choice([5, 20, 90, 400]))
    except DomainError:
        pass  # not qualified for the kind, or a lease that expired and went to another rater


def test_progress_in_one_statement_matches_the_orm_path(clock, tmp_path):
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    gold_dataset = crowd_dataset(tmp_path / "a", gold_one_in=2)
    quiet_dataset = crowd_dataset(tmp_path / "b", gold_one_in=2)
    QualitySettings.objects.filter(dataset=quiet_dataset).update(gold_one_in=0)
    users = raters(gold_dataset, quiet_dataset)
    met_in_quiz(users[1], gold_dataset, clock)
    rules_in_play(users, gold_dataset, clock)
    clock.now = clock.now.replace(hour=20)  # midnight passes in Kiritimati, then Berlin, then UTC
    rng, held, compared, holds, read_by_claims = random.Random(7), {}, 0, 0, []
    for number in range(90):
        step(rng, rng.choice(users), rng.choice([gold_dataset, quiet_dataset]), held, clock, read_by_claims)
        if number == 45:  # a pair leaves the queue unfinished
            Pair.objects.filter(pk=Pair.objects.filter(dataset=gold_dataset).order_by("id").values("pk")[:1]).update(
                retired_at=clock.now
            )
        for user in users:
            for dataset in (gold_dataset, quiet_dataset):
                one_statement, orm = both_paths(user, dataset.name, ZONES[number % 3])
                assert one_statement == orm, (number, user.username, dataset.name)
                compared += 1
                holds += one_statement["held_slot_id"][1] is not None
    # Whatever the walk's draws of gold: a lease claimed and claimed again, both reading.
    for kind in ("SIS", "STS"):
        if claim_reading_progress(users[0], quiet_dataset, kind, ZONES[1], read_by_claims) is not None:
            claim_reading_progress(users[0], quiet_dataset, kind, ZONES[1], read_by_claims)
            break
    # One rater rates all that is left to them, gold seldom served: no ordinary pair is
    # left while gold is.
    QualitySettings.objects.filter(dataset=gold_dataset).update(gold_one_in=1000)
    for number in itertools.count():
        assignment = slot_claim(rater=users[0], dataset=gold_dataset.name)
        if assignment is None:
            break
        rating_submit(
            rater=users[0], dataset=gold_dataset.name, slot_id=assignment.slot_id, **submit_kwargs(f"e{number}")
        )
        one_statement, orm = both_paths(users[0], gold_dataset.name, None)
        assert one_statement == orm, number
    figures = [dataclasses.asdict(rater_progress(rater=user, dataset=gold_dataset.name)) for user in users]
    # The walk reached what the rules are about: ratings, holds, gold left and none.
    assert any(f["ratings_today"] for f in figures) and holds
    assert {f["pairs_left"] > 0 for f in figures} == {True, False}
    assert compared == 90 * len(users) * 2
    # Claims read the progress, of leases new and resumed.
    assert len(read_by_claims) >= 10 and set(read_by_claims) == {True, False}, read_by_claims


def test_an_unknown_dataset_is_not_found_on_both_paths(settings):
    user = UserFactory(roles=["rater"], qualified_for=["SIS"])
    for path in ("postgres", "portable"):
        settings.SQL_PATHS = path
        with pytest.raises(NotFound, match="no dataset named 'nowhere'"):
            rater_progress(rater=user, dataset="nowhere")


def test_a_dataset_renamed_or_named_anew_is_read_by_its_name_not_a_remembered_id():
    from annotation.models import Dataset
    from annotation.rating import progress_sql
    from tests.factories import SplitFactory
    from tests.support.queue_support import claim, queue_pairs, rater

    first = SplitFactory()
    queue_pairs(split=first, n_pairs=3)
    user = rater()
    held = claim(user, first.dataset)
    name = first.dataset.name
    assert rater_progress(rater=user, dataset=name).held_slot_id == held.slot_id
    assert progress_sql._dataset_ids == {name: first.dataset.pk}  # read by id from now on
    assert rater_progress(rater=user, dataset=name).held_slot_id == held.slot_id
    Dataset.objects.filter(pk=first.dataset.pk).update(name="renamed")
    with pytest.raises(NotFound, match=f"no dataset named '{name}'"):
        rater_progress(rater=user, dataset=name)
    renamed = rater_progress(rater=user, dataset="renamed")
    assert (renamed.held_slot_id, renamed.pairs_left) == (held.slot_id, 3)
    # The old name's id remembered again, then another dataset takes the name.
    Dataset.objects.filter(pk=first.dataset.pk).update(name=name)
    rater_progress(rater=user, dataset=name)
    Dataset.objects.filter(pk=first.dataset.pk).update(name="renamed")
    second = SplitFactory(dataset__name=name)
    queue_pairs(split=second, n_pairs=2)
    anew = rater_progress(rater=user, dataset=name)  # the other dataset of that name
    assert (anew.held_slot_id, anew.pairs_left) == (None, 2)
    assert progress_sql._dataset_ids[name] == second.dataset.pk
    one_statement, orm = both_paths(user, name, None)
    assert one_statement == orm
    # A claim that reads the progress by the old dataset's id reads nothing, and the
    # progress is read by the name.
    progress_sql._dataset_ids[name] = first.dataset.pk
    ask = rater_progress_ask(rater=user, dataset=name)
    claimed = slot_claim(rater=user, dataset=name, read=ask.claim_read)
    assert claimed.read_row == (None,) * 8
    read = rater_progress(rater=user, dataset=name, ask=ask, claimed=claimed)
    assert (read.held_slot_id, read.pairs_left) == (claimed.slot_id, 2)
    assert progress_sql._dataset_ids[name] == second.dataset.pk


def test_a_claim_of_a_gold_pairs_source_pair_reads_the_gold_left_after_it(tmp_path):
    """A gold pair made from a pair counts as met once the rater holds a slot of that
    pair (its source), which a claim's own read, before its lease, cannot see: such a
    claim's progress is read again (a reopened source pair, as an exclusion leaves)."""
    dataset = crowd_dataset(tmp_path, gold_one_in=1000)
    user = UserFactory(roles=["rater"], qualified_for=["SIS"])
    rater_progress(rater=user, dataset=dataset.name)  # learns the dataset's id
    # Every open SIS pair is a serveable SIS gold pair's source: whichever the claim leases.
    gold = list(GoldPair.objects.filter(dataset=dataset, kind=TaskKind.SIS).order_by("id"))
    pairs = list(Pair.objects.filter(dataset=dataset, kind=TaskKind.SIS).order_by("id"))
    for gold_pair, pair in zip(gold, pairs, strict=False):
        GoldPair.objects.filter(pk=gold_pair.pk).update(source_pair=pair)
    Pair.objects.filter(dataset=dataset, kind=TaskKind.SIS).exclude(pk__in=[p.pk for p in pairs[: len(gold)]]).update(
        retired_at=timezone.now()
    )
    ask = rater_progress_ask(rater=user, dataset=dataset.name)
    claimed = slot_claim(rater=user, dataset=dataset.name, kind="SIS", read=ask.claim_read)
    assert claimed.read_row is not None and claimed.read_row[-1] is True
    read = rater_progress(rater=user, dataset=dataset.name, ask=ask, claimed=claimed)
    assert read == rater_progress(rater=user, dataset=dataset.name)
