"""The qualification quiz API. Raters load the quiz of a task kind and answer its
questions one by one; nothing of a reference is told while the attempt is open, and once
it ends its review names, for each question answered, the reference level and the pair's
explanation, never a number (see annotation.quality.quiz). Admins set a dataset's quiz
length and pass threshold and read each kind's pool against that length."""

import dataclasses

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import serving as queue
from annotation.apis.fields import OpaqueIdField, StrictFloatField, StrictIntegerField
from annotation.apis.rating import ItemSerializer
from annotation.catalog import selectors
from annotation.core.cxc import KINDS
from annotation.core.errors import NotFound
from annotation.core.roles import IsAdmin, IsRater
from annotation.models import MAX_QUIZ_LENGTH
from annotation.quality import quiz
from annotation.rating import policy
from config.openapi import error_response


def _kind(kind: str) -> str:
    """The task kind a URL names (any case); an unknown one is a path that does not exist."""
    if kind.upper() not in KINDS:  # a review has no quiz
        raise NotFound(f"no task kind {kind!r}; use one of {', '.join(KINDS)}")
    return kind.upper()


class QuizResultSerializer(serializers.Serializer):
    mean_error = serializers.FloatField(
        help_text="Mean absolute error of the finished attempt's answers (0-5 scale): an aggregate over questions "
        "this rater is never asked again."
    )
    threshold = serializers.FloatField(help_text="Passed when mean_error is below this.")
    passed = serializers.BooleanField()


class QuizReviewEntrySerializer(serializers.Serializer):
    question = OpaqueIdField("question", source="gold_pair_id", help_text="The question (its opaque id).")
    items = serializers.SerializerMethodField()
    your_level = serializers.CharField(help_text="Name of the scale level nearest your answer.")
    reference_level = serializers.CharField(help_text="Name of the scale level nearest the reference.")
    reference_detail = serializers.CharField(help_text="That level's description for this task kind.")
    explanation = serializers.CharField(allow_blank=True, help_text="Why the pair belongs at its level.")

    @extend_schema_field(ItemSerializer(many=True))
    def get_items(self, entry) -> list[dict]:
        return [dataclasses.asdict(item) for item in entry.items]


class QuizStateSerializer(serializers.Serializer):
    kind = serializers.CharField()
    attempt = serializers.IntegerField(help_text="1 or 2.")
    attempts_allowed = serializers.IntegerField()
    attempts_left = serializers.IntegerField(help_text="Attempts not yet begun, plus this one while it is open.")
    answered = serializers.IntegerField()
    total = serializers.IntegerField()
    gold_pair_id = OpaqueIdField(
        "question", allow_null=True, help_text="The question to answer (an opaque id); null when finished."
    )
    items = serializers.SerializerMethodField()
    result = QuizResultSerializer(allow_null=True, help_text="Set once the attempt is finished.")
    review = QuizReviewEntrySerializer(
        many=True,
        allow_null=True,
        help_text="Set once the attempt is finished: each question you answered in it, in the order asked, with "
        "the reference level's name. Null while it is open; questions you were not asked are never named.",
    )
    qualified = serializers.BooleanField(help_text="The rater may now rate this kind.")

    @extend_schema_field(ItemSerializer(many=True, allow_null=True))
    def get_items(self, state) -> list[dict] | None:
        return None if state.items is None else [dataclasses.asdict(item) for item in state.items]


class QuizStateApi(APIView):
    """Your place in the quiz of a task kind: the next question of your open attempt, or
    the result of the last one. The first call begins attempt 1; ``start`` begins your
    second attempt after a failed first, with other questions than the first's."""

    permission_classes = [IsRater]

    class QuizStateInputSerializer(serializers.Serializer):
        start = serializers.BooleanField(default=False, help_text="Begin the next attempt after a failed one.")

    @extend_schema(
        request=QuizStateInputSerializer,
        responses={
            200: QuizStateSerializer,
            403: error_response("Both attempts failed."),
            404: error_response("No quiz."),
            409: error_response("The pool is too small to run the quiz (fewer than five times the quiz length)."),
        },
    )
    def post(self, request, dataset: str, kind: str):
        data = self.QuizStateInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        policy.entry_check(rater=request.user, dataset=dataset, kind=_kind(kind))
        state = quiz.quiz_state(rater=request.user, dataset=dataset, kind=_kind(kind), **data.validated_data)
        return Response(QuizStateSerializer(state).data)


