"""Celery application. Broker and eager mode come from Django settings (see config/settings.py)."""

import os

from celery import Celery, signals

from config.metrics import TASK_FAILURES, clean_files, set_role

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("cxc_annotate")
app.config_from_object("django.conf:settings", namespace="CELERY")
# The task modules are listed in settings.CELERY_IMPORTS (a worker imports them at start).


@signals.worker_init.connect
def _count_as_worker(**_):
    """The worker's main process, before its pool starts: count as the worker, from zero
    (the folder's web files are the web server's)."""
    set_role("worker")
    folder = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if folder:
        clean_files(folder, "worker")


@signals.task_failure.connect
def _count_task_failure(sender=None, **_):
    """A task that raised (in the process that ran it): cxc_celery_task_failures_total."""
    TASK_FAILURES.labels(task=getattr(sender, "name", "unknown")).inc()
