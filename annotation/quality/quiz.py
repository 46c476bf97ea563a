"""The qualification quiz (issues #16, #25, #57): questions drawn from the gold pairs an
admin put in a dataset's quiz for a task kind (the kind's pool), asked one by one in the
rating page. An attempt is passed when the mean absolute error of its answers is strictly
below the dataset's ``quiz_max_error``, which grants the kind (a Qualification). Answers
are GoldRating rows (purpose ``quiz``), never ratings of the dataset.

The quiz must test, not teach its answers, to a retake or to another account:
- Nothing about a reference is shown while an attempt is open. Once it ends, the rater
  sees for each question THEY answered in it the reference level's NAME (and its
  description) and the pair's explanation (the attempt's review), never a number: no
  reference score, no per-answer error, not even the level's digit. Questions of the pool
  they were not asked are never named.
- Each attempt asks ``quiz_length`` questions (QualitySettings) drawn for that rater and
  attempt from the kind's pool, which must hold at least ``POOL_FACTOR`` (five) times the
  length: a rater's two attempts show at most two fifths of the pool, so another account
  answering from what one was shown meets mostly questions it knows nothing of. A smaller
  pool runs no quiz at all (QuizTooSmall, naming the numbers): the kind stays closed until
  an admin adds questions or lowers the length, it is never opened without a quiz.
- The draw is seeded by a keyed hash of the rater, dataset, kind and attempt number: the
  same attempt draws the same questions however often it is begun, one rater's draw says
  nothing about another's, and nobody without the secret key predicts one.
- The second attempt never repeats a question of the first: what attempt 1's review
  showed is worth nothing in attempt 2.
- A finished attempt reports its mean error: one aggregate over questions that rater is
  never asked again (and, gold serving's rule, never served as gold).
What remains possible with many real platform accounts is in the admin guide's security
section (docs/admin-guide.md)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import Count
from django.utils.crypto import salted_hmac

from annotation.core import cxc
from annotation.core.errors import Conflict, DomainError, NotFound
from annotation.models import (
    DEFAULT_QUIZ_LENGTH,
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
from annotation.quality.quiz_review import (
    QuizReviewEntry,
    attempt_answers,
    attempt_review,
    gold_with_items,
    question_items,
)
from annotation.serving.gold_ids import ids_reserve
from annotation.serving.shapes import Item, QueueInputError, check_kind, service_now


class QuizOver(DomainError):
    """Both attempts are used and neither passed: the kind is not granted."""

    code = "quiz_over"
    http_status = 403


class QuizTooSmall(DomainError):
    """The kind's quiz pool holds fewer than ``POOL_FACTOR`` times the attempt's length."""

    code = "quiz_too_small"
    http_status = 409


# A kind's pool holds at least this many times the quiz length (see the module's docstring).
POOL_FACTOR = 5


def pool_needed(quiz_length: int) -> int:
    """The smallest pool that runs attempts of ``quiz_length``."""
    return POOL_FACTOR * quiz_length


def attempt_length(*, pool: int, quiz_length: int) -> int:
    """Questions per attempt: ``quiz_length``, or 0 (the quiz cannot run) when the pool
    holds fewer than ``POOL_FACTOR`` times that."""
    return quiz_length if pool >= pool_needed(quiz_length) else 0


@dataclass(frozen=True)
class QuizPool:
    """A kind's quiz pool in a dataset, as the admin pages and API report it."""

    kind: str
    size: int
    quiz_length: int

    @property
    def attempt_length(self) -> int:
        return attempt_length(pool=self.size, quiz_length=self.quiz_length)

    @property
    def needed(self) -> int:
        return pool_needed(self.quiz_length)

    @property
    def too_small(self) -> bool:
        return self.size < self.needed

    def describe(self) -> str:
        text = f"{self.kind} quiz: {self.size} question(s) in the pool"
        if not self.too_small:
            return f"{text}, {self.quiz_length} per attempt (which needs at least {self.needed})."
        lower = self.size // POOL_FACTOR
        shorter = f", or lower the quiz length to {lower}" if lower else ""
        return (
            f"{text}: too small, the quiz cannot run: attempts of {self.quiz_length} need at least {self.needed} "
            f"({POOL_FACTOR} times the quiz length, so that what one rater is shown covers little of the pool). "
            f"Raters not yet qualified stay closed out of {self.kind}: add {self.needed - self.size} more{shorter}."
        )


@dataclass(frozen=True)
class QuizResult:
    mean_error: float
    threshold: float
    passed: bool


