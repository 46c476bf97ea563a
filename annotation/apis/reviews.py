"""The crowd's review of retrieval failures: queue an explained evaluation's failures
(researchers), read the review's figures and file; claim and submit a review (raters),
keep its lease, skip it. A review's ids are of their own kind ("review"), so the rating
endpoints, which store no marks, never take one."""

from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.apis.fields import datetime_text, rater_ids
from annotation.apis.rating import SubmissionFieldsSerializer
from annotation.core.roles import IsRater, IsResearcher
from annotation.evaluation.review import queueing, reviewing
from annotation.evaluation.review import report as review_reports
from annotation.evaluation.review.marks import MARKS
from annotation.rating import policy
from config.openapi import error_response


def review_assignment_answer(assignment) -> dict:
    """A claimed review: its id (kind "review"), the query, the expected (truth) and the
    retrieved image."""
    query, truth, retrieved = assignment.items
    return {
        "slot_id": str(rater_ids().encode("review", assignment.slot_id)),
        "dataset": assignment.dataset,
        "kind": assignment.kind,
        "lease_expires_at": datetime_text(assignment.lease_expires_at),
        "resumed": assignment.resumed,
        "query": query.text,
        "expected": {"url": truth.url, "width": truth.width, "height": truth.height},
        "retrieved": {"url": retrieved.url, "width": retrieved.width, "height": retrieved.height},
    }


class EvaluationReviewApi(APIView):
    """POST: queue the failures of an explained evaluation for review by ``raters``
    distinct raters each (201; 200 when they were queued before: nothing is added).
    GET: the review's figures per model (marks, Spearman of the human score against
    the concept metrics)."""

    permission_classes = [IsResearcher]

    class ReviewQueueInputSerializer(serializers.Serializer):
        raters = serializers.IntegerField(
            required=False,
            allow_null=True,
            default=None,
            min_value=1,
            max_value=queueing.MAX_RATERS,
            help_text=f"Distinct raters per failure; left out: {queueing.DEFAULT_RATERS}, or as queued before.",
        )

    @extend_schema(request=ReviewQueueInputSerializer, responses={201: dict, 200: dict, 400: error_response("")})
    def post(self, request, job_id: int):
        data = self.ReviewQueueInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        queued = queueing.review_queue(job_id=job_id, raters=data.validated_data["raters"], created_by=request.user)
        body = {
            "job": job_id,
            "created": queued.created,
            "failures": queued.failures,
            "pairs_new": queued.pairs_new,
            "raters_per_failure": queued.queue.ratings_per_pair,
            "batch": queued.queue.batch_id,
        }
        return Response(body, status=status.HTTP_201_CREATED if queued.created else status.HTTP_200_OK)

    @extend_schema(responses={200: dict})
    def get(self, request, job_id: int):
        return Response(review_reports.review_report(job_id=job_id))


class EvaluationReviewFileApi(APIView):
    """The review as CSV: one line per queued failure per model, its metrics, raters,
    mean human score, the share of its raters who ticked each mark and the marks that hold."""

    permission_classes = [IsResearcher]

    @extend_schema(responses={(200, "text/csv"): str})
    def get(self, request, job_id: int):
        response = HttpResponse(review_reports.review_csv(job_id=job_id), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="review-{job_id}.csv"'
        return response


class ReviewClaimApi(APIView):
    """Claim the next failure to review (raters qualified for REV): the query, the expected
    image and the retrieved one; 204 when none is left for you."""

    permission_classes = [IsRater]

    @extend_schema(request=None, responses={200: dict, 204: None})
    def post(self, request, dataset: str):
        assignment = reviewing.review_claim(rater=request.user, dataset=dataset)
        if assignment is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(review_assignment_answer(assignment))


class ReviewSubmitApi(APIView):
    """Submit your review of the failure you hold: the score (0-5, how close the retrieved
    image comes to the expected one given the query) and the marks. 201 when stored, 200
    for a repeat of the same idempotency key."""

    permission_classes = [IsRater]

    class ReviewSubmitInputSerializer(SubmissionFieldsSerializer):
        marks = serializers.ListField(
            child=serializers.CharField(max_length=40),
            allow_empty=True,
            max_length=len(MARKS),
            help_text=f"The marks ticked, of: {', '.join(MARKS)}; fair_alternative only alone.",
        )

    @extend_schema(request=ReviewSubmitInputSerializer, responses={201: dict, 200: dict, 400: error_response("")})
    def post(self, request, dataset: str, slot_id: int):
        data = self.ReviewSubmitInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        result = reviewing.review_submit(rater=request.user, dataset=dataset, slot_id=slot_id, **data.validated_data)
        ids = rater_ids()
        body = {
            "rating_id": str(ids.encode("rating", result.rating_id)),
            "slot_id": str(ids.encode("review", result.slot_id)),
            "created_at": datetime_text(result.created_at),
            "replayed": result.replayed,
        }
        return Response(body, status=status.HTTP_200_OK if result.replayed else status.HTTP_201_CREATED)


class ReviewHeartbeatApi(APIView):
    """Keep the lease on the failure you are reviewing."""

    permission_classes = [IsRater]

    @extend_schema(request=None, responses={200: dict})
    def post(self, request, dataset: str, slot_id: int):
        expires = policy.slot_heartbeat(rater=request.user, dataset=dataset, slot_id=slot_id)
        return Response({"lease_expires_at": datetime_text(expires)})


class ReviewSkipApi(APIView):
    """Pass on the failure you hold: another rater reviews it; you are not served it again."""

    permission_classes = [IsRater]

    @extend_schema(request=None, responses={200: dict})
    def post(self, request, dataset: str, slot_id: int):
        policy.slot_skip(rater=request.user, dataset=dataset, slot_id=slot_id)
        return Response({"skipped": True})
