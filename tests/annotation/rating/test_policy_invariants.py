"""The rating policy's invariants as a hypothesis state machine, through the HTTP API.

Raters and crowd participants claim, submit (and re-send), skip and heartbeat, leases
run out, and an admin pauses and lifts, excludes and undoes, uploads gold (among it a
copy of a queued pair) and takes quiz pairs out of the quiz, in random interleavings.
After every step the database must show: every complete pair has exactly N valid ratings
from N distinct raters; no rating a paused or excluded rater gave counts; no participant
exceeds the quota or acts outside the link's dataset and kinds; no rater meets a gold
pair twice or a quiz pair as gold.

The world (tests/support/policy_world.py) is built once (about 4 s); each example runs
in a savepoint on it that is rolled back in milliseconds, where a flush and a rebuild per
example would cost the 4 s every time. The run is deterministic and bounded (derandomize,
no example database, SQL random() seeded per example): EXAMPLES examples of at most STEPS
steps, about 90 s on PostgreSQL; POLICY_MACHINE_EXAMPLES=300 searches deeper by hand.
The queue's path follows SQL_PATHS: scripts/test runs this file again with
SQL_PATHS=portable, for the ORM paths of the embedded mode."""

from __future__ import annotations

import os
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test import TestCase
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    multiple,
    precondition,
    rule,
    run_state_machine_as_test,
)

from annotation.models import Pair, RaterPause, RatingSlot, SlotState
from annotation.quality.quiz import quiz_set
from tests.support import policy_world
from tests.support.policy_world import ACTORS, KINDS, LINK_KINDS, PARTICIPANTS, World
from tests.support.queue_support import TTL

pytestmark = [pytest.mark.django_db, pytest.mark.postgres, pytest.mark.slow]

EXAMPLES = int(os.environ.get("POLICY_MACHINE_EXAMPLES", "40"))
STEPS = 50

# Every status an action may answer; anything else (a 500 above all) fails the step.
CLAIM_OK = {200, 204, 403, 404, 409}
SLOT_OK = {200, 201, 403, 404, 409}


class Assignment:
    """An item an actor was served: where to submit, and what it was (for re-sends)."""

    def __init__(self, actor, dataset: str, slot_id, kind: str, pair_id: int | None):
        self.actor, self.dataset, self.slot_id, self.kind = actor, dataset, slot_id, kind
        self.pair_id = pair_id  # the ordinary pair's database id; None for a gold pair

    def url(self, action: str) -> str:
        return f"/api/rate/{self.dataset}/slots/{self.slot_id}/{action}/"

    def __repr__(self) -> str:
        return f"<{self.actor.name} {self.kind} slot {self.slot_id} in {self.dataset}>"


class Submitted:
    def __init__(self, assignment: Assignment, body: dict, answer: dict):
        self.assignment, self.body, self.answer = assignment, body, answer

    def __repr__(self) -> str:
        return f"<submit {self.body['idempotency_key']} of {self.assignment!r}>"