class QuizAnswerApi(APIView):
    """Answer the current question of your open quiz attempt. 201 with your state: the
    next question, or the finished attempt's result and review (the reference levels of
    the questions you answered, no scores, no error); nothing about the reference of an
    answer while the attempt is open. 200 when the same idempotency key was sent before;
    409 when the question is not the one you were asked."""

    permission_classes = [IsRater]

    class QuizAnswerInputSerializer(serializers.Serializer):
        gold_pair_id = OpaqueIdField("question", help_text="The question answered, as the quiz gave it.")
        score = StrictFloatField(min_value=queue.SCORE_MIN, max_value=queue.SCORE_MAX)
        time_on_item_ms = StrictIntegerField(min_value=0, max_value=queue.MAX_TIME_ON_ITEM_MS)
        time_to_first_move_ms = StrictIntegerField(min_value=0, allow_null=True)
        adjustments = StrictIntegerField(min_value=0, max_value=queue.MAX_ADJUSTMENTS)
        idempotency_key = serializers.CharField(max_length=queue.MAX_IDEMPOTENCY_KEY)

    class QuizAnsweredSerializer(serializers.Serializer):
        replayed = serializers.BooleanField(help_text="The idempotency key was sent before: nothing was stored.")
        state = QuizStateSerializer()

    @extend_schema(
        request=QuizAnswerInputSerializer,
        responses={
            201: QuizAnsweredSerializer,
            200: QuizAnsweredSerializer,
            404: error_response("No such dataset or kind."),
            409: error_response("Not the question."),
        },
    )
    def post(self, request, dataset: str, kind: str):
        data = self.QuizAnswerInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        policy.entry_check(rater=request.user, dataset=dataset, kind=_kind(kind))
        answered = quiz.quiz_answer(rater=request.user, dataset=dataset, kind=_kind(kind), **data.validated_data)
        body = self.QuizAnsweredSerializer(answered).data
        return Response(body, status=status.HTTP_200_OK if answered.replayed else status.HTTP_201_CREATED)


class QuizPoolSerializer(serializers.Serializer):
    kind = serializers.CharField()
    size = serializers.IntegerField(help_text="Active gold pairs in the kind's quiz.")
    attempt_length = serializers.IntegerField(help_text="Questions per attempt now; 0: the quiz cannot run.")
    needed = serializers.IntegerField(help_text="The smallest pool that runs attempts of quiz_length (five times it).")
    too_small = serializers.BooleanField(help_text="Fewer than `needed`: the quiz cannot run.")
    message = serializers.CharField(source="describe")


class QuizSettingsSerializer(serializers.Serializer):
    quiz_length = serializers.IntegerField(min_value=1, max_value=MAX_QUIZ_LENGTH, help_text="Questions per attempt.")
    quiz_max_error = serializers.FloatField(
        max_value=queue.SCORE_MAX, help_text="An attempt passes when its mean absolute error is strictly below this."
    )
    pools = QuizPoolSerializer(many=True, read_only=True, help_text="Each kind that has quiz pairs, by kind.")

    def validate_quiz_max_error(self, value: float) -> float:
        if value <= 0:
            raise serializers.ValidationError("must be above 0: an attempt passes when its mean error is below it")
        return value


class QuizSettingsApi(APIView):
    """A dataset's quiz settings (admins): questions per attempt and the pass threshold,
    and each kind's pool, saying when one is too small to run the quiz (fewer than five
    times the quiz length). PUT sets either setting or both."""

    permission_classes = [IsAdmin]

    @extend_schema(responses={200: QuizSettingsSerializer, 404: error_response("No such dataset.")})
    def get(self, request, dataset: str):
        return Response(_quiz_settings_body(selectors.dataset_get(name=dataset).pk))

    @extend_schema(
        request=QuizSettingsSerializer,
        responses={200: QuizSettingsSerializer, 400: error_response("Bad value."), 404: error_response("No dataset.")},
    )
    def put(self, request, dataset: str):
        found = selectors.dataset_get(name=dataset)
        data = QuizSettingsSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        quiz.quiz_settings_set(dataset_id=found.pk, **data.validated_data)
        return Response(_quiz_settings_body(found.pk))


def _quiz_settings_body(dataset_id: int) -> dict:
    quiz_length, quiz_max_error = quiz.quiz_settings(dataset_id)
    pools = quiz.quiz_pools(dataset_id=dataset_id)
    return QuizSettingsSerializer({"quiz_length": quiz_length, "quiz_max_error": quiz_max_error, "pools": pools}).data
