"""What the admin shows of every background run (jobs, sampling batches): status with a
stale warning, a progress bar, the message and the error. Read only: a run whose
process died shows as stale here; the beat task or the next start marks it failed."""

from django.contrib import admin
from django.utils.html import format_html

from annotation.models import BackgroundRun
from annotation.runs.lifecycle import RunKind, run_is_stale


class RunAdminMixin:
    """For a ModelAdmin of a BackgroundRun model; set ``run_kind``."""

    run_kind: RunKind
    run_columns = ("run_status", "progress")

    @admin.display(description="status", ordering="status")
    def run_status(self, run: BackgroundRun) -> str:
        if run_is_stale(self.run_kind, run):
            return format_html(
                '{} <strong title="{}">(stale: its process is gone)</strong>',
                run.status,
                "The beat task or the next start marks it failed.",
            )
        if run.error:
            return format_html('{}<br><small title="{}">{}</small>', run.status, run.error, _short(run.error, 120))
        return run.status

    @admin.display(description="progress")
    def progress(self, run: BackgroundRun) -> str:
        if not run.progress_total:
            return run.progress_message or "-"
        return format_html(
            '<progress value="{}" max="{}"></progress> {}/{}<br><small>{}</small>',
            run.progress_done,
            run.progress_total,
            run.progress_done,
            run.progress_total,
            run.progress_message,
        )


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