class PolicyMachine(RuleBasedStateMachine):
    # Set by the test before the machine runs: the world, the hand-moved clock, its start.
    world: World
    clock = None
    start = None

    assignments = Bundle("assignments")
    submits = Bundle("submits")
    exclusions = Bundle("exclusions")

    def __init__(self):
        super().__init__()
        self.savepoint = transaction.atomic()
        self.savepoint.__enter__()
        self.clock.now = self.start + timedelta(minutes=1)
        if connection.vendor == "postgresql":
            # The gold draw and the claim's choice among kinds use SQL random().
            with connection.cursor() as cursor:
                cursor.execute("SELECT setseed(0.25)")
        self.keys = 0
        self.excluded: dict[str, object] = {}  # actor name -> the exclusion's id while in force
        self.barred_submits: list[tuple[str, int, str, str]] = []
        self.met_pairs: dict[int, set[int]] = {}
        self.gold_uploads = 0

    def teardown(self):
        transaction.set_rollback(True)
        self.savepoint.__exit__(None, None, None)

    # --- the actors -----------------------------------------------------------------------

    @rule(
        target=assignments,
        actor=st.sampled_from(range(ACTORS)),
        kind=st.sampled_from([*KINDS, None]),
        elsewhere=st.sampled_from([False, False, False, True]),
    )
    def claim(self, actor, kind, elsewhere):
        return self._claim(self.world.actors[actor], kind, elsewhere)

    @rule(
        target=assignments,
        participant=st.sampled_from(range(PARTICIPANTS)),
        kind=st.sampled_from([*LINK_KINDS, None]),
        elsewhere=st.sampled_from([False, False, False, True]),
    )
    def participant_claim(self, participant, kind, elsewhere):
        """Participants again: their quota and link are what the crowd tries to get round."""
        return self._claim(self.world.participants[participant], kind, elsewhere)

    def _claim(self, who, kind, elsewhere):
        dataset = self.world.other.name if elsewhere and kind in (None, "STS") else self.world.main.name
        self.clock.advance(1)
        body = {} if kind is None else {"kind": kind}
        answer = who.client.post(f"/api/rate/{dataset}/claim/", body, format="json")
        assert answer.status_code in CLAIM_OK, (answer.status_code, answer.content)
        if answer.status_code != 200:
            return multiple()
        return self._served(who, dataset, answer.json())

    def _served(self, who, dataset: str, served: dict) -> Assignment:
        held = (
            RatingSlot.objects.filter(
                rater_id=who.user.pk, dataset__name=dataset, kind=served["kind"], state=SlotState.LEASED
            )
            .values_list("pair_id", flat=True)
            .first()
        )
        if held is not None:
            self.met_pairs.setdefault(who.user.pk, set()).add(held)
        return Assignment(who, dataset, served["slot_id"], served["kind"], held)

    def _barred(self, who, dataset: str) -> str | None:
        """Why the actor may not give a rating that counts right now, if they may not."""
        if RaterPause.objects.filter(rater_id=who.user.pk, dataset__name=dataset, lifted_at__isnull=True).exists():
            return "paused"
        if dataset == self.world.main.name and self.excluded.get(who.name) is not None:
            return "excluded"
        return None

    def _submit(self, assignment: Assignment, score: float, next_kind: str | None):
        self.keys += 1
        body = {
            "score": score,
            "time_on_item_ms": 4000,
            "time_to_first_move_ms": 700,
            "adjustments": 2,
            "idempotency_key": f"k{self.keys}",
        }
        if next_kind is not None:
            body["claim_next_kind"] = next_kind
        self.clock.advance(1)
        barred = self._barred(assignment.actor, assignment.dataset)
        answer = assignment.actor.client.post(assignment.url("submit"), body, format="json")
        assert answer.status_code in SLOT_OK, (answer.status_code, answer.content)
        if answer.status_code == 201 and barred is not None:
            self.barred_submits.append(
                (assignment.actor.name, assignment.actor.user.pk, body["idempotency_key"], barred)
            )
        return answer, body

    @rule(target=submits, assignment=assignments, score=st.sampled_from([0.0, 2.5, 5.0]))
    def submit(self, assignment, score):
        answer, body = self._submit(assignment, score, None)
        if answer.status_code != 201:
            return multiple()
        return Submitted(assignment, body, answer.json())

    @rule(target=assignments, assignment=assignments, next_kind=st.sampled_from(KINDS))
    def submit_and_claim_next(self, assignment, next_kind):
        answer, _ = self._submit(assignment, 3.0, next_kind)
        following = answer.json().get("next") if answer.status_code == 201 else None
        if following is None:
            return multiple()
        return self._served(assignment.actor, assignment.dataset, following)

    @precondition(lambda self: self.excluded)
    @rule(target=assignments, pick=st.integers(0, ACTORS - 1), kind=st.sampled_from(KINDS))
    def excluded_rater_goes_on(self, pick, kind):
        """The attacker of an exclusion: claim the next item and submit it at once."""
        names = sorted(self.excluded)
        who = next(actor for actor in self.world.actors if actor.name == names[pick % len(names)])
        assignment = self._claim(who, kind, elsewhere=False)
        if isinstance(assignment, Assignment):
            self._submit(assignment, 4.0, None)
        return assignment

    @rule(submitted=submits)
    def resend(self, submitted):
        """The same submission again (a retry after a lost answer): the stored rating back, never a second."""
        assignment = submitted.assignment
        self.clock.advance(1)
        answer = assignment.actor.client.post(assignment.url("submit"), submitted.body, format="json")
        assert answer.status_code in {200, 403}, (answer.status_code, answer.content)
        if answer.status_code == 200:
            again = answer.json()
            assert again["replayed"] is True, again
            assert again["rating_id"] == submitted.answer["rating_id"], (again, submitted.answer)

    @rule(assignment=assignments, action=st.sampled_from(["skip", "heartbeat"]))
    def skip_or_heartbeat(self, assignment, action):
        self.clock.advance(1)
        answer = assignment.actor.client.post(assignment.url(action), {}, format="json")
        assert answer.status_code in SLOT_OK, (answer.status_code, answer.content)

    @rule()
    def leases_run_out(self):
        self.clock.advance(TTL + 1)

    # --- the admin ------------------------------------------------------------------------

    def _admin(self, method: str, path: str, body=None, fmt="json"):
        self.clock.advance(1)
        url = f"/api/datasets/{self.world.main.name}/{path}"
        answer = self.world.admin.get(url) if method == "get" else self.world.admin.post(url, body, format=fmt)
        assert answer.status_code < 500, (answer.status_code, answer.content)
        return answer

    @rule(actor=st.sampled_from(range(ACTORS)))
    def pause(self, actor):
        who = self.world.actors[actor]
        answer = self._admin("post", "pauses/", {"rater": who.user.username, "reason": "review"})
        assert answer.status_code in {201, 409}, answer.content

    @rule(actor=st.sampled_from(range(ACTORS)))
    def lift(self, actor):
        """The admin lifts the actor's pause, whether an admin or an exclusion made it."""
        who = self.world.actors[actor]
        listed = self._admin("get", "pauses/")
        active = [p["id"] for p in listed.json() if p["rater"] == who.user.username and p["lifted_at"] is None]
        if not active:
            return
        answer = self._admin("post", f"pauses/{active[0]}/lift/", {"note": "reviewed"})
        assert answer.status_code == 200, answer.content
        # The admin reviewed the rater and let them rate again.
        self.excluded.pop(who.name, None)

    @rule(target=exclusions, submitted=submits)
    def exclude(self, submitted):
        """The admin excludes the ratings of someone who rated (and may be rating still)."""
        who = submitted.assignment.actor
        # The exclusion is applied by a task queued on commit; run it now, as a worker would.
        with TestCase.captureOnCommitCallbacks(execute=True):
            answer = self._admin("post", "exclusions/", {"rater": who.user.username, "reason": "careless"})
        assert answer.status_code in {202, 400, 409}, answer.content
        if answer.status_code != 202:
            return multiple()
        self.excluded[who.name] = answer.json()["id"]
        return (who, answer.json()["id"])

    @rule(excluded=consumes(exclusions))
    def undo(self, excluded):
        who, exclusion_id = excluded
        with TestCase.captureOnCommitCallbacks(execute=True):
            answer = self._admin("post", f"exclusions/{exclusion_id}/undo/", {"reason": "mistake"})
        assert answer.status_code in {202, 409}, answer.content
        if answer.status_code == 202 and self.excluded.get(who.name) == exclusion_id:
            self.excluded.pop(who.name)

    @rule(pick=st.integers(0, 3), out=st.booleans())
    def quiz_change(self, pick, out):
        """The admin takes a quiz pair out of the quiz (it may then serve as gold) or puts it back."""
        quiz_set(dataset_id=self.world.main.pk, gold_pair_ids=[self.world.quiz_gold_ids[pick]], in_quiz=not out)

    @rule(swapped=st.booleans())
    def gold_upload(self, swapped):
        """The admin uploads a gold pair of images no pair has."""
        spare = self.world.spare_images
        first = 2 * (self.gold_uploads % (len(spare) // 2))
        self.gold_uploads += 1
        self._gold_upload(policy_world.gold_csv("SIS", (spare[first], spare[first + 1]), swapped=swapped))

    @rule(assignment=assignments, swapped=st.booleans())
    def gold_upload_of_a_queued_pair(self, assignment, swapped):
        """The admin uploads as gold the items of a pair someone was served: refused, or
        that rater could meet the pair again as gold."""
        if assignment.pair_id is None:
            return
        pair = Pair.objects.select_related("caption_a", "caption_b", "image_a", "image_b").get(pk=assignment.pair_id)
        items = [item for item in (pair.caption_a, pair.caption_b, pair.image_a, pair.image_b) if item is not None]
        self._gold_upload(policy_world.gold_csv(pair.kind, items, swapped=swapped))

    def _gold_upload(self, upload):
        answer = self._admin("post", "gold/", {"file": upload}, fmt="multipart")
        assert answer.status_code in {201, 400}, answer.content

    # --- the invariants -------------------------------------------------------------------

    @invariant()
    def complete_pairs_have_n_valid_ratings_from_n_raters(self):
        assert policy_world.complete_pair_problems(self.world) == []

    @invariant()
    def no_paused_rating_counts(self):
        assert policy_world.uncounted_problems(self.barred_submits, "paused") == []

    @invariant()
    def no_excluded_rating_counts(self):
        assert policy_world.uncounted_problems(self.barred_submits, "excluded") == []

    @invariant()
    def participants_stay_within_the_quota(self):
        assert policy_world.quota_problems(self.world) == []

    @invariant()
    def participants_stay_within_their_link(self):
        assert policy_world.link_problems(self.world) == []

    @invariant()
    def no_quiz_pair_met_as_gold(self):
        assert policy_world.quiz_as_gold_problems(self.world) == []

    @invariant()
    def no_gold_pair_met_as_an_ordinary_pair_too(self):
        assert policy_world.gold_twin_problems(self.world, self.met_pairs) == []


def test_the_rating_policy_holds_under_random_interleavings(clock):
    PolicyMachine.world = policy_world.world_build()
    PolicyMachine.clock = clock
    PolicyMachine.start = clock.now
    run_state_machine_as_test(
        PolicyMachine,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            deadline=None,
            derandomize=True,
            database=None,
            phases=[Phase.explicit, Phase.generate, Phase.shrink],
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
