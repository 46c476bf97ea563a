"""Celery tasks of sampling batches and their chord; names kept as ``sampling.tasks.*``."""

import logging

from celery import shared_task

from annotation.core.errors import NotFound
from sampling.runs.batch import sampling_batch_merge, sampling_batch_run, sampling_batches_fail_orphaned
from sampling.runs.chord import RETRY, shard_work, stage_next

logger = logging.getLogger(__name__)


@shared_task(name="sampling.tasks.run_sampling_batch", acks_late=True)
def run_sampling_batch(batch_id: int) -> None:
    """Run a sampling batch by id. Idempotent: a batch that is not pending is left as it is
    (one marked running whose worker died is marked failed)."""
    try:
        sampling_batch_run(batch_id=batch_id)
    except NotFound:
        logger.warning("sampling batch #%s no longer exists; nothing to run", batch_id)


@shared_task(name="sampling.tasks.fail_orphaned_batches", acks_late=True)
def fail_orphaned_batches() -> list[int]:
    """Beat: mark failed the running batches whose worker died (pages and the API show
    them as stale meanwhile; starting one again marks it failed first). Idempotent."""
    return sampling_batches_fail_orphaned()


# The shards of a chord keep a result: the chord counts them in the result backend.
@shared_task(
    bind=True,
    name="sampling.tasks.run_sampling_shard",
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=False,
    max_retries=None,
)
def run_sampling_shard(self, shard_id: int) -> str:
    """One shard of a batch's search (see sampling.runs.chord). A worker that dies in it
    returns it to the queue; an error retries it until the attempt limit fails the batch."""
    outcome = shard_work(shard_id)
    if outcome == RETRY:
        raise self.retry(countdown=1)
    return outcome


@shared_task(name="sampling.tasks.next_sampling_stage", acks_late=True)
def next_sampling_stage(batch_id: int, stage: str, token: str) -> bool:
    """A chord's callback: queue the next stage of shards of the batch's run ``token``."""
    return stage_next(batch_id, stage, token)


# A merge whose worker dies is not run again (it could die the same way for ever): the
# batch then stalls and the orphan sweep fails it after SAMPLING_CHORD_STALL_SECONDS.
@shared_task(name="sampling.tasks.merge_sampling_batch", acks_late=True, reject_on_worker_lost=False)
def merge_sampling_batch(batch_id: int, token: str) -> None:
    """The last chord's callback: merge the shards, select and write the batch's pairs."""
    sampling_batch_merge(batch_id=batch_id, token=token)
