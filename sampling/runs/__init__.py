"""A sampling batch's run: in one process (``batch``) or as a Celery chord of shards on
many workers (``chord``), and their tasks (``tasks``).

Imports: the sampling services' reads, methods and search, ``annotation.runs``,
``annotation.serving`` (writing the pairs) and below.
"""
