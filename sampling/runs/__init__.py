"""A sampling batch's run: in one process (``batch``) or as a Celery chord of shards on
many workers (``chord``), an uploaded pair list read as a stream (``upload``), and their
tasks (``tasks``).

Imports: the sampling services' reads, methods and search, ``annotation.runs``,
``annotation.serving`` (writing the pairs) and below.
"""
