"""The qualification quiz API (raters): load the quiz of a task kind and answer its
questions one by one; each answer is told its reference level and explanation."""

import dataclasses

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import queue, quiz
from annotation.apis.fields import StrictFloatField, StrictIntegerField
from annotation.apis.rating import ItemSerializer
from annotation.errors import NotFound
from annotation.models import TaskKind
from annotation.rating import policy
from annotation.roles import IsRater
from config.openapi import error_response


def _kind(kind: str) -> str:
    """The task kind a URL names (any case); an unknown one is a path that does not exist."""
    if kind.upper() not in TaskKind.values:
        raise NotFound(f"no task kind {kind!r}; use one of {', '.join(TaskKind.values)}")
    return kind.upper()


class QuizResultSerializer(serializers.Serializer):
    mean_error = serializers.FloatField(help_text="Mean absolute error of the attempt's answers (0-5 scale).")
    threshold = serializers.FloatField(help_text="Passed when mean_error is below this.")
    passed = serializers.BooleanField()


class QuizStateSerializer(serializers.Serializer):
    kind = serializers.CharField()
    attempt = serializers.IntegerField(help_text="1 or 2.")
    attempts_allowed = serializers.IntegerField()
    attempts_left = serializers.IntegerField(help_text="Attempts not yet begun, plus this one while it is open.")
    answered = serializers.IntegerField()
    total = serializers.IntegerField()
    gold_pair_id = serializers.IntegerField(allow_null=True, help_text="The question to answer; null when finished.")
    items = serializers.SerializerMethodField()
    result = QuizResultSerializer(allow_null=True, help_text="Set once the attempt is finished.")
    qualified = serializers.BooleanField(help_text="The rater may now rate this kind.")

    @extend_schema_field(ItemSerializer(many=True, allow_null=True))
    def get_items(self, state) -> list[dict] | None:
        return None if state.items is None else [dataclasses.asdict(item) for item in state.items]


class QuizStateApi(APIView):
    """Your place in the quiz of a task kind: the next question of your open attempt, or
    the result of the last one. The first call begins attempt 1; ``start`` begins your
    second attempt after a failed first (in another order)."""

    permission_classes = [IsRater]

    class QuizStateInputSerializer(serializers.Serializer):
        start = serializers.BooleanField(default=False, help_text="Begin the next attempt after a failed one.")

    @extend_schema(
        request=QuizStateInputSerializer,
        responses={
            200: QuizStateSerializer,
            403: error_response("Both attempts failed."),
            404: error_response("No quiz."),
        },
    )
    def post(self, request, dataset: str, kind: str):
        data = self.QuizStateInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        policy.entry_check(rater=request.user, dataset=dataset, kind=_kind(kind))
        state = quiz.quiz_state(rater=request.user, dataset=dataset, kind=_kind(kind), **data.validated_data)
        return Response(QuizStateSerializer(state).data)


class QuizAnswerApi(APIView):
    """Answer the current question of your open quiz attempt. 201 with the reference
    level, its explanation and your error; 200 when the same idempotency key was sent
    before; 409 when the question is not the one you were asked."""

    permission_classes = [IsRater]

    class QuizAnswerInputSerializer(serializers.Serializer):
        gold_pair_id = StrictIntegerField(min_value=1)
        score = StrictFloatField(min_value=queue.SCORE_MIN, max_value=queue.SCORE_MAX)
        time_on_item_ms = StrictIntegerField(min_value=0, max_value=queue.MAX_TIME_ON_ITEM_MS)
        time_to_first_move_ms = StrictIntegerField(min_value=0, allow_null=True)
        adjustments = StrictIntegerField(min_value=0, max_value=queue.MAX_ADJUSTMENTS)
        idempotency_key = serializers.CharField(max_length=queue.MAX_IDEMPOTENCY_KEY)

    class QuizFeedbackSerializer(serializers.Serializer):
        score = serializers.FloatField()
        reference_score = serializers.FloatField()
        reference_level = serializers.IntegerField(help_text="The scale level nearest the reference, 0-5.")
        explanation = serializers.CharField(allow_blank=True)
        error = serializers.FloatField()
        replayed = serializers.BooleanField()
        state = QuizStateSerializer()

    @extend_schema(
        request=QuizAnswerInputSerializer,
        responses={
            201: QuizFeedbackSerializer,
            200: QuizFeedbackSerializer,
            404: error_response("No such dataset or kind."),
            409: error_response("Not the question."),
        },
    )
    def post(self, request, dataset: str, kind: str):
        data = self.QuizAnswerInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        policy.entry_check(rater=request.user, dataset=dataset, kind=_kind(kind))
        feedback = quiz.quiz_answer(rater=request.user, dataset=dataset, kind=_kind(kind), **data.validated_data)
        body = self.QuizFeedbackSerializer(feedback).data
        return Response(body, status=status.HTTP_200_OK if feedback.replayed else status.HTTP_201_CREATED)
