"""A batch's search as a Celery chord of shards, on two real prefork workers against Redis
and the test database: the same pairs as one worker and as the embedded mode, a worker
killed mid-shard, a shard that keeps failing, and a chord that stalls."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import time
from datetime import timedelta

import numpy as np
import pytest
from django.core.management import call_command
from django.db import transaction
from django.utils import timezone

from annotation.models import Pair
from sampling.models import SamplingBatch, SamplingShard
from sampling.runs.batch import sampling_batch_run, sampling_batches_fail_orphaned
from sampling.runs.chord import run_folder
from sampling.services import sampling_batch_create, sampling_batch_start
from tests.sampling.conftest import pair_keys, random_unit
from tests.support.runner_support import poll
from tests.support.sampling_worker import watch
from tests.support.worker_support import start_worker, worker_env

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.xdist_group("celery-redis"),
]

N_IMAGES = 900
METHODS = {"i2i_csim": None, "c2c_isim": None, "c2c_cocaption": None}
# IVF from 100 rows on, a chord from 300, shards of 60 rows: 15 shards per stage and space.
INDEX = {"kind": "ivf", "ivf_nlist": 20, "ivf_nprobe": 3, "chord_min_rows": 300, "shard_rows": 60}
SHARDS = 2 * 2 * 15
# The same cut with IVF-PQ: 24-d rows as 3-byte codes, 4 x 5 candidates rescored.
PQ_INDEX = {**INDEX, "kind": "ivfpq", "ivfpq_refine": 4}


@pytest.fixture
def index_settings():
    """SAMPLING_INDEX for this process and the workers (a test parametrizes it to change it)."""
    return INDEX


@pytest.fixture
def celery_app(settings, index_settings):
    from config.celery import app

    before = app.conf.task_always_eager, app.conf.broker_url
    app.conf.task_always_eager = False
    app.conf.broker_url = os.environ["TEST_REDIS_URL"]
    settings.SAMPLING_INDEX = index_settings
    yield app
    app.conf.task_always_eager, app.conf.broker_url = before


@pytest.fixture
def workers(settings, tmp_path, celery_app, index_settings):
    """start(n): n more `celery worker` processes (prefork, one pool process each)."""
    env = worker_env(settings, os.environ["TEST_REDIS_URL"], SAMPLING_INDEX=json.dumps(index_settings))
    started: list[subprocess.Popen] = []

    def start(n: int) -> list[subprocess.Popen]:
        pool = ["--pool=prefork", "--concurrency=1"]
        new = [
            start_worker(celery_app, tmp_path, env, prefix="chord-test", pool=pool, purge=not started and i == 0)[0]
            for i in range(n)
        ]
        started.extend(new)
        return new

    yield start
    for process in started:
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)


def build(make_split, seed: int = 5):
    rng = np.random.default_rng(seed)
    return make_split(
        n_images=N_IMAGES,
        captions_per_image=2,
        image_spaces={"img": random_unit(rng, N_IMAGES, 24)},
        caption_spaces={"txt": random_unit(rng, N_IMAGES * 2, 24)},
    )


def create(built) -> SamplingBatch:
    return sampling_batch_create(
        dataset_name=built.dataset.name, split_name="val", methods=METHODS, k=4, seed=17, ratings_per_pair=3
    )


def start(built) -> SamplingBatch:
    with transaction.atomic():
        batch = create(built)
        sampling_batch_start(batch=batch)
    return batch


def finished(state) -> bool:
    return state[0] in ("succeeded", "failed")


def embedded_pairs(make_split, settings) -> set:
    """The same batch on a twin dataset, run in this process (the embedded mode)."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    batch = sampling_batch_run(batch_id=create(build(make_split)).pk)
    assert batch.status == "succeeded", batch.error
    assert "chord" not in batch.stats
    return pair_keys(batch)


