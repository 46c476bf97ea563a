"""Queue a Celery task by its registered name.

A service that starts background work names the task instead of importing the tasks
module that calls the service back, so no service imports a tasks module and no import
circle hides behind an import inside a function. The names are the tasks' public,
stable names (``annotation.tasks.run_export_job``): a message queued before an upgrade
still finds its task after it, wherever the module that defines it moved.

Every tasks module is imported when Django starts (``settings.CELERY_IMPORTS``, from
``annotation.apps``), so a name is always registered in the process that queues it; in the
embedded mode (``CELERY_TASK_ALWAYS_EAGER``) the task then runs in-process. A name that is
not registered is an error, never a message sent blind to a broker.
"""

from __future__ import annotations

from celery import current_app
from celery.canvas import Signature
from django.db import transaction


class UnknownTask(LookupError):
    """No task is registered under the name asked for."""


def task_signature(name: str, *args, immutable: bool = True) -> Signature:
    """The signature of the task registered as ``name`` with ``args``; immutable by
    default (a chord's callback does not receive its header's results)."""
    if name not in current_app.tasks:
        raise UnknownTask(f"no Celery task is registered as {name!r}; is its module in settings.CELERY_IMPORTS?")
    return current_app.tasks[name].signature(args, immutable=immutable)


def task_queue(name: str, *args) -> None:
    """Queue the task registered as ``name`` with ``args`` now."""
    task_signature(name, *args).delay()


def task_queue_on_commit(name: str, *args) -> None:
    """Queue the task registered as ``name`` with ``args`` once the current transaction
    commits (at once outside one), so a worker never reads a row not yet committed."""
    signature = task_signature(name, *args)
    transaction.on_commit(signature.delay)
