import logging

from celery import shared_task

from annotation.errors import NotFound
from sampling.batch_run import sampling_batch_run, sampling_batches_fail_orphaned

logger = logging.getLogger(__name__)


@shared_task(acks_late=True)
def run_sampling_batch(batch_id: int) -> None:
    """Run a sampling batch by id. Idempotent: a batch that is not pending is left as it is
    (one marked running whose worker died is marked failed)."""
    try:
        sampling_batch_run(batch_id=batch_id)
    except NotFound:
        logger.warning("sampling batch #%s no longer exists; nothing to run", batch_id)


@shared_task(acks_late=True)
def fail_orphaned_batches() -> list[int]:
    """Beat: mark failed the running batches whose worker died (pages and the API show
    them as stale meanwhile; starting one again marks it failed first). Idempotent."""
    return sampling_batches_fail_orphaned()