def test_two_workers_one_worker_and_the_embedded_mode_give_the_same_pairs(make_split, workers, settings):
    first, _ = workers(2)
    two = start(build(make_split))
    seen = watch(two, until=finished)
    two.refresh_from_db()
    assert two.status == "succeeded", two.error
    # Progress counted shards as they finished, and the batch recorded its chord and settings.
    counted = [state for state in seen if state[3].startswith("searching in a chord:")]
    assert counted and all(state[2] == SHARDS + 2 for state in counted)
    assert two.stats["chord"]["mode"] == "chord"
    assert two.stats["chord"]["assign"] == {**two.stats["chord"]["assign"], "shards": 30, "finished": 30}
    assert two.stats["chord"]["search"]["finished"] == 30
    assert two.stats["index_config"]["shard_rows"] == 60 and two.stats["index"] == {"img": "ivf", "txt": "ivf"}
    pools = set(SamplingShard.objects.filter(batch=two).values_list("worker", flat=True))
    assert len(pools) == 2, f"both workers should have taken shards, saw {pools}"
    # The merge removes the run folder once the batch's pairs are committed.
    assert poll(lambda: [True] if not run_folder(two).exists() else [])
    out = io.StringIO()
    call_command("sample", status=two.pk, stdout=out)
    assert "assign shards: 30 of 30 done" in out.getvalue() and "search shards: 30 of 30 done" in out.getvalue()

    # One worker: stop the other.
    first.send_signal(signal.SIGTERM)
    first.wait(timeout=60)
    one_worker = start(build(make_split))
    one_worker_result = watch(one_worker, until=finished)
    one_worker.refresh_from_db()
    assert one_worker.status == "succeeded", (one_worker.error, one_worker_result[-3:])
    assert len(set(SamplingShard.objects.filter(batch=one_worker).values_list("worker", flat=True))) == 1

    assert pair_keys(two) == pair_keys(one_worker) == embedded_pairs(make_split, settings)
    assert Pair.objects.filter(batch=two).count() > 0


@pytest.mark.parametrize("index_settings", [PQ_INDEX])
def test_an_ivfpq_batch_on_two_workers_gives_the_embedded_modes_pairs(make_split, workers, settings, index_settings):
    workers(2)
    built = build(make_split)
    batch = start(built)
    watch(batch, until=finished)
    batch.refresh_from_db()
    assert batch.status == "succeeded", batch.error
    assert batch.stats["index"] == {"img": "ivfpq", "txt": "ivfpq"}
    assert batch.stats["index_config"]["ivfpq_refine"] == 4
    assert [made["trained"] for made in batch.stats["ivfpq_codebooks"].values()] == [True, True]
    assert batch.stats["chord"]["assign"]["finished"] == batch.stats["chord"]["search"]["finished"] == 30
    assert len(set(SamplingShard.objects.filter(batch=batch).values_list("worker", flat=True))) == 2
    # Every shard recorded its own peak memory, and the CLI shows the largest per stage.
    assert not SamplingShard.objects.filter(batch=batch, peak_rss_mib__isnull=True).exists()
    out = io.StringIO()
    call_command("sample", status=batch.pk, stdout=out)
    assert f"peak memory {batch.stats['chord']['search']['peak_rss_mib_max']:,} MiB" in out.getvalue()
    # The embedded mode (its twin dataset's spaces train their own codebooks) picks the same pairs.
    assert pair_keys(batch) == embedded_pairs(make_split, settings)
    # A second batch of the same spaces finds their codebooks stored beside them.
    settings.CELERY_TASK_ALWAYS_EAGER = False
    again = start(built)
    watch(again, until=finished)
    again.refresh_from_db()
    assert again.status == "succeeded", again.error
    files = {name: made["file"] for name, made in batch.stats["ivfpq_codebooks"].items()}
    assert {name: made["file"] for name, made in again.stats["ivfpq_codebooks"].items()} == files
    assert [made["trained"] for made in again.stats["ivfpq_codebooks"].values()] == [False, False]


def test_a_worker_killed_mid_shard_leaves_the_shard_to_run_again_with_the_same_pairs(make_split, workers, settings):
    workers(2)
    batch = start(build(make_split))
    killed = kill_mid_shard(batch)
    watch(batch, until=finished)
    batch.refresh_from_db()
    assert batch.status == "succeeded", batch.error
    shard = SamplingShard.objects.get(pk=killed)
    assert shard.attempts == 2 and shard.finished_at is not None
    assert batch.stats["chord"][shard.stage]["retried"] >= 1
    assert pair_keys(batch) == embedded_pairs(make_split, settings)


