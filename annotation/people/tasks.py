"""Celery tasks of accounts (beat); names kept as ``annotation.tasks.*``."""

from celery import shared_task

from annotation.people.accounts import tokens_prune_expired


@shared_task(name="annotation.tasks.prune_expired_tokens", acks_late=True)
def prune_expired_tokens() -> int:
    """Beat: delete expired API tokens. Idempotent."""
    return tokens_prune_expired()
