"""Background runs: the status row every long job keeps (import/export jobs here,
sampling batches in ``sampling.models``). Claimed, advanced and failed only through
``annotation.runs.lifecycle``."""

from django.conf import settings
from django.db import models
from django.db.models import Q


class JobStatus(models.TextChoices):
    PENDING = "pending", "pending"
    RUNNING = "running", "running"
    SUCCEEDED = "succeeded", "succeeded"
    FAILED = "failed", "failed"


class UploadState(models.TextChoices):
    NONE = "none", "none: the run reads no uploaded file"
    STORED = "stored", "stored under DATA_DIR/uploads"
    REMOVED = "removed", "removed (the run succeeded, or failed UPLOAD_KEEP_FAILED_DAYS ago)"


def upload_state_constraints(prefix: str) -> list[models.CheckConstraint]:
    """A run's upload state is one of UploadState, and removed exactly when it has a time."""
    return [
        models.CheckConstraint(condition=Q(upload_state__in=UploadState.values), name=f"{prefix}_upload_state_valid"),
        models.CheckConstraint(
            condition=Q(upload_state=UploadState.REMOVED, upload_removed_at__isnull=False)
            | (~Q(upload_state=UploadState.REMOVED) & Q(upload_removed_at__isnull=True)),
            name=f"{prefix}_upload_removed_at_iff_removed",
        ),
    ]


class BackgroundRun(models.Model):
    """Status, progress, message and runner of one background run: the admin pages, the
    API and the CLI all read a run's progress from its row.

    A run may read files uploaded for it (``annotation.catalog.uploads.upload_paths``): they are removed when it
    succeeds, or UPLOAD_KEEP_FAILED_DAYS after it failed (``annotation.catalog.upload_cleanup``).
    """

    status = models.CharField(max_length=20, choices=JobStatus.choices, default=JobStatus.PENDING)
    progress_done = models.BigIntegerField(default=0)
    progress_total = models.BigIntegerField(default=0)
    progress_message = models.CharField(max_length=255, blank=True)
    runner = models.CharField(
        max_length=255,
        blank=True,
        help_text="host:pid of the process running (or last running) it; see annotation.runs.lifecycle.",
    )
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    upload_state = models.CharField(
        max_length=10,
        choices=UploadState.choices,
        default=UploadState.NONE,
        db_default=UploadState.NONE,
        help_text="The files uploaded for this run: none, stored, or removed once it ended.",
    )
    upload_removed_at = models.DateTimeField(null=True, blank=True, help_text="When its uploaded files were removed.")

    class Meta:
        abstract = True

    def input_paths(self) -> list[str]:
        """The files this run reads, as its parameters name them: stored uploads or files a
        CLI user named (``annotation.catalog.uploads.upload_paths`` keeps the uploads)."""
        raise NotImplementedError(f"{type(self).__name__} must say which uploaded files it reads")


class Job(BackgroundRun):
    """An import, export or evaluation job; ``params`` is its input, ``result`` what it produced."""

    class Kind(models.TextChoices):
        IMPORT_KARPATHY = "import_karpathy", "import Karpathy JSON"
        IMPORT_EMBEDDINGS = "import_embeddings", "import embeddings"
        IMPORT_OBJECTS = "import_objects", "import object annotations"
        EXPORT_DATASET = "export_dataset", "export dataset"
        EVALUATE = "evaluate", "evaluate models"

    kind = models.CharField(max_length=40, choices=Kind.choices)
    params = models.JSONField(default=dict, blank=True, help_text="The job's input, primitives only.")
    result = models.JSONField(default=dict, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(progress_done__gte=0) & Q(progress_total__gte=0), name="job_progress_nonnegative"
            ),
            *upload_state_constraints("job"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} ({self.status})"

    def input_paths(self) -> list[str]:
        keys = JOB_UPLOAD_PARAMS.get(self.kind, ())
        return [self.params[key] for key in keys if self.params.get(key)]


# The params of each job kind that name an input file (an upload, or a CLI user's file).
JOB_UPLOAD_PARAMS = {
    Job.Kind.IMPORT_KARPATHY: ("path",),
    Job.Kind.IMPORT_EMBEDDINGS: ("vectors_path", "ids_path"),
    Job.Kind.IMPORT_OBJECTS: ("path",),
}
