"""A sampling batch's search as a Celery chord, on 1 and on 2 local workers.

A fresh database (BENCH_DATABASE, default cxc_bench_distributed) gets a split of
BENCH_ITEMS images (2,000,000; 30,000 under BENCH_SMOKE=1) with one caption each, loaded
with COPY, and one image space of generated clustered BENCH_DIM-d vectors (256; 64 under
smoke). The IVF cells are trained once beforehand (``train_s``; batches then find them
beside the space, as every later batch of a space does). Then the same batch (c2c_isim,
k=5, 10,000 pairs) runs on 1 and on 2 `celery worker` processes, each with one pool
process pinned to a core of its own (taskset) and single-threaded BLAS. Seconds are the
batch's wall time from start to succeeded, as the admin sees it; ``chord_s`` the part
from the first shard's start to the last shard's end. Recall@5 of the 2-worker batch's
neighbours (its run folder is kept) against exact search on BENCH_QUERIES rows (2,000);
``same_neighbours``: the 1- and 2-worker batches found the same neighbours.

Then the same batch with IVF-PQ on 2 workers (``ivfpq``), once per refine factor in
BENCH_IVFPQ_REFINE ("8,0": 8 x (k + 1) candidates rescored on their vectors, the
default, and codes alone), after training its codebook once (``ivfpq_train_s``): seconds, recall@5 and
memory. Memory per pool process is the largest ``VmHWM`` (peak RSS, mapped vector pages
included; the batch's own task and merge run in a pool process too) and ``RssAnon``
(anonymous memory) read once a second (each shard restarts the peak from the memory the
process then holds, so a peak in the second before a shard starts can be missed); per
stage ``peak_rss_mib_max`` is the largest peak of one shard, as the shard recorded it.

Last line: {"items", "dim", "workers_1_s", "workers_2_s", "speedup", "recall_at_5",
"peak_rss_mib_per_worker", ..., "ivfpq": {...}}. Needs PostgreSQL and Redis (make
bench-sampling-distributed).
"""

import io
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO_DIR, env_database, fresh_database, print_figures, setup_django, sized
from bench_sampling_data import clustered_vectors

from sampling.search.index import recall_at_k

