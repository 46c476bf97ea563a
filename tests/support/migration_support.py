"""Data migrations tested on the database: migrate to a state, make rows with the models as
they were then, migrate on, check. A test doing this runs with transaction=True and ends
with ``migrate_to_latest()`` so the next test finds the schema it expects."""

from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate_to(targets: list[tuple[str, str]]):
    """Migrate (forwards or backwards) to ``targets``; returns the apps (historical models)
    of that state."""
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def migrate_to_latest() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