def kill_mid_shard(batch: SamplingBatch, timeout: float = 60) -> int:
    """Freeze the pool process of a shard that started and has not finished, check it is
    still unfinished, then kill the process. Returns the shard's id."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        running = (
            SamplingShard.objects.filter(batch=batch, started_at__isnull=False, finished_at__isnull=True)
            .values_list("pk", "worker")
            .first()
        )
        if running is None:
            continue
        shard_id, worker = running
        pid = int(worker.rpartition(":")[2])
        os.kill(pid, signal.SIGSTOP)
        # A statement the process sent before it froze still commits: give it time to.
        time.sleep(0.3)
        if SamplingShard.objects.filter(pk=shard_id, finished_at__isnull=True, worker=worker).exists():
            os.kill(pid, signal.SIGKILL)
            return shard_id
        os.kill(pid, signal.SIGCONT)
    pytest.fail("no shard was caught mid-way")


def test_a_shard_that_keeps_failing_fails_the_batch_with_nothing_written(make_split, workers):
    (worker, *_) = workers(1)
    batch = start(build(make_split))
    # Freeze the only pool process as the chord begins, take the vectors away, go on.
    deadline = time.monotonic() + 60
    while not SamplingShard.objects.filter(batch=batch).exists():
        assert time.monotonic() < deadline, "the chord never began"
    pool = [int(line) for line in subprocess.check_output(["pgrep", "-P", str(worker.pid)]).split()]
    for pid in pool:
        os.kill(pid, signal.SIGSTOP)
    batch.refresh_from_db()
    for vectors in run_folder(batch).glob("*/vectors.npy"):
        vectors.unlink()
    for pid in pool:
        os.kill(pid, signal.SIGCONT)
    watch(batch, until=finished)
    batch.refresh_from_db()
    assert batch.status == "failed"
    assert "shard" in batch.error and "failed on attempt 3" in batch.error and "FileNotFoundError" in batch.error
    assert "no pairs were written" in batch.error
    assert Pair.objects.filter(batch=batch).count() == 0
    assert poll(lambda: [True] if not run_folder(batch).exists() else [])
    assert SamplingShard.objects.filter(batch=batch, attempts=3, finished_at__isnull=True).exists()


@pytest.mark.parametrize(("idle_minutes", "failed"), [(5, False), (120, True)])
def test_a_chord_with_no_shard_moving_for_longer_than_the_stall_limit_fails(make_split, settings, idle_minutes, failed):
    settings.SAMPLING_CHORD_STALL_SECONDS = 3600
    built = build(make_split)
    batch = create(built)
    then = timezone.now() - timedelta(minutes=idle_minutes)
    SamplingBatch.objects.filter(pk=batch.pk).update(
        status="running", runner="chord:elsewhere:1", started_at=timezone.now() - timedelta(hours=3)
    )
    SamplingShard.objects.create(
        batch=batch, space="img", stage="search", number=0, row_start=0, row_stop=60, attempts=1, started_at=then
    )
    assert (batch.pk in sampling_batches_fail_orphaned()) is failed
    batch.refresh_from_db()
    assert batch.status == ("failed" if failed else "running")


def test_late_tasks_of_an_earlier_run_leave_a_restarted_batch_alone(make_split):
    from sampling.runs.batch import sampling_batch_merge
    from sampling.runs.chord import run_token, shard_work, stage_next

    batch = create(build(make_split))
    earlier = timezone.now() - timedelta(minutes=10)
    SamplingBatch.objects.filter(pk=batch.pk).update(status="running", runner="chord:elsewhere:1", started_at=earlier)
    batch.refresh_from_db()
    old_token = run_token(batch)
    # The batch failed and was started again: a new run, with shard rows of its own.
    SamplingBatch.objects.filter(pk=batch.pk).update(started_at=timezone.now())
    batch.refresh_from_db()
    shard = SamplingShard.objects.create(batch=batch, space="img", stage="assign", number=0, row_start=0, row_stop=60)
    run_folder(batch).mkdir(parents=True)

    assert stage_next(batch.pk, "search", old_token) is False
    assert sampling_batch_merge(batch_id=batch.pk, token=old_token) is not None
    batch.refresh_from_db()
    assert (batch.status, batch.error) == ("running", "")
    assert run_folder(batch).exists()
    assert SamplingShard.objects.get(pk=shard.pk).attempts == 0
    # The new run's own merge is not refused by the token (its shard is unfinished, so it
    # fails the batch naming that): the token tells runs apart, nothing else.
    sampling_batch_merge(batch_id=batch.pk, token=run_token(batch))
    batch.refresh_from_db()
    assert batch.status == "failed" and "before every shard finished" in batch.error
    assert not run_folder(batch).exists()
    assert shard_work(shard.pk) == "skipped"
