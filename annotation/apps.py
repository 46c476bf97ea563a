"""The annotation app: datasets, pairs, the rating queue, quality control, people, the
dashboard, exports and evaluations (see the packages' own docstrings)."""

from importlib import import_module

from django.apps import AppConfig
from django.conf import settings


class AnnotationConfig(AppConfig):
    name = "annotation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Services queue tasks by name (annotation.core.task_queue): every process registers
        # them all, as a worker does, so a name queued here is known here (the embedded
        # mode runs it in-process).
        for module in settings.CELERY_IMPORTS:
            import_module(module)
