"""Celery application. Broker and eager mode come from Django settings (see config/settings.py)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("cxc_annotate")
app.config_from_object("django.conf:settings", namespace="CELERY")
# The task modules are listed in settings.CELERY_IMPORTS (a worker imports them at start).
