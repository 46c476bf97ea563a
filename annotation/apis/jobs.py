"""Background job status (admins)."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.apis.fields import StaleRunField
from annotation.core.roles import IsAdmin
from annotation.jobs.dispatch import JOB_RUNS
from annotation.models import Job
from annotation.runs import selectors as run_selectors


class JobSerializer(serializers.ModelSerializer):
    stale = StaleRunField(JOB_RUNS)

    class Meta:
        model = Job
        fields = [
            "id",
            "kind",
            "status",
            "params",
            "result",
            "error",
            "progress_done",
            "progress_total",
            "progress_message",
            "stale",
            "upload_state",
            "upload_removed_at",
            "created_at",
            "started_at",
            "finished_at",
        ]


class JobDetailApi(APIView):
    permission_classes = [IsAdmin]

    @extend_schema(responses=JobSerializer)
    def get(self, request, job_id: int):
        return Response(JobSerializer(run_selectors.job_get(job_id=job_id)).data)
