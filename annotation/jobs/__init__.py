"""Import, export and evaluation jobs: starting them and running them from their row.

``dispatch`` (which service each kind of job runs; the starts that fail dead jobs first and
queue the new one once its row is committed) and ``tasks`` (their Celery tasks).

Imports: the catalog, export and evaluation services and ``annotation.runs``. Only entry
points (the API, the admin, the commands) import it.
"""
