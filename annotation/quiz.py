"""The qualification quiz (issue #16): the gold pairs an admin put in a dataset's quiz for
a task kind, asked one by one in the rating page; after each answer the rater sees the
reference level and its explanation. An attempt is passed when the mean absolute error of
its answers is below the dataset's ``quiz_max_error``, which grants the kind (a
Qualification). A rater has QUIZ_ATTEMPTS attempts, each in its own order. Answers are
GoldRating rows (purpose ``quiz``), never ratings of the dataset."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, transaction

from annotation import cxc
from annotation.errors import Conflict, DomainError, NotFound
from annotation.gold.ids import ids_reserve
from annotation.gold.serving import gold_pair_assignment
from annotation.models import (
    DEFAULT_QUIZ_MAX_ERROR,
    QUIZ_ATTEMPTS,
    Dataset,
    GoldPair,
    GoldPurpose,
    GoldRating,
    Qualification,
    QualitySettings,
    QuizAttempt,
    Rating,
)
from annotation.queue.shapes import Item, QueueInputError, check_kind, service_now


class QuizOver(DomainError):
    """Both attempts are used and neither passed: the kind is not granted."""

    code = "quiz_over"
    http_status = 403


@dataclass(frozen=True)
class QuizResult:
    mean_error: float
    threshold: float
    passed: bool


@dataclass(frozen=True)
class QuizState:
    """Where the rater stands in a kind's quiz. ``item`` is the next question (None once
    the attempt is finished); ``result`` the finished attempt's outcome."""

    kind: str
    attempt: int
    attempts_allowed: int
    answered: int
    total: int
    gold_pair_id: int | None
    items: tuple[Item, ...] | None
    result: QuizResult | None
    qualified: bool

    @property
    def attempts_left(self) -> int:
        finished = self.result is not None
        return self.attempts_allowed - self.attempt + (0 if finished else 1)


@dataclass(frozen=True)
class QuizFeedback:
    """What the page shows after an answer: the reference and how far the answer was."""

    score: float
    reference_score: float
    reference_level: int
    explanation: str
    error: float
    replayed: bool
    state: QuizState


