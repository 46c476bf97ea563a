"""Raters claiming and submitting while an admin excludes and restores raters, through
the services in threads; used by the PostgreSQL test and, in a subprocess, by the
embedded SQLite one (``python manage.py shell -c "...; print(race_json(...))"``)."""

from __future__ import annotations

import json
import random
import threading
import time

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import F, Q

from annotation.core.errors import Conflict, DomainError
from annotation.models import ExclusionState, Pair, Rating, RatingExclusion, RatingStatus, TaskKind
from annotation.quality.exclusion.chunks import rating_scope
from annotation.quality.exclusion.services import (
    ExclusionInputError,
    rating_exclusion_create,
    rating_exclusion_run,
    rating_exclusion_undo,
)
from annotation.rating import policy
from annotation.serving import rating_submit, slot_claim
from tests.factories import SplitFactory, UserFactory
from tests.support.exclusion_support import pair_problems
from tests.support.queue_support import queue_pairs, submit_kwargs


class _Race:
    def __init__(
        self, *, raters: int, pairs: int, per_pair: int, rounds: int, seed: int, adaptive: tuple[int, float] | None
    ):
        split = SplitFactory()
        self.dataset = split.dataset
        queue_pairs(split=split, kind=TaskKind.SIS, n_pairs=pairs, ratings_per_pair=per_pair, adaptive=adaptive)
        # Adaptive pairs are decided by the rating policy after the queue stores a rating;
        # scores drawn over the scale make most pairs disputed, so pairs grow to their maximum.
        self.adaptive = adaptive is not None
        self.submit = policy.rating_submit if self.adaptive else rating_submit
        self.raters = [UserFactory(roles=["rater"], qualified_for=["SIS"], password=None) for _ in range(raters)]
        self.admin = UserFactory(roles=["admin"], password=None)
        self.rounds, self.seed = rounds, seed
        self.lock = threading.Lock()
        self.acknowledged: list[int] = []
        self.errors: list[str] = []
        self.exclusions = 0
        self.undone = 0
        self.late = 0  # adaptive N: ratings of raters who came back after the race
        self.excluder_done = threading.Event()

    def rate(self, user, number: int) -> None:
        rng = random.Random(self.seed * 1000 + number)
        try:
            while True:
                # Read before the claim: a rater stops only after a claim that began once
                # the excluder was done, so the top-up slots of its last run are seen.
                excluder_was_done = self.excluder_done.is_set()
                assignment = slot_claim(rater=user, dataset=self.dataset.name)
                if assignment is None:
                    if excluder_was_done:
                        return
                    time.sleep(0.01)
                    continue
                time.sleep(rng.random() * 0.004)
                key = f"{user.id}-{assignment.slot_id}"
                score = round(rng.uniform(0, 5), 2) if self.adaptive else 2.5
                result = self.submit(
                    rater=user, dataset=self.dataset.name, slot_id=assignment.slot_id, **submit_kwargs(key, score)
                )
                with self.lock:
                    self.acknowledged.append(result.rating_id)
        except DomainError as error:
            with self.lock:
                self.errors.append(f"rater {number}: {error}")
        finally:
            connection.close()

    def exclude_and_restore(self) -> None:
        rng = random.Random(self.seed)
        users = get_user_model().objects
        try:
            # ``rounds`` exclusions made (a round finding no rater to exclude does not
            # count), within a bounded number of tries.
            for round_number in range(self.rounds * 5):
                if self.exclusions >= self.rounds:
                    break
                time.sleep(rng.random() * 0.05)
                candidates = sorted(
                    set(
                        Rating.objects.filter(pair__dataset=self.dataset, status=RatingStatus.VALID).values_list(
                            "rater_id", flat=True
                        )
                    )
                )
                if not candidates:
                    continue
                victim = users.get(pk=rng.choice(candidates))
                try:
                    # keep_active: the race is about exclusion racing with the victim's
                    # own claims and submits, which a pause would stop.
                    exclusion = rating_exclusion_create(
                        dataset=self.dataset,
                        rater=victim,
                        reason=f"round {round_number}",
                        created_by=self.admin,
                        keep_active=True,
                    )
                except (ExclusionInputError, Conflict):  # nothing in scope, or excluded already
                    continue
                rating_exclusion_run(exclusion_id=exclusion.id)
                self.exclusions += 1
                time.sleep(rng.random() * 0.05)
                if rng.random() < 0.6:
                    rating_exclusion_undo(exclusion_id=exclusion.id, undone_by=self.admin, reason="restored")
                    rating_exclusion_run(exclusion_id=exclusion.id)
                    self.undone += 1
        except DomainError as error:
            self.errors.append(f"excluder: {error}")
        finally:
            self.excluder_done.set()
            connection.close()

    def run(self, timeout: float) -> dict:
        threads = [threading.Thread(target=self.rate, args=(user, n)) for n, user in enumerate(self.raters)]
        threads.append(threading.Thread(target=self.exclude_and_restore))
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(max(0.0, timeout - (time.monotonic() - started)))
        if self.adaptive and not any(thread.is_alive() for thread in threads):
            self.late_raters()
        return self.report(hung=sum(thread.is_alive() for thread in threads), seconds=time.monotonic() - started)

    def late_raters(self) -> None:
        """Adaptive N: a rater who stopped before another's submit gave a pair one more
        slot would have rated it had they come back, as raters of a campaign do; so the
        raters come back in turn until none is served anything."""
        served = True
        while served:
            served = False
            for user in self.raters:
                assignment = slot_claim(rater=user, dataset=self.dataset.name)
                if assignment is not None:
                    key = f"late-{user.id}-{assignment.slot_id}"
                    result = self.submit(
                        rater=user, dataset=self.dataset.name, slot_id=assignment.slot_id, **submit_kwargs(key, 0.0)
                    )
                    self.acknowledged.append(result.rating_id)
                    self.late += 1
                    served = True

    def _eligible(self, pair) -> bool:
        """Whether a rater of the race has no rating on ``pair`` (could be served it)."""
        rated = set(Rating.objects.filter(pair=pair).values_list("rater_id", flat=True))
        return any(user.pk not in rated for user in self.raters)

    def report(self, *, hung: int, seconds: float) -> dict:
        stored = set(Rating.objects.filter(id__in=self.acknowledged).values_list("id", flat=True))
        in_force = RatingExclusion.objects.filter(dataset=self.dataset, state=ExclusionState.APPLIED)
        valid_from_excluded = sum(
            Rating.objects.filter(rating_scope(e), status=RatingStatus.VALID).count() for e in in_force
        )
        pairs = Pair.objects.filter(dataset=self.dataset)
        return {
            "seconds": round(seconds, 2),
            "hung_threads": hung,
            "errors": self.errors[:10],
            "acknowledged": len(self.acknowledged),
            "acknowledged_missing": len(set(self.acknowledged) - stored),
            "exclusions": self.exclusions,
            "undone": self.undone,
            "ratings_excluded": Rating.objects.filter(pair__dataset=self.dataset, status=RatingStatus.EXCLUDED).count(),
            "ratings_superseded": Rating.objects.filter(
                pair__dataset=self.dataset, status=RatingStatus.SUPERSEDED
            ).count(),
            "pairs": pairs.count(),
            # An incomplete pair is stranded when one of the race's raters could still rate
            # it (they have no rating on it, valid or not); one every rater has rated waits
            # for a new rater, which is the exclusion working as meant with few raters.
            "pairs_incomplete": sum(1 for p in pairs if p.ratings_done != p.ratings_required and self._eligible(p)),
            "pairs_waiting_for_new_raters": sum(
                1 for p in pairs if p.ratings_done != p.ratings_required and not self._eligible(p)
            ),
            "valid_from_excluded": valid_from_excluded,
            "problems": pair_problems(self.dataset.id)[:10],
            # Adaptive N: pairs that asked for more than the minimum, and any past its maximum.
            "late_ratings": self.late,
            "pairs_extended": pairs.filter(ratings_required__gt=F("batch__ratings_per_pair")).count(),
            "pairs_over_max": pairs.filter(
                Q(ratings_required__gt=F("ratings_max")) | Q(ratings_done__gt=F("ratings_max"))
            ).count(),
        }


def race(
    *,
    raters: int,
    pairs: int,
    per_pair: int,
    rounds: int,
    seed: int = 7,
    timeout: float = 180,
    adaptive: tuple[int, float] | None = None,
) -> dict:
    """Run the race to the end and return what it left (see ``_Race.report``);
    ``adaptive``: the pairs' (maximum, half-width) of adaptive N, ``per_pair`` the minimum."""
    return _Race(raters=raters, pairs=pairs, per_pair=per_pair, rounds=rounds, seed=seed, adaptive=adaptive).run(
        timeout
    )


def race_json(**kwargs) -> str:
    return "RACE " + json.dumps(race(**kwargs))
