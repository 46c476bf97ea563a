"""What mode the app runs in, and a start-up check that its services answer."""

import logging

from django.conf import settings
from django.db import connection

logger = logging.getLogger("config")


def autovacuum_warning(setting: str) -> str | None:
    """The start-up warning for PostgreSQL's ``autovacuum`` setting, or None when it is on.
    Without it nothing refreshes the statistics the rating cycle's prepared statements are
    planned with: tables planned while small are read whole as they grow (bench-queue's
    gold tables: a rater's progress took 905 us of PostgreSQL per item at 1,000 gold
    ratings, 333 us with fresh statistics), and dead rows are never cleared."""
    if setting == "on":
        return None
    return (
        f"PostgreSQL runs with autovacuum={setting}: the rating cycle's statements keep plans made "
        "for the tables' earlier sizes and dead rows pile up; turn autovacuum on (PostgreSQL's "
        "default) or run VACUUM ANALYZE on a schedule"
    )


def describe_mode() -> str:
    """One line for logs, the admin header and the start-up banner."""
    if settings.RUN_MODE == "embedded":
        return f"embedded mode: SQLite at {settings.DATABASES['default']['NAME']}, tasks run in-process"
    db = settings.DATABASES["default"]
    tasks = (
        "tasks run in-process"
        if settings.CELERY_TASK_ALWAYS_EAGER
        else "Celery broker " + _redact(settings.CELERY_BROKER_URL)
    )
    return f"services mode: PostgreSQL {db.get('HOST') or 'socket'}:{db.get('PORT') or 5432}/{db['NAME']}, {tasks}"


def _redact(url: str) -> str:
    if "@" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return url


def check_services() -> None:
    """Raise if the database or (in services mode) the broker does not answer.

    Called at web start-up so a misconfigured deployment fails at once instead of
    serving errors, and never falls back to the embedded mode.
    """
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT current_setting('autovacuum')")
            warning = autovacuum_warning(cursor.fetchone()[0])
            if warning:
                logger.warning(warning)
        else:
            cursor.execute("SELECT 1")
    # The check runs in a web process's main thread, which serves no request: left open,
    # its connection would sit idle for the process's life (a PostgreSQL backend per
    # web worker process, counted against max_connections).
    connection.close()
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        from config.celery import app

        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1)
