"""Core: what every other package may lean on and nothing of the app's domains.

``sql`` (the PostgreSQL/portable switch, statements sent ahead, prepared statements),
``errors`` (the domain errors the API maps to status codes), ``inputs`` (input checks
shared by the API, forms and files), ``cxc`` (the CxC facts: kinds, the score scale),
``opaque_ids``, ``spreadsheet_csv`` (the one CSV writer, formula-safe), ``text_lines``
(uploaded text read in bounded lines), ``roles`` (the role names and the one role check),
``progress`` (the progress callback's type) and ``task_queue`` (queueing a Celery task by
its name).

Imports: nothing of the project (Django, DRF and Celery only).
"""