N_ITEMS = sized("BENCH_ITEMS", 2_000_000, 30_000)
DIM = sized("BENCH_DIM", 256, 64)
QUERIES = min(N_ITEMS, sized("BENCH_QUERIES", 2_000, 200))
BUDGET = min(10_000, N_ITEMS)
DATABASE = env_database("cxc_bench_distributed")
WORK_DIR = REPO_DIR / "var" / "bench-distributed"
# Shards of 262,144 rows (the default) at full size; smaller under smoke so it still cuts.
INDEX = {"kind": "ivf", "chord_min_rows": min(200_000, N_ITEMS)}
if N_ITEMS < 200_000:
    INDEX["shard_rows"] = max(1_024, N_ITEMS // 8)
REFINES = [int(part) for part in os.environ.get("BENCH_IVFPQ_REFINE", "8,0").split(",") if part.strip()]
STARTED = time.perf_counter()


def log(message: str) -> None:
    print(f"{time.perf_counter() - STARTED:7.1f} s  {message}", file=sys.stderr, flush=True)


def main() -> None:
    redis_url = os.environ.get("TEST_REDIS_URL") or os.environ.get("REDIS_URL")
    if not redis_url:
        raise SystemExit("this benchmark needs Redis: set REDIS_URL (make bench-sampling-distributed does)")
    shutil.rmtree(WORK_DIR, ignore_errors=True)
    env = {
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "CELERY_BROKER_URL": redis_url,
        "REDIS_URL": redis_url,
        "DATA_DIR": str(WORK_DIR / "data"),
        "SAMPLING_INDEX": json.dumps(INDEX),
        "SAMPLING_KEEP_RUN_FOLDERS": "true",
    }
    database_url = fresh_database(DATABASE)
    setup_django(database_url, **env)
    space, vectors = load_split()
    train_s = train_cells(space, vectors)
    runs = {workers: run_batch(workers, database_url, env) for workers in (1, 2)}
    queries, truth = exact_truth(vectors)
    found = {workers: run_neighbours(run) for workers, run in runs.items()}
    recall = recall_at_k(found[2][queries], truth)
    same = bool(np.array_equal(found[1], found[2]))
    log(f"IVF recall@5 {recall:.4f} on {QUERIES} queries")
    ivfpq = {"train_s": train_codebook(space, vectors)}
    for refine in REFINES:
        index = {**INDEX, "kind": "ivfpq", "ivfpq_refine": refine}
        run = run_batch(2, database_url, env | {"SAMPLING_INDEX": json.dumps(index)})
        if run["ivfpq_codebooks"]["img"]["trained"]:
            raise SystemExit("the IVF-PQ batch trained its codebook: its seconds would include the training")
        run["recall_at_5"] = round(recall_at_k(run_neighbours(run)[queries], truth), 4)
        log(f"IVF-PQ refine {refine}: {run['seconds']} s, recall@5 {run['recall_at_5']}")
        ivfpq[f"refine_{refine}"] = {key: run[key] for key in ("seconds", "chord_s", "recall_at_5", "per_shard_s")}
        ivfpq[f"refine_{refine}"] |= {"peak_rss_mib": run["peak_rss_mib"], "peak_anon_mib": run["peak_anon_mib"]}
    print_figures(
        {
            "items": N_ITEMS,
            "dim": DIM,
            "workers_1_s": runs[1]["seconds"],
            "workers_2_s": runs[2]["seconds"],
            "speedup": round(runs[1]["seconds"] / runs[2]["seconds"], 3),
            "recall_at_5": round(recall, 4),
            "peak_rss_mib_per_worker": max(runs[2]["peak_rss_mib"]),
            "chord_1_s": runs[1]["chord_s"],
            "chord_2_s": runs[2]["chord_s"],
            "chord_speedup": round(runs[1]["chord_s"] / runs[2]["chord_s"], 3),
            "train_s": train_s,
            "same_neighbours": same,
            "shards": runs[2]["shards"],
            "per_shard_s": runs[2]["per_shard_s"],
            "peak_rss_mib_by_run": {str(n): run["peak_rss_mib"] for n, run in runs.items()},
            "peak_anon_mib_by_run": {str(n): run["peak_anon_mib"] for n, run in runs.items()},
            "index_config": runs[2]["index_config"],
            "ivfpq": ivfpq,
        }
    )


def load_split():
    """Dataset, split, N_ITEMS images with a caption each (COPY) and an image space."""
    from django.db import connection

    from annotation.models import Dataset, EmbeddingSpace, Split
    from sampling.embeddings import write_normalized

    rng = np.random.default_rng(0)
    started = time.perf_counter()
    vectors = clustered_vectors(N_ITEMS, DIM, max(8, N_ITEMS // 400), rng)
    folder = WORK_DIR / "data" / "embeddings" / "bench"
    keys = [f"img{i}" for i in range(N_ITEMS)]
    write_normalized(vectors, keys, folder / "img.npy")
    (folder / "img.txt").write_text("\n".join(keys) + "\n")
    log(f"generated {N_ITEMS} x {DIM} vectors in {time.perf_counter() - started:.1f} s")
    dataset = Dataset.objects.create(name="bench", image_url_prefix="https://images.invalid/")
    split = Split.objects.create(dataset=dataset, name="train")
    with connection.cursor() as cursor:
        copy(
            cursor,
            "annotation_image",
            ("dataset_id", "split_id", "key", "file_path"),
            (f"{dataset.pk}\t{split.pk}\timg{i}\timg{i}.jpg\n" for i in range(N_ITEMS)),
        )
        cursor.execute("SELECT min(id) FROM annotation_image WHERE dataset_id = %s", [dataset.pk])
        first = cursor.fetchone()[0]
        copy(
            cursor,
            "annotation_caption",
            ("dataset_id", "image_id", "key", "sentid", "text"),
            (f"{dataset.pk}\t{first + i}\tcap{i}\t{i}\ta caption\n" for i in range(N_ITEMS)),
        )
        cursor.execute("ANALYZE")
    space = EmbeddingSpace.objects.create(
        dataset=dataset,
        name="img",
        modality="image",
        dimension=DIM,
        count=N_ITEMS,
        vectors_path=str(folder / "img.npy"),
        ids_path=str(folder / "img.txt"),
    )
    log(f"loaded the split in {time.perf_counter() - started:.1f} s")
    return space, np.load(folder / "img.npy", mmap_mode="r")


def copy(cursor, table: str, columns: tuple, lines) -> None:
    buffer = io.StringIO("".join(lines))
    cursor.copy_expert(f"COPY {table} ({', '.join(columns)}) FROM STDIN", buffer)


def train_cells(space, vectors) -> float:
    from sampling.runs.chord import index_config, stored_cells

    started = time.perf_counter()
    _, made = stored_cells(space, np.asarray(vectors), index_config())
    log(f"trained the IVF cells ({made['file']}) in {time.perf_counter() - started:.1f} s")
    return round(time.perf_counter() - started, 1)


def train_codebook(space, vectors) -> float:
    from sampling.runs.chord import index_config, stored_cells, stored_codebook

    started = time.perf_counter()
    config = index_config()
    cells, _ = stored_cells(space, np.asarray(vectors), config)
    _, made = stored_codebook(space, np.asarray(vectors), cells, config)
    log(f"trained the IVF-PQ codebook ({made['file']}) in {time.perf_counter() - started:.1f} s")
    return round(time.perf_counter() - started, 1)


def run_batch(workers: int, database_url: str, env: dict) -> dict:
    from django.db import transaction

    from sampling.models import SamplingBatch, SamplingShard
    from sampling.runs.chord import process_memory_mib
    from sampling.services import sampling_batch_create, sampling_batch_start

    processes = start_workers(workers, database_url, env)
    try:
        with transaction.atomic():
            batch = sampling_batch_create(
                dataset_name="bench",
                split_name="train",
                methods={"c2c_isim": BUDGET},
                k=5,
                seed=workers,
                ratings_per_pair=5,
            )
            sampling_batch_start(batch=batch)
        started = time.perf_counter()
        peaks: dict[int, float] = {}
        anon: dict[int, float] = {}
        pools = pool_pids(processes)
        # Looked at once a second: the benchmark takes next to no CPU from the workers.
        while True:
            batch.refresh_from_db()
            for pid in pools:
                peaks[pid] = max(peaks.get(pid, 0), process_memory_mib("VmHWM", pid) or 0)
                anon[pid] = max(anon.get(pid, 0), process_memory_mib("RssAnon", pid) or 0)
            if batch.status in ("succeeded", "failed"):
                break
            time.sleep(1.0)
        seconds = time.perf_counter() - started
        if batch.status != "succeeded":
            raise SystemExit(f"the {workers}-worker batch failed: {batch.error}")
        shards = SamplingShard.objects.filter(batch=batch)
        first = min(shard.started_at for shard in shards)
        last = max(shard.finished_at for shard in shards)
        per_shard = {}
        for stage in ("assign", "search"):
            times = sorted(shard.seconds for shard in shards if shard.stage == stage)
            per_shard[stage] = {"median": round(times[len(times) // 2], 2), "max": round(times[-1], 2)}
            # Each shard's own peak (the pool process's peak is reset as a shard starts).
            peaks_of_stage = [shard.peak_rss_mib for shard in shards if shard.stage == stage]
            known = [peak for peak in peaks_of_stage if peak is not None]
            per_shard[stage]["peak_rss_mib_max"] = max(known) if known else None
        log(f"{workers} worker(s): {seconds:.1f} s, chord {(last - first).total_seconds():.1f} s")
        return {
            "batch": batch.pk,
            "seconds": round(seconds, 1),
            "chord_s": round((last - first).total_seconds(), 1),
            "peak_rss_mib": sorted(round(value) for value in peaks.values()),
            "peak_anon_mib": sorted(round(value) for value in anon.values()),
            "shards": {stage: shards.filter(stage=stage).count() for stage in ("assign", "search")},
            "per_shard_s": per_shard,
            "index_config": SamplingBatch.objects.get(pk=batch.pk).stats["index_config"],
            "ivfpq_codebooks": SamplingBatch.objects.get(pk=batch.pk).stats.get("ivfpq_codebooks", {}),
        }
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=120)


def start_workers(n: int, database_url: str, env: dict) -> list[subprocess.Popen]:
    from config.celery import app

    app.conf.broker_url = env["CELERY_BROKER_URL"]
    app.conf.task_always_eager = False
    processes = []
    for core in range(n):
        name = f"bench-{uuid.uuid4().hex[:6]}@localhost"
        worker_env = {**os.environ, **env, "DATABASE_URL": database_url, "RUN_MODE": "services"}
        worker_env |= {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        log_file = (WORK_DIR / f"worker-{n}-{core}.log").open("w")
        command = ["taskset", "-c", str(core % os.cpu_count()), sys.executable, "-m", "celery", "-A", "config"]
        command += ["worker", "--pool=prefork", "--concurrency=1", "-n", name, "--without-gossip"]
        command += ["--without-mingle", "--without-heartbeat", "--loglevel=WARNING"]
        if core == 0:
            command.append("--purge")
        processes.append(subprocess.Popen(command, cwd=REPO_DIR, env=worker_env, stdout=log_file, stderr=log_file))
        deadline = time.monotonic() + 120
        while not app.control.ping(destination=[name], timeout=1.0):
            if time.monotonic() > deadline or processes[-1].poll() is not None:
                raise SystemExit(f"worker {name} did not come up (see {log_file.name})")
    return processes


def pool_pids(processes) -> list[int]:
    pids = []
    for process in processes:
        result = subprocess.run(["pgrep", "-P", str(process.pid)], capture_output=True, text=True)
        pids += [int(line) for line in result.stdout.split()]
    return pids


def exact_truth(vectors) -> tuple[np.ndarray, np.ndarray]:
    """QUERIES seeded rows and their exact 5 nearest other rows: (queries, truth int64 (q, 5))."""
    from sampling.search.index import exact_neighbours

    queries = np.sort(np.random.default_rng(1).choice(N_ITEMS, size=QUERIES, replace=False))
    return queries, exact_neighbours(np.asarray(vectors), queries, 5)


def run_neighbours(run: dict) -> np.ndarray:
    """The image space's neighbours a batch's chord found (its run folder is kept): int64 (n, 5)."""
    from sampling.models import SamplingBatch
    from sampling.runs.chord import space_folder
    from sampling.search.shards import folder_neighbours

    return folder_neighbours(space_folder(SamplingBatch.objects.get(pk=run["batch"]), "img"))


if __name__ == "__main__":
    main()
