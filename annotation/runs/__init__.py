"""The lifecycle of background runs, jobs and sampling batches alike.

``lifecycle`` (claim a pending run once, report progress, succeed, fail, find the runs
whose runner died), ``jobs`` (the job row) and ``selectors`` (reads of jobs).

Imports: ``annotation.catalog`` (a run's uploads), ``annotation.core``, ``annotation.models``.
"""
