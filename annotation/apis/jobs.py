"""Background job status (admins)."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import selectors
from annotation.jobs import job_is_stale
from annotation.models import Job
from annotation.roles import IsAdmin


class JobSerializer(serializers.ModelSerializer):
    stale = serializers.SerializerMethodField(
        help_text="Marked running, but the process running it is gone (the beat task marks it failed)."
    )

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
            "created_at",
            "started_at",
            "finished_at",
        ]

    def get_stale(self, job: Job) -> bool:
        return job_is_stale(job)


class JobDetailApi(APIView):
    permission_classes = [IsAdmin]

    @extend_schema(responses=JobSerializer)
    def get(self, request, job_id: int):
        return Response(JobSerializer(selectors.job_get(job_id=job_id)).data)
