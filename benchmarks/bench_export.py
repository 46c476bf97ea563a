"""Export a CxC-sized rated dataset from PostgreSQL in every format.

Generates 267,095 pairs with 1,335,475 ratings (five each) over two splits of 5,000
images and 25,000 captions, split across STS/SIS/SITS and the five sampling methods in
the proportions of the public CxC release (the val split has exactly its counts), and
loads them with COPY into a fresh database (in a child process: neither its time nor its
memory is counted). Then runs ``manage.py export_dataset`` with
``--format cxc,jsonl,parquet`` in another child process, first for the val split alone (about
half the data) and then for both splits, measuring each child's wall time and peak
resident memory: the same peak at half and full size shows the export streams.

Prints the figures as one JSON object on the last line:
{"seconds": ..., "peak_rss_mib": ..., "ratings": ..., ...}

Environment: BENCH_IMAGES (images per split, 5,000; 100 under BENCH_SMOKE=1: every pair
count scales with it, the proportions stay), BENCH_RATERS (300, at least 10),
BENCH_DATABASE (cxc_bench_export).
"""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import queue
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import REPO_DIR, env_database, env_number, fresh_database, print_figures, setup_django, sized

DATABASE = env_database("cxc_bench_export")
CXC_IMAGES_PER_SPLIT = 5_000
IMAGES_PER_SPLIT = sized("BENCH_IMAGES", CXC_IMAGES_PER_SPLIT, 100)
CAPTIONS_PER_IMAGE = 5
RATINGS_PER_PAIR = 5
# Five distinct raters per pair by a stride under raters / 5 (see load).
RATERS = env_number("BENCH_RATERS", 300, minimum=2 * RATINGS_PER_PAIR)
# The public validation split's counts per method, and the release's total (both splits),
# scaled when BENCH_IMAGES is not CxC's 5,000 images per split.
SCALE = IMAGES_PER_SPLIT / CXC_IMAGES_PER_SPLIT
TOTAL_PAIRS = round(267_095 * SCALE)
CXC_VAL_COUNTS = {"c2c_cocaption": 25_000, "c2c_isim": 19_009, "i2i_csim": 42_767, "c2i_intrasim": 19_722}
VAL_COUNTS = {method: round(count * SCALE) for method, count in CXC_VAL_COUNTS.items()}
KIND = {"c2c_cocaption": "STS", "c2c_isim": "STS", "i2i_csim": "SIS", "c2i_intrasim": "SITS", "c2i_original": "SITS"}
# Rough means of the released scores per method, so scores and agreement look real.
TRUE_MEAN = {"c2c_cocaption": 2.99, "c2c_isim": 1.3, "i2i_csim": 1.8, "c2i_intrasim": 2.3, "c2i_original": 4.85}
SECONDS_PER_ITEM = {"STS": 37.0, "SIS": 17.0, "SITS": 17.0}
CREATED = "2026-01-01 00:00:00+00"


def split_counts() -> dict[str, dict[str, int]]:
    """Pairs per method for val (the release's counts) and test (the rest of 267,095,
    in the same proportions; every original image-caption pair is rated in both)."""
    val = {**VAL_COUNTS, "c2i_original": IMAGES_PER_SPLIT * CAPTIONS_PER_IMAGE}
    rest = TOTAL_PAIRS - sum(val.values())
    test = {"c2c_cocaption": val["c2c_cocaption"], "c2i_original": val["c2i_original"]}
    free = rest - sum(test.values())
    scaled = ["c2c_isim", "i2i_csim", "c2i_intrasim"]
    base = sum(val[m] for m in scaled)
    for method in scaled[:-1]:
        test[method] = round(free * val[method] / base)
    test[scaled[-1]] = free - sum(test[m] for m in scaled[:-1])
    return {"val": val, "test": test}


def unique_pairs(rng, n: int, draw) -> np.ndarray:
    """n distinct rows (a, b) from ``draw(size) -> (a, b)`` int64 arrays, a != b."""
    found = np.empty((0, 2), dtype=np.int64)
    while found.shape[0] < n:
        a, b = draw(2 * n)
        keep = a != b
        rows = np.concatenate([found, np.stack([a[keep], b[keep]], axis=1)])
        _, first = np.unique(rows[:, 0] * 10_000_000 + rows[:, 1], return_index=True)
        found = rows[np.sort(first)]
    return found[:n]


