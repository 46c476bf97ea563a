"""Celery tasks of the serving mechanism's upkeep (beat); names kept as ``annotation.tasks.*``."""

from celery import shared_task

from annotation.serving.upkeep import leases_release_expired, queue_counters_rebuild, rater_tallies_prune


@shared_task(name="annotation.tasks.release_expired_leases", acks_late=True)
def release_expired_leases() -> int:
    """Beat: return expired leases to the open queue (tidy-up only; claims take expired
    leases themselves). Idempotent."""
    return leases_release_expired()


@shared_task(name="annotation.tasks.recount_open_pairs", acks_late=True)
def recount_open_pairs() -> int:
    """Beat: recount the open-pairs counters from the pairs. Idempotent."""
    return queue_counters_rebuild()


@shared_task(name="annotation.tasks.prune_rater_tallies", acks_late=True)
def prune_rater_tallies() -> int:
    """Beat: delete the raters' tallies of quarter hours no progress reads. Idempotent."""
    return rater_tallies_prune()