@dataclass(frozen=True)
class QuizState:
    """Where the rater stands in a kind's quiz. ``items`` is the next question (None once
    the attempt is finished); ``result`` the finished attempt's outcome and ``review`` its
    answered questions with their reference levels (both None while it is open)."""

    kind: str
    attempt: int
    attempts_allowed: int
    answered: int
    total: int
    gold_pair_id: int | None
    items: tuple[Item, ...] | None
    result: QuizResult | None
    qualified: bool
    review: tuple[QuizReviewEntry, ...] | None = None

    @property
    def attempts_left(self) -> int:
        finished = self.result is not None
        return self.attempts_allowed - self.attempt + (0 if finished else 1)


@dataclass(frozen=True)
class QuizAnswered:
    """An answer stored (or, ``replayed``, one sent again with its key): the rater's
    state after it, the next question or the finished attempt with its review."""

    replayed: bool
    state: QuizState


def quiz_pair_ids(*, dataset_id: int, kind: str) -> list[int]:
    """The active gold pairs of the dataset's quiz for ``kind``, by id."""
    return list(
        GoldPair.objects.filter(dataset_id=dataset_id, kind=kind, in_quiz=True, active=True)
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def quiz_settings(dataset_id: int) -> tuple[int, float]:
    """The dataset's (quiz_length, quiz_max_error), the defaults without a settings row."""
    row = QualitySettings.objects.filter(dataset_id=dataset_id).values_list("quiz_length", "quiz_max_error").first()
    return row or (DEFAULT_QUIZ_LENGTH, DEFAULT_QUIZ_MAX_ERROR)


def quiz_settings_set(*, dataset_id: int, **values) -> None:
    """Set the dataset's ``quiz_length`` and/or ``quiz_max_error`` (the row is created with
    the other defaults when there is none)."""
    with transaction.atomic():
        QualitySettings.objects.update_or_create(dataset_id=dataset_id, defaults=values)


def quiz_pools(*, dataset_id: int) -> list[QuizPool]:
    """The dataset's quiz pools, one per kind that has active quiz pairs, by kind."""
    quiz_length, _ = quiz_settings(dataset_id)
    sizes = (
        GoldPair.objects.filter(dataset_id=dataset_id, in_quiz=True, active=True)
        .values_list("kind")
        .annotate(size=Count("pk"))
        .order_by("kind")
    )
    return [QuizPool(kind=kind, size=size, quiz_length=quiz_length) for kind, size in sizes]


def quiz_attempt_length(*, dataset_id: int, kind: str) -> int:
    """How many questions an attempt at the kind's quiz asks now (0: it cannot run)."""
    pool = len(quiz_pair_ids(dataset_id=dataset_id, kind=kind))
    return attempt_length(pool=pool, quiz_length=quiz_settings(dataset_id)[0])


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
    """Whether the rating page should show the kind's quiz to this rater: the rater is not
    qualified yet, and an attempt is open, or one is still to take and the pool holds
    questions for it (a too small pool offers nothing: the kind stays closed)."""
    if Qualification.objects.filter(rater=rater, kind=kind).in_dataset(dataset_id).exists():
        return False
    attempts = list(QuizAttempt.objects.filter(rater=rater, dataset_id=dataset_id, kind=kind))
    if any(attempt.finished_at is None for attempt in attempts):
        return True
    if len(attempts) >= QUIZ_ATTEMPTS:
        return False
    return bool(_draw_size(dataset_id, kind, attempts)[1])


def quiz_failed_kinds(*, rater, dataset_id: int, kinds: list[str]) -> set[str]:
    """The kinds of ``kinds`` whose quiz the rater failed in every attempt allowed in the
    dataset: what screens a crowd participant out (a quiz never taken fails nothing)."""
    failed = (
        QuizAttempt.objects.filter(
            rater=rater, dataset_id=dataset_id, kind__in=kinds, passed=False, finished_at__isnull=False
        )
        .values("kind")
        .annotate(n=Count("id"))
        .filter(n__gte=QUIZ_ATTEMPTS)
    )
    return {row["kind"] for row in failed}


def quiz_state(*, rater, dataset: str, kind: str, start: bool = False, rng=None, now=None) -> QuizState:
    """The rater's place in the quiz, beginning the first attempt when there is none and,
    with ``start``, the next attempt after a failed one. Raises NotFound without a quiz,
    QuizOver when both attempts failed and ``start`` asks for another."""
    check_kind(kind, cxc.KINDS)  # a review has no quiz
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
) -> QuizAnswered:
    """Store the answer to the current question of the rater's open attempt. The last
    answer finishes the attempt (and grants the kind when it is passed); only then does
    the state carry the review. Repeating an answer's ``idempotency_key`` stores nothing
    and answers the state again."""
    check_kind(kind, cxc.KINDS)  # a review has no quiz
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
                raise Conflict("that is not the question you were asked; reload the quiz")
            gold = GoldPair.objects.get(pk=expected)
            (rating_id,) = ids_reserve(Rating, 1)
            GoldRating.objects.create(
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
    return QuizAnswered(replayed=False, state=_state_of(attempt))


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


def _generator(*, rater_id: int, dataset_id: int, kind: str, number: int) -> random.Random:
    """The generator of one rater's attempt, seeded by a keyed hash (SECRET_KEY) of the
    rater, dataset, kind and attempt number: the attempt draws the same questions however
    often it is begun (two tabs at once included), and without the key nobody predicts
    a draw, nor learns anything about one rater's from another's."""
    seed = salted_hmac(
        "annotation.quality.quiz.draw", f"{rater_id}:{dataset_id}:{kind}:{number}", algorithm="sha256"
    ).digest()
    return random.Random(int.from_bytes(seed))


def _draw_size(dataset_id: int, kind: str, previous: list[QuizAttempt]) -> tuple[list[int], int]:
    """The pool's questions no previous attempt asked, and how many the next attempt
    draws from them: the attempt length, or 0 when the pool is too small for it (an
    admin may have shrunk it since the last attempt)."""
    pool = quiz_pair_ids(dataset_id=dataset_id, kind=kind)
    asked = {pair_id for attempt in previous for pair_id in attempt.order}
    fresh = [pair_id for pair_id in pool if pair_id not in asked]
    length = attempt_length(pool=len(pool), quiz_length=quiz_settings(dataset_id)[0])
    return fresh, min(length, len(fresh))


def _attempt_begin(rater, dataset_id: int, kind: str, *, previous: QuizAttempt | None, rng, now) -> QuizAttempt:
    """The next attempt: questions drawn for this rater and attempt from the kind's pool,
    none that an earlier attempt asked. Raises NotFound without a quiz, QuizOver after the
    last attempt, QuizTooSmall when the pool is too small for an attempt."""
    pool = quiz_pair_ids(dataset_id=dataset_id, kind=kind)
    if not pool:
        raise NotFound(f"there is no {kind} qualification quiz in this dataset; ask an admin to qualify you")
    number = 1 if previous is None else previous.number + 1
    if number > QUIZ_ATTEMPTS:
        raise QuizOver(f"you used both attempts at the {kind} quiz without passing; the task stays closed to you")
    earlier = list(QuizAttempt.objects.filter(rater=rater, dataset_id=dataset_id, kind=kind))
    fresh, size = _draw_size(dataset_id, kind, earlier)
    if size == 0:
        quiz_length = quiz_settings(dataset_id)[0]
        raise QuizTooSmall(
            f"the {kind} qualification quiz of this dataset cannot run: its pool holds {len(pool)} question(s) and "
            f"attempts of {quiz_length} need at least {pool_needed(quiz_length)} ({POOL_FACTOR} times the quiz "
            "length); ask an admin to add questions"
        )
    generator = rng or _generator(rater_id=rater.pk, dataset_id=dataset_id, kind=kind, number=number)
    order = generator.sample(fresh, size)
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
    _, threshold = quiz_settings(attempt.dataset_id)
    answers = attempt_answers(attempt)
    mean_error = sum(abs(a.score - a.gold_score) for a in answers) / len(answers)
    attempt.finished_at = now
    attempt.mean_error = mean_error
    attempt.threshold = threshold
    # Strictly below: an attempt exactly at the threshold is not passed.
    attempt.passed = mean_error < threshold
    # The result's fields only (saving every field gives the same row; see rater_pause_lift).
    attempt.save(update_fields=["finished_at", "mean_error", "threshold", "passed"])  # pragma: no mutate
    if attempt.passed:
        # The kind in this dataset only: another dataset's quiz is its own test.
        Qualification.objects.get_or_create(rater_id=attempt.rater_id, dataset_id=attempt.dataset_id, kind=attempt.kind)


def _replayed_answer(rater, key: str, attempt: QuizAttempt | None) -> QuizAnswered | None:
    if not GoldRating.objects.filter(rater=rater, idempotency_key=key, purpose=GoldPurpose.QUIZ).exists():
        return None
    if attempt is None:
        raise Conflict(f"idempotency key {key!r} was already used for another answer; use a new key for each item")
    return QuizAnswered(replayed=True, state=_state_of(attempt))


def _state_of(attempt: QuizAttempt) -> QuizState:
    qualified = (
        Qualification.objects.filter(rater_id=attempt.rater_id, kind=attempt.kind)
        .in_dataset(attempt.dataset_id)
        .exists()
    )
    result, review = None, None
    if attempt.finished_at is not None:
        result = QuizResult(mean_error=attempt.mean_error, threshold=attempt.threshold, passed=attempt.passed)
        review = attempt_review(attempt)
    gold_pair_id, items = None, None
    if attempt.finished_at is None:
        gold_pair_id = attempt.order[attempt.answered]
        items = question_items(gold_with_items().get(pk=gold_pair_id), attempt)
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
        review=review,
    )