def quiz_pair_ids(*, dataset_id: int, kind: str) -> list[int]:
    """The active gold pairs of the dataset's quiz for ``kind``, by id."""
    return list(
        GoldPair.objects.filter(dataset_id=dataset_id, kind=kind, in_quiz=True, active=True)
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def quiz_set(*, dataset_id: int, gold_pair_ids: list[int], in_quiz: bool) -> int:
    """Put gold pairs in (or take them out of) their kind's quiz; returns how many changed.
    A gold lease a rater holds on a pair put in the quiz stays until it ends."""
    with transaction.atomic():
        return (
            GoldPair.objects.filter(dataset_id=dataset_id, pk__in=gold_pair_ids)
            .exclude(in_quiz=in_quiz)
            .update(in_quiz=in_quiz)
        )


def quiz_offered(*, rater, dataset_id: int, kind: str) -> bool:
    """Whether the rating page should show the kind's quiz to this rater: a quiz exists,
    the rater is not qualified yet, and an attempt is open or still to take."""
    if Qualification.objects.filter(rater=rater, kind=kind).in_dataset(dataset_id).exists():
        return False
    if not GoldPair.objects.filter(dataset_id=dataset_id, kind=kind, in_quiz=True, active=True).exists():
        return False
    attempts = QuizAttempt.objects.filter(rater=rater, dataset_id=dataset_id, kind=kind)
    return attempts.count() < QUIZ_ATTEMPTS or attempts.filter(finished_at__isnull=True).exists()


def quiz_state(*, rater, dataset: str, kind: str, start: bool = False, rng=None, now=None) -> QuizState:
    """The rater's place in the quiz, beginning the first attempt when there is none and,
    with ``start``, the next attempt after a failed one. Raises NotFound without a quiz,
    QuizOver when both attempts failed and ``start`` asks for another."""
    check_kind(kind)
    ds = _dataset(dataset)
    with transaction.atomic():
        attempt = _latest_attempt(rater, ds.pk, kind, lock=True)
        opens_one = attempt is None or (start and attempt.finished_at is not None and not attempt.passed)
        if opens_one:
            attempt = _attempt_begin(rater, ds.pk, kind, previous=attempt, rng=rng, now=service_now(now))
    return _state_of(attempt)


def quiz_answer(
    *,
    rater,
    dataset: str,
    kind: str,
    gold_pair_id: int,
    score: float,
    time_on_item_ms: int,
    time_to_first_move_ms: int | None,
    adjustments: int,
    idempotency_key: str,
    now: datetime | None = None,
) -> QuizFeedback:
    """Store the answer to the current question of the rater's open attempt and return
    the reference. The last answer finishes the attempt (and grants the kind when it is
    passed). Repeating an answer's ``idempotency_key`` returns its feedback again."""
    check_kind(kind)
    if not cxc.SCORE_MIN <= score <= cxc.SCORE_MAX:
        raise QueueInputError(f"score must be within {cxc.SCORE_MIN}-{cxc.SCORE_MAX}, got {score}")
    ds = _dataset(dataset)
    now = service_now(now)
    try:
        with transaction.atomic():
            attempt = _latest_attempt(rater, ds.pk, kind, lock=True)
            replay = _replayed_answer(rater, idempotency_key, attempt)
            if replay is not None:
                return replay
            expected = _expected_pair(attempt, dataset, kind)
            if gold_pair_id != expected:
                raise Conflict(f"gold pair #{gold_pair_id} is not the question you were asked; reload the quiz")
            gold = GoldPair.objects.get(pk=expected)
            (rating_id,) = ids_reserve(Rating, 1)
            answer = GoldRating.objects.create(
                id=rating_id,
                gold_pair=gold,
                rater=rater,
                dataset_id=ds.pk,
                purpose=GoldPurpose.QUIZ,
                attempt=attempt.number,
                score=round(score, 4),
                gold_score=gold.gold_score,
                time_on_item_ms=time_on_item_ms,
                time_to_first_move_ms=time_to_first_move_ms,
                adjustments=adjustments,
                idempotency_key=idempotency_key,
                created_at=now,
            )
            attempt.answered += 1
            attempt.save(update_fields=["answered"])
            if attempt.answered == len(attempt.order):
                _attempt_finish(attempt, now=now)
    except IntegrityError:
        raise Conflict(
            f"idempotency key {idempotency_key!r} was already used for another answer; use a new key for each item"
        ) from None
    return _feedback(answer, gold, _state_of(attempt), replayed=False)


def quiz_results(*, rater) -> list[QuizAttempt]:
    """The rater's quiz attempts, newest first (their own page)."""
    return list(QuizAttempt.objects.filter(rater=rater).select_related("dataset").order_by("-started_at"))


def _dataset(name: str) -> Dataset:
    ds = Dataset.objects.filter(name=name).first()
    if ds is None:
        raise NotFound(f"no dataset named {name!r}")
    return ds


def _latest_attempt(rater, dataset_id: int, kind: str, *, lock: bool) -> QuizAttempt | None:
    attempts = QuizAttempt.objects.filter(rater=rater, dataset_id=dataset_id, kind=kind).order_by("-number")
    return (attempts.select_for_update() if lock else attempts).first()


def _attempt_begin(rater, dataset_id: int, kind: str, *, previous: QuizAttempt | None, rng, now) -> QuizAttempt:
    """The next attempt, its questions shuffled (never in the previous attempt's order
    when there are two or more). Raises NotFound without a quiz, QuizOver after the last."""
    pair_ids = quiz_pair_ids(dataset_id=dataset_id, kind=kind)
    if not pair_ids:
        raise NotFound(f"there is no {kind} qualification quiz in this dataset; ask an admin to qualify you")
    number = 1 if previous is None else previous.number + 1
    if number > QUIZ_ATTEMPTS:
        raise QuizOver(f"you used both attempts at the {kind} quiz without passing; the task stays closed to you")
    rng = rng or random.Random()
    order = list(pair_ids)
    rng.shuffle(order)
    while previous is not None and len(order) > 1 and order == previous.order:
        rng.shuffle(order)
    try:
        with transaction.atomic():
            return QuizAttempt.objects.create(
                rater=rater, dataset_id=dataset_id, kind=kind, number=number, order=order, started_at=now
            )
    except IntegrityError:
        # The same rater's other tab began it a moment ago.
        return QuizAttempt.objects.get(rater=rater, dataset_id=dataset_id, kind=kind, number=number)


def _expected_pair(attempt: QuizAttempt | None, dataset: str, kind: str) -> int:
    if attempt is None:
        raise Conflict(f"no {kind} quiz attempt of yours is open in {dataset!r}; load the quiz first")
    if attempt.finished_at is not None:
        raise Conflict(f"your {kind} quiz attempt {attempt.number} is finished; load the quiz again")
    return attempt.order[attempt.answered]


def _attempt_finish(attempt: QuizAttempt, *, now) -> None:
    threshold = (
        QualitySettings.objects.filter(dataset_id=attempt.dataset_id).values_list("quiz_max_error", flat=True).first()
    )
    threshold = DEFAULT_QUIZ_MAX_ERROR if threshold is None else threshold
    answers = _answers(attempt)
    mean_error = sum(abs(a.score - a.gold_score) for a in answers) / len(answers)
    attempt.finished_at = now
    attempt.mean_error = mean_error
    attempt.threshold = threshold
    attempt.passed = mean_error < threshold
    attempt.save(update_fields=["finished_at", "mean_error", "threshold", "passed"])
    if attempt.passed:
        # The kind in this dataset only: another dataset's quiz is its own test.
        Qualification.objects.get_or_create(rater_id=attempt.rater_id, dataset_id=attempt.dataset_id, kind=attempt.kind)


def _answers(attempt: QuizAttempt):
    return GoldRating.objects.filter(
        rater_id=attempt.rater_id,
        dataset_id=attempt.dataset_id,
        purpose=GoldPurpose.QUIZ,
        attempt=attempt.number,
        gold_pair_id__in=attempt.order,
    )


def _replayed_answer(rater, key: str, attempt: QuizAttempt | None) -> QuizFeedback | None:
    answer = GoldRating.objects.filter(rater=rater, idempotency_key=key, purpose=GoldPurpose.QUIZ).first()
    if answer is None:
        return None
    if attempt is None:
        raise Conflict(f"idempotency key {key!r} was already used for another answer; use a new key for each item")
    return _feedback(answer, answer.gold_pair, _state_of(attempt), replayed=True)


def _state_of(attempt: QuizAttempt) -> QuizState:
    qualified = (
        Qualification.objects.filter(rater_id=attempt.rater_id, kind=attempt.kind)
        .in_dataset(attempt.dataset_id)
        .exists()
    )
    result = None
    if attempt.finished_at is not None:
        result = QuizResult(mean_error=attempt.mean_error, threshold=attempt.threshold, passed=attempt.passed)
    gold_pair_id, items = None, None
    if attempt.finished_at is None:
        gold_pair_id = attempt.order[attempt.answered]
        pair = GoldPair.objects.select_related("dataset", "caption_a", "caption_b", "image_a", "image_b").get(
            pk=gold_pair_id
        )
        items = gold_pair_assignment(pair, slot_id=pair.pk, lease_expires_at=attempt.started_at, resumed=False).items
    return QuizState(
        kind=attempt.kind,
        attempt=attempt.number,
        attempts_allowed=QUIZ_ATTEMPTS,
        answered=attempt.answered,
        total=len(attempt.order),
        gold_pair_id=gold_pair_id,
        items=items,
        result=result,
        qualified=qualified,
    )


def _feedback(answer: GoldRating, gold: GoldPair, state: QuizState, *, replayed: bool) -> QuizFeedback:
    return QuizFeedback(
        score=answer.score,
        reference_score=answer.gold_score,
        # The nearest level, halves up (round() would take 2.5 to 2).
        reference_level=int(answer.gold_score + 0.5),
        explanation=gold.explanation,
        error=abs(answer.score - answer.gold_score),
        replayed=replayed,
        state=state,
    )
