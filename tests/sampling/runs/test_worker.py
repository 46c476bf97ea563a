"""Sampling batches on a real Celery worker, started by the test against Redis and the test database."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest
from django.db import transaction

from annotation.models import Pair, RatingSlot
from sampling.models import SamplingBatch
from sampling.runs.batch import sampling_batch_run, sampling_batches_fail_orphaned
from sampling.services import sampling_batch_create, sampling_batch_start
from tests.sampling.conftest import pair_keys, random_unit
from tests.support.sampling_worker import watch
from tests.support.worker_support import start_worker, worker_env

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    # Every worker here drains the one test Redis (--purge): with parallel test workers
    # (scripts/test runs pytest-xdist), these tests run on one of them, one at a time.
    pytest.mark.xdist_group("celery-redis"),
]

N_IMAGES = 600
METHODS = {"i2i_csim": None, "c2c_isim": None, "c2c_cocaption": None, "c2i_original": None}


@pytest.fixture
def celery_app():
    from config.celery import app

    # The test process queues for real; the worker runs the task.
    before = app.conf.task_always_eager
    app.conf.task_always_eager = False
    yield app
    app.conf.task_always_eager = before


@pytest.fixture
def worker(settings, tmp_path, celery_app):
    """A `celery -A config worker` process on the test's Redis and test database."""
    redis_url = os.environ["TEST_REDIS_URL"]
    celery_app.conf.broker_url = redis_url
    env = worker_env(settings, redis_url)
    process, _ = start_worker(celery_app, tmp_path, env, prefix="sampling-test", pool=["--pool=solo"], purge=True)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)


def build(make_split, seed: int = 3):
    rng = np.random.default_rng(seed)
    return make_split(
        n_images=N_IMAGES,
        captions_per_image=5,
        image_spaces={"img": random_unit(rng, N_IMAGES, 16)},
        caption_spaces={"txt": random_unit(rng, N_IMAGES * 5, 16)},
    )


def start(built) -> SamplingBatch:
    with transaction.atomic():
        batch = sampling_batch_create(
            dataset_name=built.dataset.name, split_name="val", methods=METHODS, k=5, seed=11, ratings_per_pair=5
        )
        sampling_batch_start(batch=batch)
    return batch


def test_a_worker_runs_a_batch_to_completion_with_progress_updates(make_split, worker):
    built = build(make_split)
    batch = start(built)
    seen = watch(batch, until=lambda state: state[0] in ("succeeded", "failed"))
    batch.refresh_from_db()
    assert batch.status == "succeeded", batch.error
    running = [state for state in seen if state[0] == "running"]
    steps = {"starting", "loading the split", "searching caption space txt", "searching image space img"}
    steps |= {f"selecting {method}" for method in METHODS}
    # Short steps may pass between two looks; the long write is always seen.
    assert len(running) >= 2
    assert all(message in steps or message.startswith("writing up to") for _, _, _, message in running)
    assert running[-1][3] == f"writing up to {sum(batch.pairs_per_method.values())} pairs and " + (
        f"{5 * sum(batch.pairs_per_method.values())} rating slots"
    )
    done = [state[1] for state in running]
    assert done == sorted(done) and 0 < max(done) < batch.progress_total
    assert seen[-1] == ("succeeded", batch.progress_total, batch.progress_total, batch.progress_message)
    assert batch.runner.endswith(f":{worker.pid}")
    total = sum(batch.pairs_per_method.values())
    assert batch.pairs_per_method["c2c_cocaption"] == N_IMAGES * 5  # a cycle through each group of five
    assert batch.pairs_per_method["c2i_original"] == N_IMAGES * 5
    assert Pair.objects.filter(batch=batch).count() == total
    assert RatingSlot.objects.filter(pair__batch=batch).count() == total * 5


def test_a_worker_killed_mid_batch_leaves_no_pairs_and_the_batch_restarts_to_the_same_result(make_split, worker):
    built = build(make_split)
    batch = start(built)
    watch(batch, until=lambda state: state[3].startswith("writing up to"))
    worker.send_signal(signal.SIGKILL)
    worker.wait(timeout=30)

    assert Pair.objects.filter(batch=batch).count() == 0
    batch.refresh_from_db()
    assert batch.status == "running"
    # The database ends the dead worker's session (rolling back its writes and dropping its
    # runner lock) once it notices the connection is gone.
    deadline = time.monotonic() + 60
    while not sampling_batches_fail_orphaned():
        assert time.monotonic() < deadline, "the dead worker's batch was never recognised as orphaned"
        time.sleep(0.1)
    batch.refresh_from_db()
    assert batch.status == "failed"
    assert "stopped before it finished; no pairs were written" in batch.error
    assert Pair.objects.filter(batch=batch).count() == 0
    assert RatingSlot.objects.filter(pair__batch=batch).count() == 0

    sampling_batch_start(batch=batch, enqueue=False)
    batch = sampling_batch_run(batch_id=batch.pk)
    assert batch.status == "succeeded", batch.error
    twin = build(make_split)
    reference = sampling_batch_run(
        batch_id=sampling_batch_create(
            dataset_name=twin.dataset.name, split_name="val", methods=METHODS, k=5, seed=11, ratings_per_pair=5
        ).pk
    )
    assert pair_keys(batch) == pair_keys(reference)
