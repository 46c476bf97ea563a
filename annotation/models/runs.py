"""Background runs: the status row every long job keeps (import/export jobs here,
sampling batches in ``sampling.models``). Claimed, advanced and failed only through
``annotation.runs``."""

from django.conf import settings
from django.db import models
from django.db.models import Q


class JobStatus(models.TextChoices):
    PENDING = "pending", "pending"
    RUNNING = "running", "running"
    SUCCEEDED = "succeeded", "succeeded"
    FAILED = "failed", "failed"


class BackgroundRun(models.Model):
    """Status, progress, message and runner of one background run: the admin pages, the
    API and the CLI all read a run's progress from its row."""

    status = models.CharField(max_length=20, choices=JobStatus.choices, default=JobStatus.PENDING)
    progress_done = models.BigIntegerField(default=0)
    progress_total = models.BigIntegerField(default=0)
    progress_message = models.CharField(max_length=255, blank=True)
    runner = models.CharField(
        max_length=255,
        blank=True,
        help_text="host:pid of the process running (or last running) it; see annotation.runs.",
    )
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


class Job(BackgroundRun):
    """An import or export job; ``params`` is its input, ``result`` what it produced."""

    class Kind(models.TextChoices):
        IMPORT_KARPATHY = "import_karpathy", "import Karpathy JSON"
        IMPORT_EMBEDDINGS = "import_embeddings", "import embeddings"
        EXPORT_DATASET = "export_dataset", "export dataset"

    kind = models.CharField(max_length=40, choices=Kind.choices)
    params = models.JSONField(default=dict, blank=True, help_text="The job's input, primitives only.")
    result = models.JSONField(default=dict, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(progress_done__gte=0) & Q(progress_total__gte=0), name="job_progress_nonnegative"
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} ({self.status})"