def generate_split(rng, counts, image_base: int, caption_base: int) -> dict[str, np.ndarray]:
    """Item ids per method for one split: (n, 2) arrays of (first, second) database ids
    in canonical order (caption < caption, image < image, caption then image)."""
    n_images = IMAGES_PER_SPLIT
    image_ids = image_base + np.arange(n_images)
    caption_of = lambda image, which: caption_base + image * CAPTIONS_PER_IMAGE + which  # noqa: E731
    out = {}
    combos = np.array([(i, j) for i in range(CAPTIONS_PER_IMAGE) for j in range(i + 1, CAPTIONS_PER_IMAGE)])
    per_image = counts["c2c_cocaption"] // n_images
    chosen = np.argsort(rng.random((n_images, len(combos))), axis=1)[:, :per_image]
    images = np.repeat(np.arange(n_images), per_image)
    picked = combos[chosen.ravel()]
    out["c2c_cocaption"] = np.stack([caption_of(images, picked[:, 0]), caption_of(images, picked[:, 1])], axis=1)

    def image_pairs(size):
        a, b = rng.integers(0, n_images, size), rng.integers(0, n_images, size)
        return np.minimum(a, b), np.maximum(a, b)

    pairs = unique_pairs(rng, counts["i2i_csim"], image_pairs)
    out["i2i_csim"] = image_ids[pairs]

    def caption_pairs(size):
        a, b = image_pairs(size)
        first = caption_of(a, rng.integers(0, CAPTIONS_PER_IMAGE, size))
        second = caption_of(b, rng.integers(0, CAPTIONS_PER_IMAGE, size))
        return np.where(a == b, 0, first), np.where(a == b, 0, second)

    out["c2c_isim"] = unique_pairs(rng, counts["c2c_isim"], caption_pairs)
    captions = np.arange(n_images * CAPTIONS_PER_IMAGE)
    out["c2i_original"] = np.stack([caption_base + captions, image_ids[captions // CAPTIONS_PER_IMAGE]], axis=1)

    def intermodal(size):
        caption = rng.integers(0, n_images * CAPTIONS_PER_IMAGE, size)
        image = rng.integers(0, n_images, size)
        own = caption // CAPTIONS_PER_IMAGE
        # The caption's own image is c2i_original; a != b then marks it to drop.
        return np.where(image == own, -1, caption_base + caption), np.where(image == own, -1, image_ids[image])

    out["c2i_intrasim"] = unique_pairs(rng, counts["c2i_intrasim"], intermodal)
    return out


def copy_rows(cursor, table: str, columns: list[str], lines) -> None:
    buffer = io.StringIO()
    buffer.writelines(lines)
    buffer.seek(0)
    quoted = ", ".join(f'"{column}"' for column in columns)
    cursor.copy_expert(f"COPY {table} ({quoted}) FROM STDIN", buffer)


def rating_times(rng, n: int, spread_days: float) -> list[str]:
    """Creation times of ``n`` ratings as COPY text: all CREATED, or (``spread_days`` > 0)
    spread at random over the ``spread_days`` days up to now, as a running campaign's."""
    if spread_days <= 0:
        return [CREATED] * n
    now = np.datetime64("now", "ms")
    offsets = (rng.random(n) * spread_days * 86_400_000).astype("timedelta64[ms]")
    return [text.replace("T", " ") + "+00" for text in np.datetime_as_string(now - offsets, unit="ms").tolist()]


def load(*, raters: int = RATERS, spread_days: float = 0.0) -> dict:
    """Generate and COPY the dataset into the benchmark database, rated by ``raters``
    raters (at least 5 * 2: five distinct ones per pair by stride); ratings are created
    at CREATED, or spread over the last ``spread_days`` days. Returns counts."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.db import connection

    from annotation.models import Caption, Dataset, Image, Pair, Rating, RatingSlot, Split
    from sampling.models import SamplingBatch

    rng = np.random.default_rng(2021)
    User = get_user_model()
    group, _ = Group.objects.get_or_create(name="rater")  # the queue migration creates the role groups
    n_raters = raters
    raters = User.objects.bulk_create([User(username=f"rater{i:03d}", password="!") for i in range(n_raters)])
    group.user_set.add(*raters)
    rater_ids = np.array([r.id for r in raters])
    rater_bias = rng.normal(0.0, 0.35, size=n_raters)
    dataset = Dataset.objects.create(name="bench", image_url_prefix="https://images.example.org/")
    counts = split_counts()
    pair_id = slot_id = 1
    totals = {"pairs": 0, "ratings": 0}
    with connection.cursor() as cursor:
        for split_no, (split_name, split_count) in enumerate(counts.items()):
            split = Split.objects.create(dataset=dataset, name=split_name)
            batch = SamplingBatch.objects.create(
                dataset=dataset,
                split=split,
                methods=split_count,
                ratings_per_pair=RATINGS_PER_PAIR,
                seed=split_no,
                status="succeeded",
                pairs_per_method=split_count,
            )
            image_base = 1 + split_no * IMAGES_PER_SPLIT
            caption_base = 1 + split_no * IMAGES_PER_SPLIT * CAPTIONS_PER_IMAGE
            cocoids = 100_000 + image_base + np.arange(IMAGES_PER_SPLIT)
            copy_rows(
                cursor,
                Image._meta.db_table,
                ["id", "dataset_id", "split_id", "key", "file_path", "cocoid", "width", "height"],
                (
                    f"{image_base + i}\t{dataset.id}\t{split.id}\tCOCO_val2014_{c:012d}.jpg\t"
                    f"val2014/COCO_val2014_{c:012d}.jpg\t{c}\t640\t480\n"
                    for i, c in enumerate(cocoids.tolist())
                ),
            )
            n_captions = IMAGES_PER_SPLIT * CAPTIONS_PER_IMAGE
            copy_rows(
                cursor,
                Caption._meta.db_table,
                ["id", "dataset_id", "image_id", "key", "sentid", "text"],
                (
                    f"{caption_base + i}\t{dataset.id}\t{image_base + i // CAPTIONS_PER_IMAGE}\t"
                    f"COCO_val2014:sentid:{500_000 + caption_base + i}\t{500_000 + caption_base + i}\t"
                    f"A generated caption number {caption_base + i}.\n"
                    for i in range(n_captions)
                ),
            )
            by_method = generate_split(rng, split_count, image_base, caption_base)
            for method, items in by_method.items():
                kind = KIND[method]
                n = items.shape[0]
                ids = pair_id + np.arange(n)
                columns = {"STS": ("caption_a_id", "caption_b_id"), "SIS": ("image_a_id", "image_b_id")}.get(
                    kind, ("caption_a_id", "image_a_id")
                )
                copy_rows(
                    cursor,
                    Pair._meta.db_table,
                    [
                        "id",
                        "dataset_id",
                        "split_id",
                        "batch_id",
                        "kind",
                        "sampling_method",
                        *columns,
                        "ratings_required",
                        "priority",
                        "ratings_done",
                        "created_at",
                    ],
                    (
                        f"{p}\t{dataset.id}\t{split.id}\t{batch.id}\t{kind}\t{method}\t{a}\t{b}\t"
                        f"{RATINGS_PER_PAIR}\t0\t{RATINGS_PER_PAIR}\t{CREATED}\n"
                        for p, a, b in zip(ids.tolist(), items[:, 0].tolist(), items[:, 1].tolist(), strict=True)
                    ),
                )
                # Five distinct raters per pair: a random start and a stride under RATERS / 5.
                start = rng.integers(0, n_raters, n)[:, None]
                stride = rng.integers(1, n_raters // RATINGS_PER_PAIR, n)[:, None]
                who = (start + stride * np.arange(RATINGS_PER_PAIR)) % n_raters
                truth = np.clip(rng.normal(TRUE_MEAN[method], 1.0, n), 0.0, 5.0)[:, None]
                scores = np.clip(truth + rater_bias[who] + rng.normal(0.0, 0.6, who.shape), 0.0, 5.0)
                times = rng.lognormal(np.log(SECONDS_PER_ITEM[kind] * 1000), 0.5, who.shape).astype(np.int64)
                slot_ids = slot_id + np.arange(n * RATINGS_PER_PAIR)
                pair_of = np.repeat(ids, RATINGS_PER_PAIR).tolist()
                index = np.tile(np.arange(RATINGS_PER_PAIR), n).tolist()
                user = rater_ids[who.ravel()].tolist()
                values, spent = scores.ravel().tolist(), times.ravel().tolist()
                created = rating_times(rng, len(values), spread_days)
                copy_rows(
                    cursor,
                    RatingSlot._meta.db_table,
                    # Complete pairs: every slot done, with the pair's copies the claim index reads.
                    [
                        "id",
                        "pair_id",
                        "dataset_id",
                        "index",
                        "state",
                        "kind",
                        "priority",
                        "pair_done",
                        "pair_complete",
                        "rater_id",
                    ],
                    (
                        f"{s}\t{p}\t{dataset.id}\t{i}\tdone\t{kind}\t0\t{RATINGS_PER_PAIR}\tt\t{u}\n"
                        for s, p, i, u in zip(slot_ids.tolist(), pair_of, index, user, strict=True)
                    ),
                )
                copy_rows(
                    cursor,
                    Rating._meta.db_table,
                    [
                        "id",
                        "pair_id",
                        "slot_id",
                        "rater_id",
                        "score",
                        "time_on_item_ms",
                        "adjustments",
                        "idempotency_key",
                        "created_at",
                    ],
                    (
                        f"{s}\t{p}\t{s}\t{u}\t{v!r}\t{t}\t3\tbench-{s}\t{c}\n"
                        for s, p, u, v, t, c in zip(
                            slot_ids.tolist(), pair_of, user, values, spent, created, strict=True
                        )
                    ),
                )
                pair_id += n
                slot_id += n * RATINGS_PER_PAIR
                totals["pairs"] += n
                totals["ratings"] += n * RATINGS_PER_PAIR
        for model in (Image, Caption, Pair, RatingSlot, Rating):
            table = model._meta.db_table
            cursor.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
        cursor.execute("VACUUM ANALYZE")
    return totals


def run_export(database_url: str, out: Path, *splits: str) -> dict:
    """Run the export command in a child process; its wall time and peak memory."""
    command = [sys.executable, str(REPO_DIR / "manage.py"), "export_dataset", "--dataset", "bench"]
    command += ["--out", str(out), "--format", "cxc,jsonl,parquet"]
    for split in splits:
        command += ["--split", split]
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "RUN_MODE": "services",
        "SECRET_KEY": os.environ.get("SECRET_KEY") or "benchmark-only",
        "CELERY_TASK_ALWAYS_EAGER": "true",
    }
    start = time.perf_counter()
    child = subprocess.Popen(
        command, cwd=REPO_DIR, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    output = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"export failed ({child.returncode}): {output}")
    files = sorted(out.iterdir())
    manifest = json.loads((out / "manifest.json").read_text())
    return {
        "pairs": manifest["totals"]["pairs"],
        "ratings": manifest["totals"]["ratings"],
        "seconds": round(seconds, 2),
        "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
        "files": len(files),
        "files_mib": round(sum(f.stat().st_size for f in files) / 2**20, 1),
    }


def _load_in_child(database_url: str, results, options: dict) -> None:
    setup_django(database_url)
    start = time.perf_counter()
    totals = load(**options)
    results.put({**totals, "load_seconds": round(time.perf_counter() - start, 1)})


def load_in_child(database_url: str, **options) -> dict:
    """``load(**options)`` in a spawned process of its own, so the caller stays small and
    a child it starts later (whose peak memory is measured) inherits nothing big. Returns
    the counts and ``load_seconds``."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    loader = context.Process(target=_load_in_child, args=(database_url, results, options))
    loader.start()
    while True:
        try:
            totals = results.get(timeout=5)
            break
        except queue.Empty:
            if not loader.is_alive():
                raise SystemExit(f"data generation failed (exit code {loader.exitcode})") from None
    loader.join()
    return totals


def main() -> None:
    database_url = fresh_database(DATABASE)
    # The export child (its peak memory is measured from its first page) inherits nothing big.
    totals = load_in_child(database_url)
    load_seconds = totals["load_seconds"]
    print(f"loaded {totals['pairs']} pairs and {totals['ratings']} ratings with COPY in {load_seconds} s")
    with tempfile.TemporaryDirectory(prefix="bench-export-") as folder:
        half = run_export(database_url, Path(folder) / "val", "val")
        print(f"val split only: {half}")
        full = run_export(database_url, Path(folder) / "all")
        print(f"both splits: {full}")
    if (full["pairs"], full["ratings"]) != (totals["pairs"], totals["ratings"]):
        raise SystemExit(f"the export wrote {full['pairs']} pairs, {full['ratings']} ratings but {totals} were loaded")
    print_figures(
        {
            "seconds": full["seconds"],
            "peak_rss_mib": full["peak_rss_mib"],
            "ratings": full["ratings"],
            "pairs": full["pairs"],
            "formats": "cxc,jsonl,parquet",
            "files_mib": full["files_mib"],
            "half_ratings": half["ratings"],
            "half_seconds": half["seconds"],
            "half_peak_rss_mib": half["peak_rss_mib"],
            "load_seconds": load_seconds,
        }
    )


if __name__ == "__main__":
    main()
